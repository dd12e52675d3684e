//! Byte scans for the hot path of the stream pipelines: sixteen bytes at a
//! time with SSE2 on x86_64 (part of its baseline, so always present), eight
//! bytes at a time (SWAR) elsewhere. Both paths are tested on every target
//! that has them.

const ESC: u8 = 0x1B;
const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Bit masks over one block of at most 64 bytes (bit `i` = byte `i`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockMasks {
  /// Bytes equal to `\n`.
  pub newline: u64,
  /// Printable ASCII above space: `0x21..=0x7F`.
  pub printable: u64,
  /// Bytes that are not plain text: `>= 0x80` (not ASCII) or ESC (`0x1B`).
  pub not_plain: u64,
}

/// [`BlockMasks`] of `block` (`block.len() <= 64`; bits past its end are 0).
#[inline]
pub fn block_masks(block: &[u8]) -> BlockMasks {
  debug_assert!(block.len() <= 64);
  #[cfg(target_arch = "x86_64")]
  if block.len() == 64 {
    // SAFETY: SSE2 is part of the x86_64 baseline, and the block is 64 bytes.
    return unsafe { sse2::block_masks_64(block) };
  }
  portable_block_masks(block)
}

fn portable_block_masks(block: &[u8]) -> BlockMasks {
  let mut masks = BlockMasks::default();
  for (i, &b) in block.iter().enumerate() {
    masks.newline |= u64::from(b == b'\n') << i;
    masks.printable |= u64::from((0x21..0x80).contains(&b)) << i;
    masks.not_plain |= u64::from(b >= 0x80 || b == ESC) << i;
  }
  masks
}

/// The first index of `a` or `b` in `haystack`.
pub fn find_either(haystack: &[u8], a: u8, b: u8) -> Option<usize> {
  #[cfg(target_arch = "x86_64")]
  {
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe { sse2::find_either(haystack, a, b) }
  }
  #[cfg(not(target_arch = "x86_64"))]
  swar_find_either(haystack, a, b)
}

/// True when some byte of `word` is zero (exact, no false positives).
#[inline]
fn has_zero_byte(word: u64) -> bool {
  word.wrapping_sub(LO) & !word & HI != 0
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn swar_find_either(haystack: &[u8], a: u8, b: u8) -> Option<usize> {
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
  scalar_find_either(&haystack[start..], a, b).map(|i| start + i)
}

fn scalar_find_either(haystack: &[u8], a: u8, b: u8) -> Option<usize> {
  haystack.iter().position(|&c| c == a || c == b)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
  use std::arch::x86_64::{
    __m128i, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
    _mm_set1_epi8,
  };

  use super::{scalar_find_either, BlockMasks, ESC};

  /// Loads bytes `at..at + 16` of `bytes`; panics when they are not all there.
  #[inline]
  #[target_feature(enable = "sse2")]
  fn load(bytes: &[u8], at: usize) -> __m128i {
    let lane: &[u8; 16] = bytes[at..at + 16].try_into().expect("16 bytes");
    // SAFETY: `lane` is 16 readable bytes; the load is unaligned.
    unsafe { _mm_loadu_si128(lane.as_ptr().cast()) }
  }

  #[inline]
  #[target_feature(enable = "sse2")]
  fn bits(mask: __m128i) -> u64 {
    u64::from(_mm_movemask_epi8(mask) as u16)
  }

  #[inline]
  #[target_feature(enable = "sse2")]
  pub(super) fn block_masks_64(block: &[u8]) -> BlockMasks {
    let newline = _mm_set1_epi8(b'\n' as i8);
    let space = _mm_set1_epi8(b' ' as i8);
    let escape = _mm_set1_epi8(ESC as i8);
    let mut masks = BlockMasks::default();
    for lane in 0..4 {
      let v = load(block, lane * 16);
      let shift = lane * 16;
      masks.newline |= bits(_mm_cmpeq_epi8(v, newline)) << shift;
      // Signed compare: bytes 0x80.. are negative, so `> 0x20` is 0x21..=0x7F.
      masks.printable |= bits(_mm_cmpgt_epi8(v, space)) << shift;
      // movemask takes each byte's top bit: set for 0x80.. and for ESC's 0xFF mask.
      masks.not_plain |= bits(_mm_or_si128(v, _mm_cmpeq_epi8(v, escape))) << shift;
    }
    masks
  }

  #[target_feature(enable = "sse2")]
  pub(super) fn find_either(haystack: &[u8], a: u8, b: u8) -> Option<usize> {
    let (va, vb) = (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8));
    let mut at = 0;
    while at + 16 <= haystack.len() {
      let v = load(haystack, at);
      let hits = bits(_mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)));
      if hits != 0 {
        return Some(at + hits.trailing_zeros() as usize);
      }
      at += 16;
    }
    scalar_find_either(&haystack[at..], a, b).map(|i| at + i)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn check_find(find: fn(&[u8], u8, u8) -> Option<usize>) {
    for len in 0..70 {
      for at in 0..len {
        for needle in [0x1B_u8, 0xC2] {
          let mut hay = vec![b'x'; len];
          hay[at] = needle;
          if at + 3 < len {
            hay[at + 3] = 0x1B;
          }
          assert_eq!(find(&hay, 0x1B, 0xC2), Some(at), "len {len} at {at}");
        }
      }
      assert_eq!(find(&vec![b'x'; len], 0x1B, 0xC2), None);
    }
    // Bytes next to the needles (0x1A, 0x1C, 0xC1, 0xC3, 0x80, 0xFF) never match.
    let near = [0x1A, 0x1C, 0xC1, 0xC3, 0x80, 0xFF, 0x00, 0x9B, 0x1A, 0x1C];
    assert_eq!(find(&near, 0x1B, 0xC2), None);
  }

  #[test]
  fn finds_the_first_of_two_bytes_anywhere() {
    check_find(find_either);
    check_find(swar_find_either);
    check_find(scalar_find_either);
  }

  #[test]
  fn block_masks_classify_every_byte_value_at_every_position() {
    for value in 0..=255u8 {
      for len in [0, 1, 17, 63, 64] {
        for at in 0..len {
          let mut block = vec![b'\t'; len];
          block[at] = value;
          let bit = 1u64 << at;
          let expected = BlockMasks {
            newline: if value == b'\n' { bit } else { 0 },
            printable: if (0x21..=0x7F).contains(&value) {
              bit
            } else {
              0
            },
            not_plain: if value >= 0x80 || value == 0x1B {
              bit
            } else {
              0
            },
          };
          assert_eq!(
            block_masks(&block),
            expected,
            "value {value:#x} at {at} of {len}"
          );
          assert_eq!(portable_block_masks(&block), expected);
        }
      }
    }
  }
}
