//! Quote-aware shell word splitting for the wrapper parser (CONTRACT.md §2.16 `stripShellWrapper`
//! steps 2–6, §2.11 `normalizeMonitorCommand`).

use super::scan::{Class, Scanner};
use super::whitespace::{is_js_whitespace, trim, trim_start};

/// The first word of `input` (after leading whitespace) and the text after it.
///
/// A word ends at the first top-level whitespace, so `FOO="bar baz"`, `'a b'` and `$(a b)` are
/// single words. Returns `None` when `input` is blank or its first word never closes (an open
/// quote, backtick, escape or substitution runs to the end).
pub(super) fn take_leading_token(input: &str) -> Option<(&str, &str)> {
  let trimmed = trim_start(input);
  if trimmed.is_empty() {
    return None;
  }
  let mut scanner = Scanner::new(trimmed);
  let end = scanner
    .by_ref()
    .find(|&(_, ch, class)| class == Class::TopLevel && is_js_whitespace(ch))
    .map(|(i, _, _)| i);
  match end {
    Some(i) => Some((&trimmed[..i], &trimmed[i..])),
    None if scanner.is_clean() => Some((trimmed, "")),
    None => None,
  }
}

/// A word with one pair of symmetric outer quotes removed, and the quote that was removed.
pub(super) struct Unquoted<'a> {
  pub(super) value: &'a str,
  pub(super) quote: Option<char>,
}

/// Remove one pair of matching outer `'…'` or `"…"` from the trimmed `token`.
pub(super) fn strip_symmetric_quotes(token: &str) -> Unquoted<'_> {
  let trimmed = trim(token);
  for quote in ['\'', '"'] {
    if trimmed.len() >= 2 && trimmed.starts_with(quote) && trimmed.ends_with(quote) {
      return Unquoted {
        value: &trimmed[1..trimmed.len() - 1],
        quote: Some(quote),
      };
    }
  }
  Unquoted {
    value: trimmed,
    quote: None,
  }
}

/// `token` without its outer quotes, with `\` read as `/`, lower-cased: the form in which
/// shell names, flags and markers are compared.
pub(super) fn normalized_token(token: &str) -> String {
  strip_symmetric_quotes(token)
    .value
    .replace('\\', "/")
    .to_lowercase()
}

/// Whether `token` (outer quotes ignored) is a `NAME=value` assignment:
/// `ENV_ASSIGNMENT_REGEX = /^[A-Za-z_][A-Za-z0-9_]*=/` (CONTRACT.md §1.5).
pub(super) fn is_env_assignment(token: &str) -> bool {
  let value = strip_symmetric_quotes(token).value.as_bytes();
  let name_len = value
    .iter()
    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
    .count();
  name_len > 0 && !value[0].is_ascii_digit() && value.get(name_len) == Some(&b'=')
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn splits_one_quote_aware_word() {
    let cases: [(&str, Option<(&str, &str)>); 9] = [
      ("  a b", Some(("a", " b"))),
      ("FOO=\"bar baz\" x", Some(("FOO=\"bar baz\"", " x"))),
      ("'a b'c d", Some(("'a b'c", " d"))),
      ("$(a b) c", Some(("$(a b)", " c"))),
      ("a\\ b c", Some(("a\\ b", " c"))),
      ("single", Some(("single", ""))),
      ("   ", None),
      ("'open", None),
      ("$(open", None),
    ];
    for (input, want) in cases {
      assert_eq!(take_leading_token(input), want, "{input:?}");
    }
  }

  #[test]
  fn strips_one_pair_of_symmetric_quotes() {
    let check = |token: &str, value: &str, quote: Option<char>| {
      let got = strip_symmetric_quotes(token);
      assert_eq!((got.value, got.quote), (value, quote), "{token:?}");
    };
    check("'a b'", "a b", Some('\''));
    check("\"a\"", "a", Some('"'));
    check("''", "", Some('\''));
    check("'", "'", None);
    check("'a\"", "'a\"", None);
    check("plain", "plain", None);
  }

  #[test]
  fn recognises_env_assignments() {
    for (token, want) in [
      ("FOO=bar", true),
      ("_x1=", true),
      ("\"FOO=bar baz\"", true),
      ("1FOO=bar", false),
      ("=bar", false),
      ("FOO", false),
      ("FO-O=bar", false),
      ("é=1", false),
    ] {
      assert_eq!(is_env_assignment(token), want, "{token:?}");
    }
  }

  #[test]
  fn normalises_for_comparison() {
    assert_eq!(
      normalized_token("'C:\\Windows\\CMD.EXE'"),
      "c:/windows/cmd.exe"
    );
  }
}
