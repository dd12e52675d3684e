//! The per-block bit masks of the fast paths, with AVX2 where the CPU has it (only ever in
//! code that runs after `avx2::available`), and the carry trick that finds the lines with
//! text in a block. The masks themselves are computed in `text/bytes/`.

#[cfg(target_arch = "x86_64")]
use crate::text::bytes::avx2;
use crate::text::bytes::{
  block_masks, escape_masks, utf8_masks, whitespace_mask, BlockMasks, EscapeMasks, Utf8Masks,
};

/// `bits` low bits set.
#[inline]
pub(super) fn below(bits: usize) -> u64 {
  if bits >= 64 {
    !0
  } else {
    (1u64 << bits) - 1
  }
}

/// [`block_masks`] of a block, with AVX2 when `AVX2` (only ever true in code
/// that runs after [`avx2::available`]).
#[inline(always)]
pub(super) fn block_masks_of<const AVX2: bool>(block: &[u8]) -> BlockMasks {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::block_masks_64(block) };
  }
  block_masks(block)
}

/// [`utf8_masks`] of a block, as [`block_masks_of`].
#[inline(always)]
pub(super) fn utf8_masks_of<const AVX2: bool>(block: &[u8]) -> Utf8Masks {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::utf8_masks_64(block) };
  }
  utf8_masks(block)
}

/// [`escape_masks`] of a block, as [`block_masks_of`].
#[inline(always)]
pub(super) fn escape_masks_of<const AVX2: bool>(block: &[u8]) -> EscapeMasks {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::escape_masks_64(block) };
  }
  escape_masks(block)
}

/// The newlines that end a line with text (`sum & newline`) and whether the
/// line running out of the block has text, given whether it had some before.
/// Adding `text` to `!newline` carries out of every run of non-newline bits
/// that holds a text bit, into the `\n` that ends it.
#[inline(always)]
pub fn carry_add(newline: u64, text: u64, carry: bool) -> (u64, bool) {
  let (partial, carry_a) = (!newline).overflowing_add(text);
  let (sum, carry_b) = partial.overflowing_add(u64::from(carry));
  (sum, carry_a || carry_b)
}

/// [`whitespace_mask`] of a block, as [`block_masks_of`].
#[inline(always)]
pub(super) fn whitespace_mask_of<const AVX2: bool>(block: &[u8]) -> u64 {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::whitespace_mask_64(block) };
  }
  whitespace_mask(block)
}
