//! JavaScript whitespace semantics (CONTRACT.md §2.16: every `trim()`, `trimEnd()` and `\s` in the
//! guard algorithms is JavaScript's), shared with the text utilities.
//!
//! Rust's `char::is_whitespace` differs from JavaScript's `\s` in two code points: it accepts
//! U+0085 (NEXT LINE), which JavaScript does not, and rejects U+FEFF (ZERO WIDTH NO-BREAK SPACE),
//! which JavaScript accepts. The guards must classify the same commands as the TypeScript version,
//! so they use these helpers instead of `str::trim`.

pub(super) use crate::text::{
  ecma_trim as trim, ecma_trim_end as trim_end, ecma_trim_start as trim_start,
  is_ecma_whitespace as is_js_whitespace,
};

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
