//! Top-level shell comments (CONTRACT.md §2.16 `splitTrailingShellComment` /
//! `trimTrailingShellComment`, vectors §3.3).
//!
//! A `#` starts a comment only at top level (outside quotes, backticks and `$(…)`, `<(…)` or
//! `>(…)` bodies, unescaped) and at position 0 or right after a whitespace character. A comment
//! runs to the next `\n`, which is not part of it.

use super::scan::{Class, Scanner};
use super::whitespace::is_js_whitespace;

/// A command split at its first top-level comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitComment {
  /// The text before the `#` (including the whitespace before it), plus, in keep mode, every
  /// line after the comment.
  pub command: String,
  /// The text after the `#` up to the next newline; `None` when there is no comment.
  pub comment: Option<String>,
}

/// Advance `scanner` to the next top-level comment of `src` and return the byte index of its `#`.
fn next_comment_start(src: &str, scanner: &mut Scanner<'_>) -> Option<usize> {
  scanner
    .find(|&(i, ch, class)| {
      ch == '#'
        && class == Class::TopLevel
        && src[..i].chars().next_back().is_none_or(is_js_whitespace)
    })
    .map(|(i, _, _)| i)
}

/// The byte index of the newline ending the comment that starts at `hash`, if any.
fn comment_end(src: &str, hash: usize) -> Option<usize> {
  src[hash..].find('\n').map(|offset| hash + offset)
}

/// `splitTrailingShellComment(command, keepCommandsAfterCommentNewline)` (CONTRACT.md §2.16).
///
/// Splits at the first top-level comment. The command part is the text before the `#`; in keep
/// mode everything from the newline after the comment onwards is appended (later comments stay
/// in it). Without keep mode, everything after the `#` is dropped.
#[must_use]
pub fn split_trailing_shell_comment(
  command: &str,
  keep_commands_after_comment_newline: bool,
) -> SplitComment {
  let mut scanner = Scanner::new(command);
  let Some(hash) = next_comment_start(command, &mut scanner) else {
    return SplitComment {
      command: command.to_owned(),
      comment: None,
    };
  };
  let end = comment_end(command, hash);
  let comment_text = &command[hash + 1..end.unwrap_or(command.len())];
  let mut kept = command[..hash].to_owned();
  if let (Some(newline), true) = (end, keep_commands_after_comment_newline) {
    kept.push_str(&command[newline..]);
  }
  SplitComment {
    command: kept,
    comment: Some(comment_text.to_owned()),
  }
}

/// `trimTrailingShellComment(command)` (CONTRACT.md §2.16, §3.3, §4 item 18): every top-level
/// comment removed up to the end of its line, every line kept. `"a # c1\nb # c2"` gives
/// `"a \nb "` (the TypeScript version returned `"a "`, losing line `b`).
#[must_use]
pub fn trim_trailing_shell_comment(command: &str) -> String {
  let mut scanner = Scanner::new(command);
  let mut out = String::with_capacity(command.len());
  let mut copied_up_to = 0;
  while let Some(hash) = next_comment_start(command, &mut scanner) {
    out.push_str(&command[copied_up_to..hash]);
    let Some(newline) = comment_end(command, hash) else {
      return out;
    };
    scanner.skip_to(newline);
    copied_up_to = newline;
  }
  out.push_str(&command[copied_up_to..]);
  out
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::guards::test_support::{expect_eq, input_str, run_table};

  #[test]
  fn trim_trailing_shell_comment_vectors() {
    run_table("trimTrailingShellComment", |case| {
      let want = case["expected"]
        .as_str()
        .ok_or("expected is not a string")?;
      expect_eq(trim_trailing_shell_comment(input_str(case)?).as_str(), want)
    });
  }

  #[test]
  fn split_trailing_shell_comment_vectors() {
    run_table("splitTrailingShellComment", |case| {
      let expected = &case["expected"];
      let want = SplitComment {
        command: expected["command"]
          .as_str()
          .ok_or("no expected command")?
          .to_owned(),
        comment: expected["comment"].as_str().map(str::to_owned),
      };
      expect_eq(split_trailing_shell_comment(input_str(case)?, true), want)
    });
  }

  #[test]
  fn split_without_keep_mode_drops_later_lines() {
    let got = split_trailing_shell_comment("a # c1\nb # c2", false);
    assert_eq!(got.command, "a ");
    assert_eq!(got.comment.as_deref(), Some(" c1"));
  }

  #[test]
  fn comment_edge_cases() {
    let cases = [
      ("a\t#c", "a\t"),
      ("a\n#c\nb", "a\n\nb"),
      ("a # it's\nb 'x # y'", "a \nb 'x # y'"),
      ("a # `x\nb # c", "a \nb "),
      ("a\u{3000}# c", "a\u{3000}"),
      ("a\u{85}# c", "a\u{85}# c"),
      ("é #é", "é "),
      ("#", ""),
      ("a #\n", "a \n"),
      ("$(a) # c", "$(a) "),
      ("<(a # x\n) # y", "<(a # x\n) "),
    ];
    for (input, want) in cases {
      assert_eq!(trim_trailing_shell_comment(input), want, "{input:?}");
    }
  }
}
