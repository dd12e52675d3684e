//! Background-operator (`&`) guards (CONTRACT.md §2.11, §2.16, vectors §3.2, §3.4, §3.6;
//! §4 items 17–18).

use super::comment::trim_trailing_shell_comment;
use super::scan::{Class, Scanner};
use super::whitespace::{is_js_whitespace, trim, trim_end};

/// Whether the byte at `index` of `s` is escaped: an odd run of backslashes right before it.
fn is_escaped(s: &str, index: usize) -> bool {
  let backslashes = s.as_bytes()[..index]
    .iter()
    .rev()
    .take_while(|&&b| b == b'\\')
    .count();
  backslashes % 2 == 1
}

/// Whether the last character of `t` (which ends with `&`) is a bare background `&`: not
/// escaped, and not the second half of an unescaped `&&`.
fn ends_with_bare_amp(t: &str) -> bool {
  let last = t.len() - 1;
  if is_escaped(t, last) {
    return false;
  }
  let second_half_of_and = last > 0 && t.as_bytes()[last - 1] == b'&' && !is_escaped(t, last - 1);
  !second_half_of_and
}

/// `stripTrailingBackgroundAmp(command)` (CONTRACT.md §2.16, §3.2): remove one bare trailing `&`
/// and the whitespace before it. Returns the input unchanged (untrimmed) when it does not end
/// with a bare `&`. `x \\&` does end with one (§4 item 17).
#[must_use]
pub fn strip_trailing_background_amp(command: &str) -> String {
  let t = trim_end(command);
  if !t.ends_with('&') || !ends_with_bare_amp(t) {
    return command.to_owned();
  }
  trim_end(&t[..t.len() - 1]).to_owned()
}

/// The last non-whitespace character of `s`.
fn last_non_whitespace(s: &str) -> Option<char> {
  s.chars().rev().find(|&c| !is_js_whitespace(c))
}

/// `hasTopLevelTrailingBackgroundOperator(cmd)` (CONTRACT.md §2.16, §3.4): whether `cmd`, with
/// its top-level comments removed line by line, ends with a top-level bare `&`.
#[must_use]
pub fn has_top_level_trailing_background_operator(command: &str) -> bool {
  let uncommented = trim_trailing_shell_comment(command);
  let t = trim_end(&uncommented);
  if !t.ends_with('&') {
    return false;
  }
  let amp = t.len() - 1;
  if is_escaped(t, amp) || matches!(last_non_whitespace(&t[..amp]), Some('&' | '|')) {
    return false;
  }
  Scanner::new(t).any(|(i, _, class)| i == amp && class == Class::TopLevel)
}

/// `hasNonFinalTopLevelBackgroundOperator(command)` (CONTRACT.md §2.11): whether a top-level `&`
/// is followed by any non-blank text (comments included).
///
/// Top-level means outside quotes, backticks, `$(`, `<(` and `>(`, unescaped, and not part of
/// `&&`, `&>`, `>&`, `<&` or `|&`: an `&` right after (whitespace aside) a live `&`, `>`, `<` or
/// `|`, or right before `&` or `>`, is not a background operator. An escaped `\&` or `\|` is a
/// literal, so an `&` after it still counts.
#[must_use]
pub fn has_non_final_top_level_background_operator(command: &str) -> bool {
  let mut previous_live: Option<char> = None;
  for (i, ch, class) in Scanner::new(command) {
    if ch == '&' && class == Class::TopLevel && is_background_amp(command, i, previous_live) {
      return !trim(&command[i + 1..]).is_empty();
    }
    if !is_js_whitespace(ch) {
      previous_live = (class == Class::TopLevel).then_some(ch);
    }
  }
  false
}

/// Whether the top-level `&` at `index` is a background operator given the previous
/// non-whitespace character (`None` when it was not live syntax).
fn is_background_amp(command: &str, index: usize, previous_live: Option<char>) -> bool {
  let next = command.as_bytes().get(index + 1);
  !matches!(next, Some(b'&' | b'>')) && !matches!(previous_live, Some('&' | '>' | '<' | '|'))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::guards::test_support::{expect_eq, input_str, run_table};

  #[test]
  fn strip_trailing_background_amp_vectors() {
    run_table("stripTrailingBackgroundAmp", |case| {
      let want = case["expected"]
        .as_str()
        .ok_or("expected is not a string")?;
      expect_eq(
        strip_trailing_background_amp(input_str(case)?).as_str(),
        want,
      )
    });
  }

  #[test]
  fn has_top_level_trailing_background_operator_vectors() {
    run_table("hasTopLevelTrailingBackgroundOperator", |case| {
      let want = case["expected"].as_bool().ok_or("expected is not a bool")?;
      expect_eq(
        has_top_level_trailing_background_operator(input_str(case)?),
        want,
      )
    });
  }

  #[test]
  fn strip_trailing_background_amp_edge_cases() {
    let cases = [
      ("echo \\&&", "echo \\&"),
      ("x \\\\\\&", "x \\\\\\&"),
      ("a &\u{3000}", "a"),
      ("é&", "é"),
      ("", ""),
      ("  ", "  "),
      ("a && &", "a &&"),
    ];
    for (input, want) in cases {
      assert_eq!(strip_trailing_background_amp(input), want, "{input:?}");
    }
  }

  #[test]
  fn trailing_operator_edge_cases() {
    let cases = [
      ("a & # x\n# y", true),
      ("echo \"a &\"", false),
      ("echo `a &`", false),
      ("echo $(a &", false),
      ("a\\\n&", true),
      ("a | &", false),
      ("a && &", false),
      ("é &", true),
      ("", false),
      ("'unterminated &", false),
    ];
    for (input, want) in cases {
      assert_eq!(
        has_top_level_trailing_background_operator(input),
        want,
        "{input:?}"
      );
    }
  }

  #[test]
  fn non_final_operator_cases() {
    let cases = [
      ("a & b", true),
      ("a &", false),
      ("a &   \n ", false),
      ("a && b", false),
      ("a &> out", false),
      ("a 2>&1 b", false),
      ("a 0<&3 b", false),
      ("a |& b", false),
      ("a > & b", false),
      ("a \\& b", false),
      ("a \\&& b", true),
      ("a \\|& b", true),
      ("a '&' b", false),
      ("a \"&\" b", false),
      ("a `x & y` b", false),
      ("a $(x & y) b", false),
      ("a <(x & y) b", false),
      ("a >(x & y) b", false),
      ("a & # c", true),
      ("é&日", true),
      ("&", false),
      ("& x", true),
      ("echo \"$(printf '\"')\" & rm x", true),
      ("echo $(printf ')') & rm x", true),
      ("echo $'\\'' & rm x", true),
      ("echo $(a \")\" & b)", false),
    ];
    for (input, want) in cases {
      assert_eq!(
        has_non_final_top_level_background_operator(input),
        want,
        "{input:?}"
      );
    }
  }
}
