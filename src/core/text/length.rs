//! String lengths in the contract's two measures (CONTRACT.md, Notation): "units" are UTF-16
//! code units (JavaScript `string.length`), "code points" are Unicode scalar values (`char`s).

/// Number of UTF-16 code units in `s` (JavaScript `s.length`).
pub fn utf16_len(s: &str) -> usize {
  // Every char starts with one non-continuation byte; chars outside the BMP (4-byte
  // sequences, lead byte 0xF0 and up) take two units. ASCII stretches (one unit a byte)
  // are found at the speed of `is_ascii`; others are counted byte-wise into narrow
  // lanes, which vectorises.
  s.as_bytes()
    .chunks(1024)
    .map(|chunk| {
      if chunk.is_ascii() {
        chunk.len()
      } else {
        chunk
          .iter()
          .map(|&b| u32::from((b as i8) >= -0x40) + u32::from(b >= 0xF0))
          .sum::<u32>() as usize
      }
    })
    .sum()
}

/// Cut `s` to at most `max_units` UTF-16 code units without splitting a surrogate pair:
/// a char that needs two units and does not fit whole is left out (CONTRACT.md §4 item 3).
/// Returns the prefix slice.
pub fn truncate_utf16(s: &str, max_units: usize) -> &str {
  if s.len() <= max_units {
    // Never more units than bytes.
    return s;
  }
  if s.as_bytes()[..max_units].is_ascii() {
    // One unit a byte, and the next char starts right after.
    return &s[..max_units];
  }
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
    let long = format!("{}é{}😀", "a".repeat(2000), "你".repeat(1500));
    assert_eq!(utf16_len(&long), long.encode_utf16().count());
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
    assert_eq!(truncate_utf16("abcd😀", 4), "abcd");
    assert_eq!(truncate_utf16("abc😀", 4), "abc");
    assert_eq!(truncate_utf16("abcé", 3), "abc");
  }

  #[test]
  fn truncates_by_code_point() {
    assert_eq!(truncate_code_points("a😀b", 2), "a😀");
    assert_eq!(truncate_code_points("abc", 3), "abc");
    assert_eq!(truncate_code_points("abc", 9), "abc");
    assert_eq!(truncate_code_points("abc", 0), "");
  }
}
