//! Shell-wrapper parsing: `[NAME=value…] <shell> [flags…] <marker> <script> [argv suffix]`
//! (CONTRACT.md §2.16 `stripShellWrapper`, §2.11 `normalizeMonitorCommand`).

use super::token::{
  is_env_assignment, normalized_token, strip_symmetric_quotes, take_leading_token,
};
use super::whitespace::trim_start;

/// The families of known wrapper shells; they differ in their command marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellKind {
  /// `sh`, `bash`, `zsh`: marker `-c` or a single-dash letter cluster containing `c`.
  Posix,
  /// `cmd`: marker `/c`; the script is the rest of the line.
  Cmd,
  /// `powershell`, `pwsh`: marker `-command` or `-c`; the script is the rest of the line.
  PowerShell,
}

impl ShellKind {
  /// The kind of a wrapper word: its basename (with `\` read as `/`), lower-cased, optionally
  /// ending in `.exe`.
  fn of(token: &str) -> Option<ShellKind> {
    let normalized = normalized_token(token);
    let base = normalized.rsplit('/').next().unwrap_or_default();
    match base.strip_suffix(".exe").unwrap_or(base) {
      "sh" | "bash" | "zsh" => Some(ShellKind::Posix),
      "cmd" => Some(ShellKind::Cmd),
      "powershell" | "pwsh" => Some(ShellKind::PowerShell),
      _ => None,
    }
  }

  /// Whether `token` is this shell's command marker (§2.16 step 5).
  fn is_marker(self, token: &str) -> bool {
    let normalized = normalized_token(token);
    match self {
      ShellKind::Cmd => normalized == "/c",
      ShellKind::PowerShell => normalized == "-command" || normalized == "-c",
      ShellKind::Posix => is_posix_command_cluster(&normalized),
    }
  }

  /// cmd and PowerShell join every remaining word into the command (§2.16 step 6).
  fn script_is_rest_of_line(self) -> bool {
    self != ShellKind::Posix
  }

  /// A wrapper flag (§2.16 step 4): starts with `-`, or is exactly `+o`; for cmd and
  /// PowerShell also a word starting with `/`. For a POSIX shell a `/…` word is the path of a
  /// script to run (`bash /tmp/x.sh -c ls` runs `/tmp/x.sh`), so it is not a flag.
  fn is_flag(self, token: &str) -> bool {
    let normalized = normalized_token(token);
    normalized.starts_with('-')
      || normalized == "+o"
      || (self != ShellKind::Posix && normalized.starts_with('/'))
  }

  /// A flag after which a later marker no longer names the script: `--` and `-` end a POSIX
  /// shell's options (`bash -- -c x` runs a file named `-c`), and PowerShell's `-File` and
  /// `-EncodedCommand` select another script. Such a command is not treated as a wrapper.
  fn flag_replaces_script(self, token: &str) -> bool {
    let normalized = normalized_token(token);
    match self {
      ShellKind::Posix => normalized == "--" || normalized == "-",
      ShellKind::PowerShell => normalized == "-file" || normalized == "-encodedcommand",
      ShellKind::Cmd => false,
    }
  }
}

/// `-c`, `-lc`, `-ec`: one dash, then ASCII letters including a `c` (`/^-[a-z]*c[a-z]*$/i`).
fn is_posix_command_cluster(normalized: &str) -> bool {
  normalized.strip_prefix('-').is_some_and(|letters| {
    letters.contains('c') && letters.bytes().all(|b| b.is_ascii_alphabetic())
  })
}

/// `-o`, `+o`, `-executionpolicy`, `-file` and `-encodedcommand` take the next word as their
/// operand, unless the flag carries its value inline (`=` or `:`).
fn flag_takes_operand(token: &str) -> bool {
  if token.contains('=') || token.contains(':') {
    return false;
  }
  matches!(
    normalized_token(token).as_str(),
    "-o" | "+o" | "-executionpolicy" | "-file" | "-encodedcommand"
  )
}

/// A recognised wrapper invocation. Every slice borrows from the trimmed command.
pub(super) struct Wrapper<'a> {
  /// The leading `NAME=value` words, as given.
  pub(super) env_tokens: Vec<&'a str>,
  /// The env words, the shell, its flags and operands and the marker, as given.
  pub(super) wrapper_tokens: Vec<&'a str>,
  /// The script word as given.
  pub(super) script_token: &'a str,
  /// The script word without one pair of symmetric outer quotes.
  pub(super) script: &'a str,
  /// The quote removed from the script word, if any.
  pub(super) script_quote: Option<char>,
  /// The text after the script word (the argv suffix), untrimmed.
  pub(super) suffix: &'a str,
  /// The text after the marker, untrimmed (the script of an unquoted cmd/PowerShell command).
  after_marker: &'a str,
  kind: ShellKind,
}

/// Parse `trimmed` (an already-trimmed command) as a shell wrapper. Returns `None` when it is not
/// one: no known shell after the env words, a non-flag word (or a flag that selects another
/// script) before the marker, or no word where an operand, the marker or the script should be.
pub(super) fn parse_wrapper(trimmed: &str) -> Option<Wrapper<'_>> {
  let mut rest = trimmed;
  let mut env_tokens = Vec::new();
  let shell = loop {
    let (token, after) = take_leading_token(rest)?;
    rest = after;
    if !is_env_assignment(token) {
      break token;
    }
    env_tokens.push(token);
  };
  let kind = ShellKind::of(shell)?;
  let mut wrapper_tokens = env_tokens.clone();
  wrapper_tokens.push(shell);
  let after_marker = loop {
    let (token, after) = take_leading_token(rest)?;
    rest = after;
    wrapper_tokens.push(token);
    if kind.is_marker(token) {
      break after;
    }
    if !kind.is_flag(token) || kind.flag_replaces_script(token) {
      return None;
    }
    if flag_takes_operand(token) {
      let (operand, after) = take_leading_token(rest)?;
      wrapper_tokens.push(operand);
      rest = after;
    }
  };
  let (script_token, suffix) = take_leading_token(after_marker)?;
  let script = strip_symmetric_quotes(script_token);
  Some(Wrapper {
    env_tokens,
    wrapper_tokens,
    script_token,
    script: script.value,
    script_quote: script.quote,
    suffix,
    after_marker,
    kind,
  })
}

/// Trim what bash's lexer discards at a command's edges: spaces, tabs and newlines, and a CR
/// only as the first half of a CRLF pair. A lone CR, VT, FF, NBSP and every other character
/// JavaScript's `trim()` removes are ordinary word characters to bash, so they stay
/// (docs/upstream-rules.md).
pub(super) fn trim_bash_edges(command: &str) -> &str {
  let bytes = command.as_bytes();
  let mut start = 0;
  let mut end = bytes.len();
  while start < end {
    match bytes[start] {
      b' ' | b'\t' | b'\n' => start += 1,
      b'\r' if bytes.get(start + 1) == Some(&b'\n') => start += 1,
      _ => break,
    }
  }
  while end > start {
    match bytes[end - 1] {
      b' ' | b'\t' | b'\n' => end -= 1,
      b'\r' if bytes.get(end) == Some(&b'\n') => end -= 1,
      _ => break,
    }
  }
  &command[start..end]
}

/// `stripShellWrapper(command)` (CONTRACT.md §2.16, vectors §3.5): the inner script of a known
/// shell wrapper, or the command trimmed of bash's edge separators when there is none (see
/// [`trim_bash_edges`]). The env prefix and any argv suffix are dropped; an unquoted cmd or
/// PowerShell script is the whole rest of the line.
#[must_use]
pub fn strip_shell_wrapper(command: &str) -> String {
  let trimmed = trim_bash_edges(command);
  let Some(wrapper) = parse_wrapper(trimmed) else {
    return trimmed.to_owned();
  };
  let script = if wrapper.script_quote.is_none() && wrapper.kind.script_is_rest_of_line() {
    trim_start(wrapper.after_marker)
  } else {
    wrapper.script
  };
  if script.is_empty() {
    trimmed.to_owned()
  } else {
    script.to_owned()
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::guards::test_support::{expect_eq, input_str, run_table};

  #[test]
  fn strip_shell_wrapper_vectors() {
    run_table("stripShellWrapper", |case| {
      let want = case["expected"]
        .as_str()
        .ok_or("expected is not a string")?;
      expect_eq(strip_shell_wrapper(input_str(case)?).as_str(), want)
    });
  }

  #[test]
  fn strip_shell_wrapper_edge_cases() {
    let cases = [
      ("FOO=bar", "FOO=bar"),
      ("bash -o", "bash -o"),
      ("bash -e", "bash -e"),
      ("bash -c 'open", "bash -c 'open"),
      ("bash.EXE -c 'x'", "x"),
      (
        "C:\\Windows\\System32\\cmd.exe /d /s /c \"dir /b\" x",
        "dir /b",
      ),
      (
        "pwsh -NoProfile -ExecutionPolicy Bypass -Command Get-Date -Format o",
        "Get-Date -Format o",
      ),
      ("pwsh -ExecutionPolicy:Bypass -c 'x'", "x"),
      ("bash +o posix -c 'x'", "x"),
      ("'bash' '-c' 'x'", "x"),
      ("bash -c \"a\" b c", "a"),
      ("bash -c x y", "x"),
      ("env bash -c 'x'", "env bash -c 'x'"),
      ("bash --rcfile f -c 'x'", "bash --rcfile f -c 'x'"),
      ("\u{feff}bash -c 'x'\u{3000}", "x"),
      ("bash /tmp/x.sh -c 'ls'", "bash /tmp/x.sh -c 'ls'"),
      (
        "bash --rcfile /tmp/rc -i -c 'ls'",
        "bash --rcfile /tmp/rc -i -c 'ls'",
      ),
      ("bash -- -c 'ls'", "bash -- -c 'ls'"),
      ("sh - -c 'ls'", "sh - -c 'ls'"),
      (
        "pwsh -File x.ps1 -Command Get-Date",
        "pwsh -File x.ps1 -Command Get-Date",
      ),
      (
        "pwsh -EncodedCommand ZQA= -c 'x'",
        "pwsh -EncodedCommand ZQA= -c 'x'",
      ),
      (
        "powershell /NoProfile /Command Get-Date",
        "powershell /NoProfile /Command Get-Date",
      ),
      ("cmd /d /c dir", "dir"),
    ];
    for (input, want) in cases {
      assert_eq!(strip_shell_wrapper(input), want, "{input:?}");
    }
  }

  #[test]
  fn trims_only_what_bash_discards_at_the_edges() {
    let cases = [
      ("echo x\r\n", "echo x"),
      ("\r\n\t echo x \n", "echo x"),
      ("\u{b}echo x", "\u{b}echo x"),
      ("echo x \u{c}", "echo x \u{c}"),
      ("echo x >\u{a0}", "echo x >\u{a0}"),
      ("echo x\r", "echo x\r"),
      ("\recho x", "\recho x"),
      ("\r\r\necho x", "\r\r\necho x"),
      ("echo x\r\n\r", "echo x\r\n\r"),
      ("\u{feff}ls\u{3000}", "\u{feff}ls\u{3000}"),
      ("\u{b}bash -c 'x'", "x"),
      (" \tbash -c 'x'\r\n", "x"),
      ("\n", ""),
    ];
    for (input, want) in cases {
      assert_eq!(strip_shell_wrapper(input), want, "{input:?}");
    }
  }

  #[test]
  fn parse_keeps_tokens_as_given() {
    let wrapper = parse_wrapper("A=1 \"B=2 3\" /bin/bash -o pipefail -lc 'x &' y &").unwrap();
    assert_eq!(wrapper.env_tokens, ["A=1", "\"B=2 3\""]);
    assert_eq!(
      wrapper.wrapper_tokens,
      ["A=1", "\"B=2 3\"", "/bin/bash", "-o", "pipefail", "-lc"]
    );
    assert_eq!(wrapper.script, "x &");
    assert_eq!(wrapper.script_quote, Some('\''));
    assert_eq!(wrapper.suffix, " y &");
  }
}
