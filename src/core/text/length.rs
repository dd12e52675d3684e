//! String lengths in the contract's two measures (CONTRACT.md, Notation): "units" are UTF-16
//! code units (JavaScript `string.length`), "code points" are Unicode scalar values (`char`s).

/// Number of UTF-16 code units in `s` (JavaScript `s.length`).
pub fn utf16_len(s: &str) -> usize {
  // Every char starts with one non-continuation byte; chars outside the BMP (4-byte
  // sequences, lead byte 0xF0 and up) take two units. Byte-wise, so it vectorises.
  s.bytes()
    .map(|b| usize::from((b as i8) >= -0x40) + usize::from(b >= 0xF0))
    .sum()
}

/// Cut `s` to at most `max_units` UTF-16 code units without splitting a surrogate pair:
/// a char that needs two units and does not fit whole is left out (CONTRACT.md §4 item 3).
/// Returns the prefix slice.
pub fn truncate_utf16(s: &str, max_units: usize) -> &str {
  let mut units = 0;
  for (index, c) in s.char_indices() {
    units += c.len_utf16();
    if units > max_units {
      return &s[..index];
    }
  }
  s
}

/// The first `max_code_points` chars of `s` (all of `s` when it is shorter).
pub fn truncate_code_points(s: &str, max_code_points: usize) -> &str {
  s.char_indices()
    .nth(max_code_points)
    .map_or(s, |(index, _)| &s[..index])
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn counts_units_like_javascript() {
    assert_eq!(utf16_len(""), 0);
    assert_eq!(utf16_len("abc"), 3);
    assert_eq!(utf16_len("é你"), 2);
    assert_eq!(utf16_len("😀"), 2);
    assert_eq!(utf16_len("a😀b"), 4);
  }

  #[test]
  fn truncates_without_splitting_a_surrogate_pair() {
    assert_eq!(truncate_utf16("abcdef", 4), "abcd");
    assert_eq!(truncate_utf16("abc", 4), "abc");
    assert_eq!(truncate_utf16("abc", 0), "");
    assert_eq!(truncate_utf16("a😀b", 2), "a");
    assert_eq!(truncate_utf16("a😀b", 3), "a😀");
    assert_eq!(truncate_utf16("😀😀", 3), "😀");
    assert_eq!(truncate_utf16("你好", 1), "你");
  }

  #[test]
  fn truncates_by_code_point() {
    assert_eq!(truncate_code_points("a😀b", 2), "a😀");
    assert_eq!(truncate_code_points("abc", 3), "abc");
    assert_eq!(truncate_code_points("abc", 9), "abc");
    assert_eq!(truncate_code_points("abc", 0), "");
  }
}
