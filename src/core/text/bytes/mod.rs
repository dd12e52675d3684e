//! Byte scans for the hot path of the stream pipelines: sixteen bytes at a time with SSE2 on
//! x86_64 (part of its baseline, so always present), eight bytes at a time (SWAR) elsewhere. Both
//! paths are tested (`tests.rs`) on every target that has them.

const ESC: u8 = 0x1B;
/// UTF-8 lead byte of U+0080–U+00BF (the C1 controls among them).
const C1_LEAD: u8 = 0xC2;
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

/// Bit masks for finding plain lines (`text::plain`), as [`BlockMasks`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlainMasks {
  /// `\n`.
  pub newline: u64,
  /// `\r`.
  pub carriage_return: u64,
  /// Space and TAB.
  pub blank: u64,
  /// Bytes other than `0x20..=0x7F` but `<`, TAB, `\n` and `\r`.
  pub other: u64,
}

/// [`PlainMasks`] of `block` (`block.len() <= 64`).
#[inline]
pub fn plain_masks(block: &[u8]) -> PlainMasks {
  debug_assert!(block.len() <= 64);
  #[cfg(target_arch = "x86_64")]
  if block.len() == 64 {
    // SAFETY: SSE2 is part of the x86_64 baseline, and the block is 64 bytes.
    return unsafe { sse2::plain_masks_64(block) };
  }
  portable_plain_masks(block)
}

/// [`plain_masks`] with AVX2 when `AVX2` (only ever true in code compiled with
/// `#[target_feature(enable = "avx2")]` that runs after [`has_avx2`]).
#[inline(always)]
pub fn plain_masks_of<const AVX2: bool>(block: &[u8]) -> PlainMasks {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `has_avx2()`.
    return unsafe { avx2::plain_masks_64(block) };
  }
  plain_masks(block)
}

/// True when the CPU has AVX2 and its bit instructions ([`avx2::available`]).
#[cfg(target_arch = "x86_64")]
pub fn has_avx2() -> bool {
  avx2::available()
}

fn portable_plain_masks(block: &[u8]) -> PlainMasks {
  let mut masks = PlainMasks::default();
  for (i, &b) in block.iter().enumerate() {
    masks.newline |= u64::from(b == b'\n') << i;
    masks.carriage_return |= u64::from(b == b'\r') << i;
    masks.blank |= u64::from(b == b' ' || b == b'\t') << i;
    let kept = (0x20..0x80).contains(&b) && b != b'<' || matches!(b, b'\t' | b'\n' | b'\r');
    masks.other |= u64::from(!kept) << i;
  }
  masks
}

/// Bit masks of the bytes CSI sequences are made of, as [`BlockMasks`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EscapeMasks {
  /// ESC.
  pub escape: u64,
  /// `[`.
  pub bracket: u64,
  /// Parameter bytes: ASCII digits and `;`.
  pub params: u64,
  /// `m`, the commonest final (colours).
  pub final_m: u64,
}

/// [`EscapeMasks`] of `block` (`block.len() <= 64`; bits past its end are 0).
#[inline]
pub fn escape_masks(block: &[u8]) -> EscapeMasks {
  debug_assert!(block.len() <= 64);
  #[cfg(target_arch = "x86_64")]
  if block.len() == 64 {
    // SAFETY: SSE2 is part of the x86_64 baseline, and the block is 64 bytes.
    return unsafe { sse2::escape_masks_64(block) };
  }
  portable_escape_masks(block)
}

fn portable_escape_masks(block: &[u8]) -> EscapeMasks {
  let mut masks = EscapeMasks::default();
  for (i, &b) in block.iter().enumerate() {
    masks.escape |= u64::from(b == ESC) << i;
    masks.bracket |= u64::from(b == b'[') << i;
    masks.params |= u64::from(b.is_ascii_digit() || b == b';') << i;
    masks.final_m |= u64::from(b == b'm') << i;
  }
  masks
}

/// Bit masks of one 64-byte block for blocks whose escape sequences take the
/// CSI alternative (bit `i` = byte `i`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CsiClassMasks {
  /// ESC.
  pub escape: u64,
  /// `]`, which after an ESC starts an OSC.
  pub close_bracket: u64,
  /// Bytes no match of the CSI alternative can hold ([`is_csi_byte`]).
  pub not_csi: u64,
}

/// Bit masks of the non-ASCII bytes of one block of at most 64 bytes (bit `i`
/// = byte `i`), for valid UTF-8.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Utf8Masks {
  /// Lead bytes of the only blocks of chars that hold C1 controls or
  /// whitespace: `C2` (U+0080–U+00BF), `E1` (U+1000–U+1FFF), `E2`
  /// (U+2000–U+2FFF), `E3` (U+3000–U+3FFF) and `EF` (U+F000–U+FFFF).
  pub special_lead: u64,
}

/// [`Utf8Masks`] of `block` (`block.len() <= 64`; bits past its end are 0).
#[inline]
pub fn utf8_masks(block: &[u8]) -> Utf8Masks {
  debug_assert!(block.len() <= 64);
  #[cfg(target_arch = "x86_64")]
  if block.len() == 64 {
    // SAFETY: SSE2 is part of the x86_64 baseline, and the block is 64 bytes.
    return unsafe { sse2::utf8_masks_64(block) };
  }
  portable_utf8_masks(block)
}

/// True for the lead bytes of [`Utf8Masks::special_lead`].
#[inline]
fn is_special_lead(byte: u8) -> bool {
  matches!(byte, 0xC2 | 0xE1 | 0xE2 | 0xE3 | 0xEF)
}

fn portable_utf8_masks(block: &[u8]) -> Utf8Masks {
  let mut masks = Utf8Masks::default();
  for (i, &b) in block.iter().enumerate() {
    masks.special_lead |= u64::from(is_special_lead(b)) << i;
  }
  masks
}

/// The ASCII whitespace bytes (TAB, LF, VT, FF, CR and space) of `block`
/// (`block.len() <= 64`) as a bit mask.
#[inline]
pub fn whitespace_mask(block: &[u8]) -> u64 {
  debug_assert!(block.len() <= 64);
  #[cfg(target_arch = "x86_64")]
  if block.len() == 64 {
    // SAFETY: SSE2 is part of the x86_64 baseline, and the block is 64 bytes.
    return unsafe { sse2::whitespace_mask_64(block) };
  }
  portable_whitespace_mask(block)
}

fn portable_whitespace_mask(block: &[u8]) -> u64 {
  block.iter().enumerate().fold(0, |mask, (i, &b)| {
    mask | u64::from(matches!(b, b'\t'..=b'\r' | b' ')) << i
  })
}

/// The ASCII digits of `block` (`block.len() <= 64`) as a bit mask.
pub fn digit_mask(block: &[u8]) -> u64 {
  debug_assert!(block.len() <= 64);
  block
    .iter()
    .enumerate()
    .fold(0, |mask, (i, b)| mask | u64::from(b.is_ascii_digit()) << i)
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

/// The first `\n`, ESC or non-ASCII byte of `haystack`: where plain text
/// (which the decoder and the ANSI stripper pass unchanged) or the line ends.
pub fn find_line_end_or_not_plain(haystack: &[u8]) -> Option<usize> {
  find_line_special::<true>(haystack)
}

/// The first `\n`, ESC or `0xC2` byte of `haystack`, for valid UTF-8: where
/// the line ends or an escape sequence may start (`0xC2` leads U+009B, the
/// one-char CSI introducer, and the other C1 controls).
pub fn find_line_end_or_introducer(haystack: &[u8]) -> Option<usize> {
  find_line_special::<false>(haystack)
}

#[inline]
fn is_line_special<const ANY_HIGH: bool>(byte: u8) -> bool {
  byte == b'\n'
    || byte == ESC
    || if ANY_HIGH {
      byte >= 0x80
    } else {
      byte == C1_LEAD
    }
}

fn find_line_special<const ANY_HIGH: bool>(haystack: &[u8]) -> Option<usize> {
  #[cfg(target_arch = "x86_64")]
  {
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe { sse2::find_line_special::<ANY_HIGH>(haystack) }
  }
  #[cfg(not(target_arch = "x86_64"))]
  swar_find_line_special::<ANY_HIGH>(haystack)
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn swar_find_line_special<const ANY_HIGH: bool>(haystack: &[u8]) -> Option<usize> {
  let (newline, escape, lead) = (
    LO * u64::from(b'\n'),
    LO * u64::from(ESC),
    LO * u64::from(C1_LEAD),
  );
  let mut start = 0;
  let mut words = haystack.chunks_exact(8);
  for word in words.by_ref() {
    let word = u64::from_le_bytes([
      word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
    ]);
    let third = if ANY_HIGH {
      word & HI != 0
    } else {
      has_zero_byte(word ^ lead)
    };
    if third || has_zero_byte(word ^ newline) || has_zero_byte(word ^ escape) {
      break;
    }
    start += 8;
  }
  scalar_find_line_special::<ANY_HIGH>(&haystack[start..]).map(|i| start + i)
}

fn scalar_find_line_special<const ANY_HIGH: bool>(haystack: &[u8]) -> Option<usize> {
  haystack
    .iter()
    .position(|&b| is_line_special::<ANY_HIGH>(b))
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

/// [`PlainMasks`] with AVX-512 (BW) 64 bytes at a time, for code compiled with
/// those features behind [`avx512::available`]: the compares give the bit masks
/// directly.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
  use std::arch::x86_64::{
    __m512i, _mm512_and_si512, _mm512_broadcast_i32x4, _mm512_cmpeq_epi8_mask,
    _mm512_cmpgt_epi8_mask, _mm512_loadu_si512, _mm512_set1_epi8, _mm512_shuffle_epi8,
    _mm512_srli_epi16, _mm_loadu_si128,
  };

  use super::PlainMasks;

  /// True when the CPU has AVX-512 F and BW, and what [`super::avx2`] needs.
  pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx512f")
      && std::is_x86_feature_detected!("avx512bw")
      && super::avx2::available()
  }

  /// Loads bytes `at..at + 64` of `bytes`; panics when they are not all there.
  #[inline]
  #[target_feature(enable = "avx512f,avx512bw")]
  pub(crate) fn load(bytes: &[u8], at: usize) -> __m512i {
    let lane: &[u8; 64] = bytes[at..at + 64].try_into().expect("64 bytes");
    // SAFETY: `lane` is 64 readable bytes; the load is unaligned.
    unsafe { _mm512_loadu_si512(lane.as_ptr().cast()) }
  }

  /// A 16-entry nibble table in each of the four 128-bit lanes (`vpshufb` looks up within
  /// each lane).
  #[inline]
  #[target_feature(enable = "avx512f,avx512bw")]
  pub(crate) fn nibble_table(entries: &[u8; 16]) -> __m512i {
    // SAFETY: `entries` is 16 readable bytes; the load is unaligned.
    _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(entries.as_ptr().cast()) })
  }

  /// [`super::avx2::nibble_classes`], 64 bytes at a time.
  #[inline]
  #[target_feature(enable = "avx512f,avx512bw")]
  pub(crate) fn nibble_classes(v: __m512i, low: __m512i, high: __m512i) -> __m512i {
    let nibble = _mm512_set1_epi8(0x0F);
    _mm512_and_si512(
      _mm512_shuffle_epi8(low, _mm512_and_si512(v, nibble)),
      _mm512_shuffle_epi8(high, _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble)),
    )
  }

  /// [`super::plain_masks`] of a 64-byte block.
  #[inline]
  #[target_feature(enable = "avx512f,avx512bw")]
  pub(crate) fn plain_masks_64(block: &[u8]) -> PlainMasks {
    let block: &[u8; 64] = block.try_into().expect("64 bytes");
    // SAFETY: `block` is 64 readable bytes; the load is unaligned.
    let v = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
    let newline = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\n' as i8));
    let carriage_return = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\r' as i8));
    let tab = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\t' as i8));
    let space = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b' ' as i8));
    let less = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'<' as i8));
    // Signed compare: bytes 0x80.. are negative, so `> 0x1F` is 0x20..=0x7F.
    let text = _mm512_cmpgt_epi8_mask(v, _mm512_set1_epi8(0x1F)) & !less;
    PlainMasks {
      newline,
      carriage_return,
      blank: tab | space,
      other: !(text | tab | newline | carriage_return),
    }
  }
}

/// The same masks with AVX2, 32 bytes at a time, for code compiled with AVX2
/// and the bit instructions that come with it, behind [`avx2::available`].
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
  use std::arch::x86_64::{
    __m256i, _mm256_and_si256, _mm256_andnot_si256, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8,
    _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
    _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16,
  };

  use super::{BlockMasks, CsiClassMasks, EscapeMasks, PlainMasks, Utf8Masks, ESC};
  use crate::text::csi_bytes::is_csi_byte;

  /// True when the CPU has AVX2, POPCNT, LZCNT, BMI1 and BMI2 (every AVX2 CPU
  /// has the others). Cached by the standard library after the first call.
  pub(crate) fn available() -> bool {
    std::is_x86_feature_detected!("avx2")
      && std::is_x86_feature_detected!("popcnt")
      && std::is_x86_feature_detected!("lzcnt")
      && std::is_x86_feature_detected!("bmi1")
      && std::is_x86_feature_detected!("bmi2")
  }

  /// Loads bytes `at..at + 32` of `bytes`; panics when they are not all there.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn load(bytes: &[u8], at: usize) -> __m256i {
    let lane: &[u8; 32] = bytes[at..at + 32].try_into().expect("32 bytes");
    // SAFETY: `lane` is 32 readable bytes; the load is unaligned.
    unsafe { _mm256_loadu_si256(lane.as_ptr().cast()) }
  }

  /// A 16-entry nibble table in both 128-bit lanes (`vpshufb` looks up within each lane).
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn nibble_table(entries: &[u8; 16]) -> __m256i {
    let mut both = [0u8; 32];
    both[..16].copy_from_slice(entries);
    both[16..].copy_from_slice(entries);
    load(&both, 0)
  }

  /// For each byte of `v`, the entry of its low nibble in `low` AND the entry of its high
  /// nibble in `high`: the classes (one per bit) that the byte may be in.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn nibble_classes(v: __m256i, low: __m256i, high: __m256i) -> __m256i {
    let nibble = _mm256_set1_epi8(0x0F);
    _mm256_and_si256(
      _mm256_shuffle_epi8(low, _mm256_and_si256(v, nibble)),
      _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)),
    )
  }

  /// Bit `i` set when byte `i` of `v` is not zero.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn nonzero_bits(v: __m256i) -> u32 {
    !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_setzero_si256())) as u32)
  }

  #[inline]
  #[target_feature(enable = "avx2")]
  fn bits(mask: __m256i) -> u64 {
    u64::from(_mm256_movemask_epi8(mask) as u32)
  }

  /// [`super::block_masks`] of a 64-byte block.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn block_masks_64(block: &[u8]) -> BlockMasks {
    let newline = _mm256_set1_epi8(b'\n' as i8);
    let space = _mm256_set1_epi8(b' ' as i8);
    let escape = _mm256_set1_epi8(ESC as i8);
    let mut masks = BlockMasks::default();
    for lane in 0..2 {
      let v = load(block, lane * 32);
      let shift = lane * 32;
      masks.newline |= bits(_mm256_cmpeq_epi8(v, newline)) << shift;
      masks.printable |= bits(_mm256_cmpgt_epi8(v, space)) << shift;
      masks.not_plain |= bits(_mm256_or_si256(v, _mm256_cmpeq_epi8(v, escape))) << shift;
    }
    masks
  }

  /// [`super::plain_masks`] of a 64-byte block.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn plain_masks_64(block: &[u8]) -> PlainMasks {
    let newline = _mm256_set1_epi8(b'\n' as i8);
    let carriage_return = _mm256_set1_epi8(b'\r' as i8);
    let space = _mm256_set1_epi8(b' ' as i8);
    let tab = _mm256_set1_epi8(b'\t' as i8);
    let less = _mm256_set1_epi8(b'<' as i8);
    let below_space = _mm256_set1_epi8(0x1F);
    let mut masks = PlainMasks::default();
    for lane in 0..2 {
      let v = load(block, lane * 32);
      let shift = lane * 32;
      let is_newline = _mm256_cmpeq_epi8(v, newline);
      let is_cr = _mm256_cmpeq_epi8(v, carriage_return);
      let is_tab = _mm256_cmpeq_epi8(v, tab);
      // Signed compare: bytes 0x80.. are negative, so `> 0x1F` is 0x20..=0x7F.
      let text = _mm256_andnot_si256(
        _mm256_cmpeq_epi8(v, less),
        _mm256_cmpgt_epi8(v, below_space),
      );
      let kept = _mm256_or_si256(
        _mm256_or_si256(text, is_tab),
        _mm256_or_si256(is_newline, is_cr),
      );
      masks.newline |= bits(is_newline) << shift;
      masks.carriage_return |= bits(is_cr) << shift;
      masks.blank |= bits(_mm256_or_si256(is_tab, _mm256_cmpeq_epi8(v, space))) << shift;
      masks.other |= (!bits(kept) & 0xFFFF_FFFF) << shift;
    }
    masks
  }

  /// The low-nibble half of a two-lookup test for [`is_csi_byte`]: for each
  /// low nibble, the set of high nibbles (a bit per nibble, 0 to 7) that make a
  /// byte of the class; twice, one per 128-bit lane.
  static CSI_LOW_NIBBLES: [u8; 32] = {
    let mut table = [0u8; 32];
    let mut byte = 0;
    while byte < 128 {
      if is_csi_byte(byte as u8) {
        table[byte & 15] |= 1 << (byte >> 4);
        table[16 + (byte & 15)] |= 1 << (byte >> 4);
      }
      byte += 1;
    }
    table
  };

  /// For a high nibble, its bit in [`CSI_LOW_NIBBLES`] (none for non-ASCII).
  static HIGH_NIBBLE_BITS: [u8; 32] = [
    1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0, //
    1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0,
  ];

  /// [`CsiClassMasks`] of a 64-byte block.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn csi_class_masks_64(block: &[u8]) -> CsiClassMasks {
    let escape = _mm256_set1_epi8(ESC as i8);
    let close_bracket = _mm256_set1_epi8(b']' as i8);
    let low_table = load(&CSI_LOW_NIBBLES, 0);
    let high_table = load(&HIGH_NIBBLE_BITS, 0);
    let mut masks = CsiClassMasks::default();
    for lane in 0..2 {
      let v = load(block, lane * 32);
      let shift = lane * 32;
      masks.escape |= bits(_mm256_cmpeq_epi8(v, escape)) << shift;
      masks.close_bracket |= bits(_mm256_cmpeq_epi8(v, close_bracket)) << shift;
      let class = nibble_classes(v, low_table, high_table);
      masks.not_csi |= u64::from(!nonzero_bits(class)) << shift;
    }
    masks
  }

  /// [`super::utf8_masks`] of a 64-byte block.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn utf8_masks_64(block: &[u8]) -> Utf8Masks {
    let mut masks = Utf8Masks::default();
    for lane in 0..2 {
      let v = load(block, lane * 32);
      let shift = lane * 32;
      let mut special = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(0xC2_u8 as i8));
      for lead in [0xE1_u8, 0xE2, 0xE3, 0xEF] {
        special = _mm256_or_si256(special, _mm256_cmpeq_epi8(v, _mm256_set1_epi8(lead as i8)));
      }
      masks.special_lead |= bits(special) << shift;
    }
    masks
  }

  /// [`super::whitespace_mask`] of a 64-byte block.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn whitespace_mask_64(block: &[u8]) -> u64 {
    let (space, below_tab, above_cr) = (
      _mm256_set1_epi8(b' ' as i8),
      _mm256_set1_epi8(b'\t' as i8 - 1),
      _mm256_set1_epi8(b'\r' as i8 + 1),
    );
    let mut mask = 0;
    for lane in 0..2 {
      let v = load(block, lane * 32);
      let controls = _mm256_and_si256(
        _mm256_cmpgt_epi8(v, below_tab),
        _mm256_cmpgt_epi8(above_cr, v),
      );
      mask |= bits(_mm256_or_si256(controls, _mm256_cmpeq_epi8(v, space))) << (lane * 32);
    }
    mask
  }

  /// [`super::escape_masks`] of a 64-byte block.
  #[inline]
  #[target_feature(enable = "avx2")]
  pub(crate) fn escape_masks_64(block: &[u8]) -> EscapeMasks {
    let escape = _mm256_set1_epi8(ESC as i8);
    let bracket = _mm256_set1_epi8(b'[' as i8);
    let semicolon = _mm256_set1_epi8(b';' as i8);
    let final_m = _mm256_set1_epi8(b'm' as i8);
    let below_zero = _mm256_set1_epi8(b'0' as i8 - 1);
    let above_nine = _mm256_set1_epi8(b'9' as i8 + 1);
    let mut masks = EscapeMasks::default();
    for lane in 0..2 {
      let v = load(block, lane * 32);
      let shift = lane * 32;
      masks.escape |= bits(_mm256_cmpeq_epi8(v, escape)) << shift;
      masks.bracket |= bits(_mm256_cmpeq_epi8(v, bracket)) << shift;
      masks.final_m |= bits(_mm256_cmpeq_epi8(v, final_m)) << shift;
      // Signed compares: bytes 0x80.. are negative, so never digits.
      let digit = _mm256_and_si256(
        _mm256_cmpgt_epi8(v, below_zero),
        _mm256_cmpgt_epi8(above_nine, v),
      );
      masks.params |= bits(_mm256_or_si256(digit, _mm256_cmpeq_epi8(v, semicolon))) << shift;
    }
    masks
  }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
  use std::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8,
    _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
  };

  use super::{
    scalar_find_either, scalar_find_line_special, BlockMasks, EscapeMasks, PlainMasks, Utf8Masks,
    C1_LEAD, ESC,
  };

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
  pub(super) fn plain_masks_64(block: &[u8]) -> PlainMasks {
    let newline = _mm_set1_epi8(b'\n' as i8);
    let carriage_return = _mm_set1_epi8(b'\r' as i8);
    let space = _mm_set1_epi8(b' ' as i8);
    let tab = _mm_set1_epi8(b'\t' as i8);
    let less = _mm_set1_epi8(b'<' as i8);
    let below_space = _mm_set1_epi8(0x1F);
    let mut masks = PlainMasks::default();
    for lane in 0..4 {
      let v = load(block, lane * 16);
      let shift = lane * 16;
      let is_newline = _mm_cmpeq_epi8(v, newline);
      let is_cr = _mm_cmpeq_epi8(v, carriage_return);
      let is_tab = _mm_cmpeq_epi8(v, tab);
      // Signed compare: bytes 0x80.. are negative, so `> 0x1F` is 0x20..=0x7F.
      let text = _mm_andnot_si128(_mm_cmpeq_epi8(v, less), _mm_cmpgt_epi8(v, below_space));
      let kept = _mm_or_si128(_mm_or_si128(text, is_tab), _mm_or_si128(is_newline, is_cr));
      masks.newline |= bits(is_newline) << shift;
      masks.carriage_return |= bits(is_cr) << shift;
      masks.blank |= bits(_mm_or_si128(is_tab, _mm_cmpeq_epi8(v, space))) << shift;
      masks.other |= (!bits(kept) & 0xFFFF) << shift;
    }
    masks
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

  #[inline]
  #[target_feature(enable = "sse2")]
  pub(super) fn escape_masks_64(block: &[u8]) -> EscapeMasks {
    let escape = _mm_set1_epi8(ESC as i8);
    let bracket = _mm_set1_epi8(b'[' as i8);
    let semicolon = _mm_set1_epi8(b';' as i8);
    let final_m = _mm_set1_epi8(b'm' as i8);
    let below_zero = _mm_set1_epi8(b'0' as i8 - 1);
    let above_nine = _mm_set1_epi8(b'9' as i8 + 1);
    let mut masks = EscapeMasks::default();
    for lane in 0..4 {
      let v = load(block, lane * 16);
      let shift = lane * 16;
      masks.escape |= bits(_mm_cmpeq_epi8(v, escape)) << shift;
      masks.bracket |= bits(_mm_cmpeq_epi8(v, bracket)) << shift;
      // Signed compares: bytes 0x80.. are negative, so never digits.
      let digit = _mm_and_si128(_mm_cmpgt_epi8(v, below_zero), _mm_cmplt_epi8(v, above_nine));
      masks.params |= bits(_mm_or_si128(digit, _mm_cmpeq_epi8(v, semicolon))) << shift;
      masks.final_m |= bits(_mm_cmpeq_epi8(v, final_m)) << shift;
    }
    masks
  }

  /// One lane of [`super::find_line_special`]: top bit set on the bytes sought.
  #[inline]
  #[target_feature(enable = "sse2")]
  fn special_lane<const ANY_HIGH: bool>(v: __m128i) -> __m128i {
    let newline = _mm_set1_epi8(b'\n' as i8);
    let escape = _mm_set1_epi8(ESC as i8);
    let hits = _mm_or_si128(_mm_cmpeq_epi8(v, newline), _mm_cmpeq_epi8(v, escape));
    if ANY_HIGH {
      _mm_or_si128(hits, v)
    } else {
      _mm_or_si128(hits, _mm_cmpeq_epi8(v, _mm_set1_epi8(C1_LEAD as i8)))
    }
  }

  #[target_feature(enable = "sse2")]
  pub(super) fn find_line_special<const ANY_HIGH: bool>(haystack: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at + 64 <= haystack.len() {
      let m0 = special_lane::<ANY_HIGH>(load(haystack, at));
      let m1 = special_lane::<ANY_HIGH>(load(haystack, at + 16));
      let m2 = special_lane::<ANY_HIGH>(load(haystack, at + 32));
      let m3 = special_lane::<ANY_HIGH>(load(haystack, at + 48));
      let any = _mm_or_si128(_mm_or_si128(m0, m1), _mm_or_si128(m2, m3));
      if _mm_movemask_epi8(any) != 0 {
        let hits = bits(m0) | bits(m1) << 16 | bits(m2) << 32 | bits(m3) << 48;
        return Some(at + hits.trailing_zeros() as usize);
      }
      at += 64;
    }
    while at + 16 <= haystack.len() {
      let hits = bits(special_lane::<ANY_HIGH>(load(haystack, at)));
      if hits != 0 {
        return Some(at + hits.trailing_zeros() as usize);
      }
      at += 16;
    }
    scalar_find_line_special::<ANY_HIGH>(&haystack[at..]).map(|i| at + i)
  }

  #[inline]
  #[target_feature(enable = "sse2")]
  pub(super) fn utf8_masks_64(block: &[u8]) -> Utf8Masks {
    let mut masks = Utf8Masks::default();
    for lane in 0..4 {
      let v = load(block, lane * 16);
      let shift = lane * 16;
      let mut special = _mm_cmpeq_epi8(v, _mm_set1_epi8(0xC2_u8 as i8));
      for lead in [0xE1_u8, 0xE2, 0xE3, 0xEF] {
        special = _mm_or_si128(special, _mm_cmpeq_epi8(v, _mm_set1_epi8(lead as i8)));
      }
      masks.special_lead |= bits(special) << shift;
    }
    masks
  }

  #[inline]
  #[target_feature(enable = "sse2")]
  pub(super) fn whitespace_mask_64(block: &[u8]) -> u64 {
    let (space, below_tab, above_cr) = (
      _mm_set1_epi8(b' ' as i8),
      _mm_set1_epi8(b'\t' as i8 - 1),
      _mm_set1_epi8(b'\r' as i8 + 1),
    );
    let mut mask = 0;
    for lane in 0..4 {
      let v = load(block, lane * 16);
      let controls = _mm_and_si128(_mm_cmpgt_epi8(v, below_tab), _mm_cmplt_epi8(v, above_cr));
      mask |= bits(_mm_or_si128(controls, _mm_cmpeq_epi8(v, space))) << (lane * 16);
    }
    mask
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
mod tests;
