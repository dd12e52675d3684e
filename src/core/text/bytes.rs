//! Byte searches for the hot path of the stream pipelines: eight bytes at a
//! time (SWAR), with no dependency beyond `core`.

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// True when some byte of `word` is zero (exact, no false positives).
#[inline]
fn has_zero_byte(word: u64) -> bool {
  word.wrapping_sub(LO) & !word & HI != 0
}

/// The first index of `a` or `b` in `haystack`.
pub fn find_either(haystack: &[u8], a: u8, b: u8) -> Option<usize> {
  let (pattern_a, pattern_b) = (LO * u64::from(a), LO * u64::from(b));
  let mut start = 0;
  let mut words = haystack.chunks_exact(8);
  for word in words.by_ref() {
    let word = u64::from_le_bytes([
      word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
    ]);
    if has_zero_byte(word ^ pattern_a) || has_zero_byte(word ^ pattern_b) {
      break;
    }
    start += 8;
  }
  haystack[start..]
    .iter()
    .position(|&c| c == a || c == b)
    .map(|i| start + i)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn finds_the_first_of_two_bytes_anywhere() {
    for len in 0..40 {
      for at in 0..len {
        for needle in [0x1B_u8, 0xC2] {
          let mut hay = vec![b'x'; len];
          hay[at] = needle;
          if at + 3 < len {
            hay[at + 3] = 0x1B;
          }
          assert_eq!(find_either(&hay, 0x1B, 0xC2), Some(at), "len {len} at {at}");
        }
      }
      assert_eq!(find_either(&vec![b'x'; len], 0x1B, 0xC2), None);
    }
    // Bytes next to the needles (0x1A, 0x1C, 0xC1, 0xC3, 0x80, 0xFF) never match.
    let near = [0x1A, 0x1C, 0xC1, 0xC3, 0x80, 0xFF, 0x00, 0x9B, 0x1A, 0x1C];
    assert_eq!(find_either(&near, 0x1B, 0xC2), None);
  }
}
