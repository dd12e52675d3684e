//! Command and process substitution detection (CONTRACT.md §2.11 `detectCommandSubstitution`,
//! docs/upstream-rules.md).
//!
//! One left-to-right pass over the bytes of the command. The first live construct ends the scan,
//! so no substitution body is ever entered and nothing is nested except the `${…}` depth that
//! keeps a `#` inside a parameter expansion from starting a comment. Every syntax character is
//! ASCII, so scanning bytes is safe for any UTF-8 input. Every lookahead is bounded by the next
//! character that cannot continue the construct it reads, and the one unbounded lookahead (an
//! array subscript) is cached, so any input is scanned in linear time.
//!
//! Rules, in bash's order:
//! * A backslash-newline is a line continuation: it is deleted before anything else, wherever
//!   bash deletes it. That is unquoted text, double quotes and the bodies of heredocs whose
//!   delimiter is unquoted. Single quotes, `$'…'`, comments and literal heredoc bodies keep it.
//! * A `#` that starts a word begins a comment that runs to the end of the line. It starts a word
//!   at the start of the command, or after an unescaped space, tab or newline, or after one of
//!   `;`, `&`, `|`, `(`, `)`, `<` and `>`. Inside `${…}` it never does.
//! * Live: `$(` and a backtick, unquoted or inside double quotes; `<(` and `>(` unquoted;
//!   `${name@P}` (prompt expansion runs the command substitutions in the value), unquoted or
//!   inside double quotes; and the same `$(`, backtick and `${name@P}` in the body of a heredoc
//!   whose delimiter is unquoted. `$((…))` counts (conservative).
//! * Nothing is live inside single quotes or `$'…'`, in a comment, in the body of a heredoc whose
//!   delimiter is quoted (`<<'EOF'`, `<<"EOF"`, `<<\EOF`, `<<E"O"F`), or after a backslash that
//!   escapes it.

/// `detectCommandSubstitution(command)` (CONTRACT.md §2.11): whether bash would run a command
/// or process substitution when it runs `command`. Same rules on every platform.
#[must_use]
pub fn detect_command_substitution(command: &str) -> bool {
  Detector::new(command.as_bytes()).run()
}

/// The index of the first byte at or after `i` that is not part of a backslash-newline.
fn skip_continuations(src: &[u8], mut i: usize) -> usize {
  while src.get(i) == Some(&b'\\') && src.get(i + 1) == Some(&b'\n') {
    i += 2;
  }
  i
}

/// Characters after which a `#` starts a word (besides the start of the command).
fn ends_word(byte: u8) -> bool {
  matches!(
    byte,
    b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
  )
}

/// Characters that end an unquoted heredoc delimiter word.
fn ends_delimiter(byte: u8) -> bool {
  matches!(
    byte,
    b' ' | b'\t' | b'\n' | b'\r' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
  )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
  Unquoted,
  Single,
  /// Inside `$'…'`: nothing is live, `\` escapes the next byte.
  AnsiC,
  Double,
  /// From a word-starting `#` to the end of the line.
  Comment,
}

/// A heredoc whose operator has been read and whose body starts after the current line.
struct Heredoc {
  delimiter: Vec<u8>,
  /// Any part of the delimiter was quoted or escaped: the body is literal.
  literal: bool,
  /// `<<-`: leading tabs are removed from each body line and from the delimiter line.
  strip_tabs: bool,
}

/// Where the closing `]` of an array subscript is, remembered for the last region scanned: a
/// scan that starts inside that region ends at the same place, so hostile input such as
/// `${a[${a[${a[…` is still read once.
#[derive(Default)]
struct SubscriptCache {
  from: usize,
  to: usize,
  close: Option<usize>,
  valid: bool,
}

impl SubscriptCache {
  /// The index of the `]` that closes a subscript whose text starts at `start`, or `None` when
  /// a newline or the end comes first. Continuations are skipped when `joins` is set.
  fn close(&mut self, src: &[u8], start: usize, joins: bool) -> Option<usize> {
    if self.valid && (self.from..=self.to).contains(&start) {
      return self.close;
    }
    let mut i = start;
    let close = loop {
      if joins {
        i = skip_continuations(src, i);
      }
      match src.get(i) {
        Some(b']') => break Some(i),
        Some(b'\n') | None => break None,
        Some(_) => i += 1,
      }
    };
    *self = SubscriptCache {
      from: start,
      to: i,
      close,
      valid: true,
    };
    close
  }
}

/// Whether the `${` whose `{` is at `brace` is `${name@P}` with an optional `!` and subscript:
/// a name, a positional number or one of `-?@$*`, then `@P}`. `joins`: skip continuations
/// between its characters (everywhere except in a heredoc line already joined).
fn is_prompt_expansion(src: &[u8], brace: usize, joins: bool, cache: &mut SubscriptCache) -> bool {
  let next = |i: usize| if joins { skip_continuations(src, i) } else { i };
  let at = |i: usize| src.get(i).copied();
  let mut i = next(brace + 1);
  if at(i) == Some(b'!') {
    i = next(i + 1);
  }
  match at(i) {
    Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
      while at(i).is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
        i = next(i + 1);
      }
    }
    Some(b) if b.is_ascii_digit() => {
      while at(i).is_some_and(|b| b.is_ascii_digit()) {
        i = next(i + 1);
      }
    }
    Some(b'-' | b'?' | b'@' | b'$' | b'*') => i = next(i + 1),
    _ => return false,
  }
  if at(i) == Some(b'[') {
    match cache.close(src, i + 1, joins) {
      Some(close) => i = next(close + 1),
      None => return false,
    }
  }
  if at(i) != Some(b'@') {
    return false;
  }
  i = next(i + 1);
  if at(i) != Some(b'P') {
    return false;
  }
  i = next(i + 1);
  at(i) == Some(b'}')
}

/// Whether one joined line of an unquoted heredoc body runs a substitution: `$(`, a backtick or
/// `${name@P}` not escaped by a backslash.
fn body_line_has_substitution(line: &[u8]) -> bool {
  let mut cache = SubscriptCache::default();
  let mut i = 0;
  while let Some(&byte) = line.get(i) {
    match byte {
      b'\\' => i += 2,
      b'`' => return true,
      b'$' if line.get(i + 1) == Some(&b'(') => return true,
      b'$'
        if line.get(i + 1) == Some(&b'{')
          && is_prompt_expansion(line, i + 1, false, &mut cache) =>
      {
        return true
      }
      _ => i += 1,
    }
  }
  false
}

struct Detector<'a> {
  src: &'a [u8],
  pos: usize,
  mode: Mode,
  /// A `#` at `pos` would start a word (unquoted text only).
  word_start: bool,
  /// Open `${` in unquoted text.
  brace_depth: usize,
  /// Heredocs whose bodies start after the current line, in order.
  pending: Vec<Heredoc>,
  subscripts: SubscriptCache,
  /// One joined heredoc body line, reused.
  line: Vec<u8>,
}

impl<'a> Detector<'a> {
  fn new(src: &'a [u8]) -> Self {
    Detector {
      src,
      pos: 0,
      mode: Mode::Unquoted,
      word_start: true,
      brace_depth: 0,
      pending: Vec::new(),
      subscripts: SubscriptCache::default(),
      line: Vec::new(),
    }
  }

  fn at(&self, i: usize) -> Option<u8> {
    self.src.get(i).copied()
  }

  /// The index of the next byte after `i` once continuations are deleted.
  fn after(&self, i: usize) -> usize {
    skip_continuations(self.src, i + 1)
  }

  fn run(mut self) -> bool {
    loop {
      if matches!(self.mode, Mode::Unquoted | Mode::Double) {
        self.pos = skip_continuations(self.src, self.pos);
      }
      let Some(byte) = self.at(self.pos) else {
        return false;
      };
      let live = match self.mode {
        Mode::Unquoted => self.unquoted(byte),
        Mode::Double => self.double(byte),
        Mode::Single => {
          if byte == b'\'' {
            self.close_quote();
          }
          self.pos += 1;
          false
        }
        Mode::AnsiC => {
          match byte {
            b'\\' => self.pos += 1,
            b'\'' => self.close_quote(),
            _ => {}
          }
          self.pos += 1;
          false
        }
        Mode::Comment => {
          if byte == b'\n' {
            self.mode = Mode::Unquoted;
            self.newline()
          } else {
            self.pos += 1;
            false
          }
        }
      };
      if live {
        return true;
      }
    }
  }

  fn close_quote(&mut self) {
    self.mode = Mode::Unquoted;
    self.word_start = false;
  }

  /// One step in unquoted text at `byte` (not the start of a continuation). True when a
  /// substitution starts here.
  fn unquoted(&mut self, byte: u8) -> bool {
    let next = self.after(self.pos);
    match byte {
      b'#' if self.word_start && self.brace_depth == 0 => {
        self.mode = Mode::Comment;
        self.pos += 1;
        return false;
      }
      b'\n' => return self.newline(),
      b'`' => return true,
      b'$' | b'>' if self.at(next) == Some(b'(') => return true,
      b'<' if self.at(next) == Some(b'(') => return true,
      b'<' if self.at(next) == Some(b'<') => {
        self.heredoc_operator(next);
        return false;
      }
      b'$' => match self.at(next) {
        Some(b'\'') => {
          self.mode = Mode::AnsiC;
          self.pos = next + 1;
          return false;
        }
        Some(b'"') => {
          self.mode = Mode::Double;
          self.pos = next + 1;
          return false;
        }
        Some(b'{') => {
          if is_prompt_expansion(self.src, next, true, &mut self.subscripts) {
            return true;
          }
          self.brace_depth += 1;
          self.word_start = false;
          self.pos = next + 1;
          return false;
        }
        _ => {}
      },
      b'}' if self.brace_depth > 0 => self.brace_depth -= 1,
      b'\\' => {
        // Not a continuation (those were skipped): the next byte is escaped.
        self.word_start = false;
        self.pos = (self.pos + 2).min(self.src.len());
        return false;
      }
      b'\'' => self.mode = Mode::Single,
      b'"' => self.mode = Mode::Double,
      _ => {}
    }
    self.word_start = ends_word(byte);
    self.pos += 1;
    false
  }

  /// One step inside double quotes.
  fn double(&mut self, byte: u8) -> bool {
    let next = self.after(self.pos);
    match byte {
      b'`' => return true,
      b'$' if self.at(next) == Some(b'(') => return true,
      b'$'
        if self.at(next) == Some(b'{')
          && is_prompt_expansion(self.src, next, true, &mut self.subscripts) =>
      {
        return true
      }
      b'\\' => self.pos += 1,
      b'"' => self.close_quote(),
      _ => {}
    }
    self.pos = (self.pos + 1).min(self.src.len());
    false
  }

  /// At `<<` (the second `<` at `second`): a here-string `<<<` is passed over; otherwise the
  /// delimiter word is read and the heredoc waits for the end of the line. Without a delimiter
  /// word, the second `<` is read again as an operator of its own (so `<<(…)` counts).
  fn heredoc_operator(&mut self, second: usize) {
    self.word_start = true;
    let third = self.after(second);
    if self.at(third) == Some(b'<') {
      self.pos = third;
      return;
    }
    match self.read_delimiter(third) {
      Some((heredoc, end)) => {
        self.pending.push(heredoc);
        self.word_start = false;
        self.pos = end;
      }
      None => self.pos = second,
    }
  }

  /// Read a heredoc delimiter word starting at `i` (after `<<`): an optional `-`, blanks, then
  /// the word with its quotes removed. Returns the heredoc and the index after the word.
  fn read_delimiter(&self, mut i: usize) -> Option<(Heredoc, usize)> {
    let src = self.src;
    let mut strip_tabs = false;
    if self.at(i) == Some(b'-') {
      strip_tabs = true;
      i = self.after(i);
    }
    while matches!(self.at(i), Some(b' ' | b'\t')) {
      i = self.after(i);
    }
    let mut delimiter = Vec::new();
    let mut literal = false;
    loop {
      i = skip_continuations(src, i);
      let Some(byte) = self.at(i) else { break };
      match byte {
        _ if ends_delimiter(byte) => break,
        b'\'' => {
          literal = true;
          i = self.read_quoted(i + 1, b'\'', false, &mut delimiter);
        }
        b'"' => {
          literal = true;
          i = self.read_quoted(i + 1, b'"', true, &mut delimiter);
        }
        b'$' if matches!(self.at(self.after(i)), Some(b'\'' | b'"')) => {
          literal = true;
          let quote_at = self.after(i);
          let quote = src[quote_at];
          i = self.read_quoted(quote_at + 1, quote, true, &mut delimiter);
        }
        b'\\' => {
          literal = true;
          if let Some(escaped) = self.at(i + 1) {
            delimiter.push(escaped);
          }
          i += 2;
        }
        _ => {
          delimiter.push(byte);
          i += 1;
        }
      }
    }
    if delimiter.is_empty() && !literal {
      return None;
    }
    Some((
      Heredoc {
        delimiter,
        literal,
        strip_tabs,
      },
      i.min(src.len()),
    ))
  }

  /// Append a quoted part of a delimiter word, from `i` to its closing `quote`, to `out`.
  /// `escapes`: a backslash escapes the next byte (double quotes and `$'…'`), and
  /// continuations are deleted (double quotes). Returns the index after the closing quote.
  fn read_quoted(&self, mut i: usize, quote: u8, escapes: bool, out: &mut Vec<u8>) -> usize {
    let src = self.src;
    loop {
      if escapes && quote == b'"' {
        i = skip_continuations(src, i);
      }
      match self.at(i) {
        None => return i,
        Some(b) if b == quote => return i + 1,
        Some(b'\\') if escapes && i + 1 < src.len() => {
          out.push(src[i + 1]);
          i += 2;
        }
        Some(b) => {
          out.push(b);
          i += 1;
        }
      }
    }
  }

  /// At a newline that ends a command line (unquoted, or the end of a comment): read the bodies
  /// of the pending heredocs, in order. True when an unquoted body runs a substitution.
  fn newline(&mut self) -> bool {
    self.pos += 1;
    self.word_start = true;
    let pending = std::mem::take(&mut self.pending);
    pending.iter().any(|heredoc| self.body(heredoc))
  }

  /// Read one heredoc body from `pos` to its delimiter line (or the end of the command).
  fn body(&mut self, heredoc: &Heredoc) -> bool {
    let src = self.src;
    let mut line = std::mem::take(&mut self.line);
    let mut found = false;
    while self.pos < src.len() && !found {
      line.clear();
      let mut i = self.pos;
      while let Some(&byte) = src.get(i) {
        match byte {
          b'\n' => break,
          b'\\' if !heredoc.literal && i + 1 < src.len() => {
            if src[i + 1] != b'\n' {
              line.extend_from_slice(&src[i..i + 2]);
            }
            i += 2;
          }
          _ => {
            line.push(byte);
            i += 1;
          }
        }
      }
      self.pos = (i + 1).min(src.len());
      let mut text = line.as_slice();
      if heredoc.strip_tabs {
        let tabs = text.iter().take_while(|&&b| b == b'\t').count();
        text = &text[tabs..];
      }
      let delimiter = heredoc.delimiter.as_slice();
      if text == delimiter || text.strip_suffix(b"\r") == Some(delimiter) {
        break;
      }
      found = !heredoc.literal && body_line_has_substitution(text);
    }
    self.line = line;
    found
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::guards::test_support::{expect_eq, input_str, run_table};

  #[test]
  fn detect_command_substitution_vectors() {
    run_table("detectCommandSubstitution", |case| {
      let want = case["expected"].as_bool().ok_or("expected is not a bool")?;
      expect_eq(detect_command_substitution(input_str(case)?), want)
    });
  }

  #[test]
  fn follows_bash_quoting() {
    let cases = [
      ("tail -f $(ls)", true),
      ("tail -f \"$(ls)\"", true),
      ("tail -f '$(ls)'", false),
      ("tail -f \\$(ls)", false),
      ("tail -f \"\\$(ls)\"", false),
      ("echo `id`", true),
      ("echo \"`id`\"", true),
      ("echo '`id`'", false),
      ("echo \\`id\\`", false),
      ("diff <(a) b", true),
      ("tee >(a)", true),
      ("echo \"<(a) >(b)\"", false),
      ("echo $((1 + 2))", true),
      ("echo $ (a) < (b)", false),
      ("FOO=\"$(id)\" tail -f log", true),
      ("FOO=`id` tail -f log", true),
      ("echo 'a'$(b)", true),
      ("echo 'a\\'$(b)", true),
      ("echo \"a\\\"$(b)\"", true),
      ("", false),
      ("日本$(x)", true),
      ("echo $'\\'' $(id)", true),
      ("echo $'$(id)'", false),
      ("echo \"$'\" $(id)", true),
    ];
    for (input, want) in cases {
      assert_eq!(detect_command_substitution(input), want, "{input:?}");
    }
  }

  /// Each case is (input, expected) for the rules taken from upstream's newest guard.
  fn check(cases: &[(&str, bool)]) {
    let failures: Vec<String> = cases
      .iter()
      .filter(|(input, want)| detect_command_substitution(input) != *want)
      .map(|(input, want)| format!("{input:?}: want {want}"))
      .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
  }

  #[test]
  fn line_continuations_are_removed_first() {
    check(&[
      ("echo \"$\\\n(touch /tmp/pwned)\"", true),
      ("echo $\\\n(touch /tmp/pwned)", true),
      ("echo \"$\\\n\\\n(touch /tmp/pwned)\"", true),
      ("diff <\\\n(ls)", true),
      ("diff >\\\n(ls)", true),
      ("echo $\\\n'x' $(id)", true),
      ("echo \"\\$\\\n(touch /tmp/pwned)\"", false),
      ("echo \"$\\\n\\(ls)\"", false),
      ("echo \"$\"\\\n(ls)", false),
      ("echo '$\\\n(touch /tmp/pwned)'", false),
      ("echo \"<\\\n(ls)\"", false),
      ("grep pattern\\\nfile", false),
      ("echo a \\\n&& echo b", false),
      ("echo $\\\nHOME", false),
      ("echo \\\\\n(ls)", false),
    ]);
  }

  #[test]
  fn comments_hide_nothing_bash_would_run() {
    check(&[
      ("echo hello # $(rm -rf /)", false),
      ("# Note: $(rm -rf /) is dangerous\necho hello", false),
      ("echo foo#$(rm -rf /)", true),
      ("# Fake heredoc <<'EOF'\n$(rm -rf /)\nEOF", true),
      ("echo \\\n# $(x)", false),
      ("echo $\\\n#foo$(x)", true),
      ("echo a;#$(x)", false),
      ("(#$(x)\n)", false),
      ("echo a >#$(x)", false),
      ("echo $#$(x)", true),
      ("echo a\\\\#$(x)", true),
      ("echo \\ # $(x)", true),
      ("echo a\r# $(x)", true),
      ("echo ${x:-a #$(x)}", true),
      ("echo ${x:-a\n#$(x)}", true),
      ("echo a # x \\\n$(x)", true),
      ("echo \"# $(x)\"", true),
      ("echo '#' $(x)", true),
      ("echo a # `x`\necho `y`", true),
      ("echo a # `x`\necho y", false),
    ]);
  }

  #[test]
  fn heredoc_bodies_follow_their_delimiter() {
    check(&[
      (
        "cat <<'EOF' > f.md\n```\n$(rm -rf /)\n`not executed`\n```\nEOF",
        false,
      ),
      ("cat <<EOF > f.md\n'$(rm -rf /)'\nEOF", true),
      ("cat <<EOF > f.md\n`rm -rf /`\nEOF", true),
      ("cat <<EOF > f.md\n\\$(rm -rf /)\nEOF", false),
      ("cat <<-'EOF' > f.md\n\t$(rm -rf /)\n\tEOF", false),
      ("cat <<EOF > f.md\n$\\\n(rm -rf /)\nEOF", true),
      ("cat <<EOF > f.md\n\\$\\\n(rm -rf /)\nEOF", false),
      ("cat <<EOF\n$\\\n\\\n(touch /tmp/pwned)\nEOF", true),
      ("cat <<EOF\n# $(x)\nEOF", true),
      ("cat <<'EOF'\nit's\nEOF\necho $(x)", true),
      ("cat <<EOF\nit's\nEOF\necho $(x)", true),
      ("cat <<'EOF'\n$(x)\nEOF\necho ok", false),
      ("cat <<'EOF'\n$(x)", false),
      ("cat <<EOF\n$(x)", true),
      ("cat <<EOF # c\n$(x)\nEOF", true),
      ("cat <<\"EOF\"\n$(x)\nEOF", false),
      ("cat <<\\EOF\n$(x)\nEOF", false),
      ("cat <<E\"O\"F\n$(x)\nEOF", false),
      ("cat <<$'EOF'\nx\nEOF\necho $(x)", true),
      ("cat <<'EOF';cat <<E2\nx\nEOF\n$(x)\nE2", true),
      ("cat <<EOF;cat <<'E2'\n$(x)\nEOF\nx\nE2", true),
      ("cat <<'EOF'\r\n$(x)\r\nEOF\r\necho ok", false),
      ("cat <<<x\n$(x)", true),
      ("cat <<< '$(x)'", false),
      ("cat <<(ls)", true),
      ("cat <<EO\\\nF\nx\nEOF\necho $(x)", true),
    ]);
  }

  #[test]
  fn prompt_expansion_runs_substitutions() {
    check(&[
      ("echo ${PS1@P}", true),
      ("echo \"${PS1@P}\"", true),
      ("echo '${PS1@P}'", false),
      ("echo \\${PS1@P}", false),
      ("echo ${1@P} ${*@P} ${@@P}", true),
      ("echo \"${a[0]@P}\"", true),
      ("echo \"${a[@]@P}\"", true),
      ("echo ${!x@P}", true),
      ("echo ${PS1@\\\nP}", true),
      (
        "echo ${PS1@Q} ${PS1@E} ${PS1@U} ${PS1@a} ${PS1@K} ${PS1@L} ${PS1@u} ${PS1@A}",
        false,
      ),
      ("echo ${PS1@p}", false),
      ("echo ${PS1}", false),
      ("echo ${a[$i]} ${x:-@P}", false),
      ("cat <<EOF\n${PS1@P}\nEOF", true),
      ("cat <<EOF\n\\${PS1@P}\nEOF", false),
      ("cat <<'EOF'\n${PS1@P}\nEOF", false),
      ("echo $'${PS1@P}'", false),
    ]);
  }
}
