//! The one shell-quoting scanner shared by every guard (CONTRACT.md §2.11, §2.16).
//!
//! It walks a command once, left to right, and classifies each character by the bash quoting
//! context it sits in. It never recurses: the quoting context enclosing each open substitution
//! is kept on a heap stack, so any input (1 MiB of `$(` included) is scanned in linear time.
//!
//! Rules (bash quoting):
//! * Inside single quotes nothing is live; only `'` ends them. Inside `$'…'` (ANSI-C quoting)
//!   nothing is live either, but `\` escapes the next character, so `\'` does not end them.
//! * A backslash outside single quotes escapes the next character.
//! * Inside double quotes, `$(` and a backtick open a substitution; `"` ends them.
//! * Unquoted, `$(`, `<(`, `>(` and a backtick open a substitution.
//! * A substitution body starts unquoted, whatever encloses it, and its quotes are its own:
//!   `"$(printf ')')"` is one word. `)` ends a `$(`, `<(` or `>(` body; the closing backtick ends a
//!   backtick body, inside which only `\` and the closing backtick matter.

/// How a character participates in the shell syntax of the command it was scanned in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
  /// Live syntax at top level: unquoted, unescaped, outside every substitution, and not itself
  /// a quote, escape or substitution opener.
  TopLevel,
  /// The first character of a live command or process substitution: `$` of `$(`, `<` of `<(`,
  /// `>` of `>(`, or an opening backtick. Reported at any depth.
  SubstitutionStart,
  /// Anything else: quoted, escaped, inside a substitution, or quoting syntax itself.
  Inert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
  Unquoted,
  Single,
  /// On the `$` of `$'`: the next character is the opening `'`.
  AnsiCStart,
  AnsiC,
  Double,
  Backtick,
}

/// An iterator over `(byte index, char, Class)` for every character of a command.
pub(super) struct Scanner<'a> {
  src: &'a str,
  pos: usize,
  mode: Mode,
  escaped: bool,
  /// The mode to return to when each open substitution ends, innermost last.
  enclosing: Vec<Mode>,
}

impl<'a> Scanner<'a> {
  pub(super) fn new(src: &'a str) -> Self {
    Scanner {
      src,
      pos: 0,
      mode: Mode::Unquoted,
      escaped: false,
      enclosing: Vec::new(),
    }
  }

  /// True when no quote, backtick, escape or substitution is open at the current position.
  pub(super) fn is_clean(&self) -> bool {
    self.mode == Mode::Unquoted && !self.escaped && self.enclosing.is_empty()
  }

  /// Continue scanning from byte `pos` (a char boundary at or after the current position),
  /// treating the skipped text as if it were not there. Used to step over a comment, which is
  /// only ever entered from a clean state.
  pub(super) fn skip_to(&mut self, pos: usize) {
    debug_assert!(self.src.is_char_boundary(pos) && pos >= self.pos);
    self.pos = pos;
  }

  fn next_byte_is(&self, byte: u8) -> bool {
    self.src.as_bytes().get(self.pos) == Some(&byte)
  }

  /// Open a substitution whose body is scanned in `body` mode.
  fn open_substitution(&mut self, body: Mode) -> Class {
    self.enclosing.push(self.mode);
    self.mode = body;
    Class::SubstitutionStart
  }

  fn close_substitution(&mut self) {
    self.mode = self.enclosing.pop().unwrap_or(Mode::Unquoted);
  }

  fn classify(&mut self, ch: char) -> Class {
    if self.escaped {
      self.escaped = false;
      return Class::Inert;
    }
    match self.mode {
      Mode::Unquoted => return self.classify_unquoted(ch),
      Mode::Double => return self.classify_double(ch),
      Mode::AnsiCStart => self.mode = Mode::AnsiC,
      Mode::AnsiC | Mode::Backtick if ch == '\\' => self.escaped = true,
      Mode::Single | Mode::AnsiC if ch == '\'' => self.mode = Mode::Unquoted,
      Mode::Backtick if ch == '`' => self.close_substitution(),
      _ => {}
    }
    Class::Inert
  }

  fn classify_double(&mut self, ch: char) -> Class {
    match ch {
      '\\' => self.escaped = true,
      '"' => self.mode = Mode::Unquoted,
      '`' => return self.open_substitution(Mode::Backtick),
      '$' if self.next_byte_is(b'(') => return self.open_substitution(Mode::Unquoted),
      _ => {}
    }
    Class::Inert
  }

  fn classify_unquoted(&mut self, ch: char) -> Class {
    match ch {
      '\\' => self.escaped = true,
      '\'' => self.mode = Mode::Single,
      '"' => self.mode = Mode::Double,
      '$' if self.next_byte_is(b'\'') => self.mode = Mode::AnsiCStart,
      '`' => return self.open_substitution(Mode::Backtick),
      '$' | '<' | '>' if self.next_byte_is(b'(') => return self.open_substitution(Mode::Unquoted),
      ')' if !self.enclosing.is_empty() => self.close_substitution(),
      _ if self.enclosing.is_empty() => return Class::TopLevel,
      _ => {}
    }
    Class::Inert
  }
}

impl Iterator for Scanner<'_> {
  type Item = (usize, char, Class);

  fn next(&mut self) -> Option<Self::Item> {
    let at = self.pos;
    let ch = self.src[at..].chars().next()?;
    self.pos += ch.len_utf8();
    Some((at, ch, self.classify(ch)))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn top_level_text(src: &str) -> String {
    Scanner::new(src)
      .filter(|&(_, _, class)| class == Class::TopLevel)
      .map(|(_, ch, _)| ch)
      .collect()
  }

  #[test]
  fn classifies_quoting_contexts() {
    let cases = [
      ("a 'b' c", "a  c"),
      ("a \"b $c\" d", "a  d"),
      ("a \\b c", "a  c"),
      ("a `b c` d", "a  d"),
      ("a $(b c) d", "a  d"),
      ("a $(b $(c) d) e", "a  e"),
      ("a <(b) >(c) d", "a   d"),
      ("a \"$(b)\" c", "a  c"),
      ("a \"$(b \")\")\" c", "a  c"),
      ("a ) b", "a ) b"),
      ("a \"$(printf '\"')\" & b", "a  & b"),
      ("a $(b ')') c", "a  c"),
      ("a \"`b \"x\"`\" c", "a  c"),
      ("a $'\\'' b", "a  b"),
      ("a $'x' & b", "a  & b"),
      ("a \\$'b' c", "a  c"),
      ("a \"$'\" b", "a  b"),
      ("a 'b\\' c", "a  c"),
      ("é&日", "é&日"),
    ];
    for (src, want) in cases {
      assert_eq!(top_level_text(src), want, "{src:?}");
    }
  }

  #[test]
  fn reports_substitution_starts() {
    let starts = |src: &str| -> Vec<usize> {
      Scanner::new(src)
        .filter(|&(_, _, class)| class == Class::SubstitutionStart)
        .map(|(i, _, _)| i)
        .collect()
    };
    assert_eq!(starts("$(a) `b` <(c) >(d)"), vec![0, 5, 9, 14]);
    assert_eq!(starts("\"$(a) `b` <(c)\""), vec![1, 6]);
    assert_eq!(starts("'$(a)' \\$(b) $ ( <"), Vec::<usize>::new());
  }

  #[test]
  fn is_clean_only_when_nothing_is_open() {
    for (src, clean) in [
      ("a b", true),
      ("'a", false),
      ("\"a", false),
      ("`a", false),
      ("a\\", false),
      ("$(a", false),
      ("$(a)", true),
      ("$'a", false),
      ("$'a\\'", false),
      ("$'a\\''", true),
      ("\"`a`", false),
      ("\"`a`\"", true),
    ] {
      let mut scanner = Scanner::new(src);
      scanner.by_ref().for_each(drop);
      assert_eq!(scanner.is_clean(), clean, "{src:?}");
    }
  }

  #[test]
  fn deep_nesting_is_linear_and_flat() {
    let src = "$(".repeat(1 << 19);
    let mut scanner = Scanner::new(&src);
    assert_eq!(scanner.by_ref().count(), src.chars().count());
    assert!(!scanner.is_clean());
  }
}
