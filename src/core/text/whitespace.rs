//! ECMAScript whitespace: the JavaScript `\s` class, which `String.prototype.trim`
//! also uses (CONTRACT.md §1.7 `truncateNotificationLabel`, §2.3 layer 3, §2.14 step 8).

/// True for every character of the JavaScript `\s` class: TAB, LF, VT, FF, CR, space,
/// U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 and U+FEFF.
pub fn is_ecma_whitespace(c: char) -> bool {
  matches!(
    c,
    '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
      ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
  )
}

/// JavaScript `s.trim()`.
pub fn ecma_trim(s: &str) -> &str {
  s.trim_matches(is_ecma_whitespace)
}

/// JavaScript `s.trimStart()`.
pub fn ecma_trim_start(s: &str) -> &str {
  s.trim_start_matches(is_ecma_whitespace)
}

/// JavaScript `s.trimEnd()`.
pub fn ecma_trim_end(s: &str) -> &str {
  s.trim_end_matches(is_ecma_whitespace)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn matches_the_javascript_whitespace_class() {
    for c in [
      '\t', '\n', '\u{0B}', '\u{0C}', '\r', ' ', '\u{A0}', '\u{1680}', '\u{2000}', '\u{2005}',
      '\u{200A}', '\u{2028}', '\u{2029}', '\u{202F}', '\u{205F}', '\u{3000}', '\u{FEFF}',
    ] {
      assert!(is_ecma_whitespace(c), "{:?} is whitespace", c);
    }
    for c in [
      'a', '\0', '\u{85}', '\u{180E}', '\u{200B}', '\u{2060}', '\u{1F}',
    ] {
      assert!(!is_ecma_whitespace(c), "{:?} is not whitespace", c);
    }
  }

  #[test]
  fn trims_like_javascript() {
    assert_eq!(ecma_trim("\u{FEFF}\r\n a b \u{3000}\t"), "a b");
    assert_eq!(ecma_trim("\u{200B}x\u{200B}"), "\u{200B}x\u{200B}");
    assert_eq!(ecma_trim_end(" a \n\r\u{A0}"), " a");
    assert_eq!(ecma_trim(""), "");
  }
}
