//! JavaScript whitespace semantics (CONTRACT.md §2.16: every `trim()`, `trimEnd()` and `\s` in the
//! guard algorithms is JavaScript's).
//!
//! Rust's `char::is_whitespace` differs from JavaScript's `\s` in two code points: it accepts
//! U+0085 (NEXT LINE), which JavaScript does not, and rejects U+FEFF (ZERO WIDTH NO-BREAK SPACE),
//! which JavaScript accepts. The guards must classify the same commands as the TypeScript version,
//! so they use these helpers instead of `str::trim`.

/// Whether `c` matches JavaScript's `\s` (`WhiteSpace` and `LineTerminator` of ECMA-262).
pub(super) fn is_js_whitespace(c: char) -> bool {
  matches!(
    c,
    '\u{9}'..='\u{d}'
      | ' '
      | '\u{a0}'
      | '\u{1680}'
      | '\u{2000}'..='\u{200a}'
      | '\u{2028}'
      | '\u{2029}'
      | '\u{202f}'
      | '\u{205f}'
      | '\u{3000}'
      | '\u{feff}'
  )
}

/// JavaScript `String.prototype.trim`.
pub(super) fn trim(s: &str) -> &str {
  s.trim_matches(is_js_whitespace)
}

/// JavaScript `String.prototype.trimStart`.
pub(super) fn trim_start(s: &str) -> &str {
  s.trim_start_matches(is_js_whitespace)
}

/// JavaScript `String.prototype.trimEnd`.
pub(super) fn trim_end(s: &str) -> &str {
  s.trim_end_matches(is_js_whitespace)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn differs_from_rust_whitespace_exactly_where_javascript_does() {
    assert!(is_js_whitespace('\u{feff}'));
    assert!(!is_js_whitespace('\u{85}'));
    for c in [
      '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{a0}', '\u{2028}', '\u{3000}',
    ] {
      assert!(is_js_whitespace(c), "{c:?}");
    }
    assert!(!is_js_whitespace('\u{200b}'));
  }

  #[test]
  fn trims_like_javascript() {
    assert_eq!(trim("\u{feff} a b \u{3000}"), "a b");
    assert_eq!(trim("\u{85}a\u{85}"), "\u{85}a\u{85}");
    assert_eq!(trim_start("  a  "), "a  ");
    assert_eq!(trim_end("  a  "), "  a");
    assert_eq!(trim(""), "");
  }
}
