//! Escape sequences decided on the raw bytes with the stripper's [`Grammar`], block by block,
//! and the chars at a special UTF-8 lead byte.

use super::simd::*;
use super::*;
use crate::text::ansi::{Attempt, Grammar};
use crate::text::bytes::{digit_mask, EscapeMasks};
use crate::text::csi_bytes::is_csi_final;

/// What the bytes at a [special lead](Utf8Masks::special_lead) decode to, as
/// far as a line is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SpecialChar {
  /// Text (another char, or U+FFFD for bytes that are not UTF-8).
  Text,
  /// A C1 control or whitespace, this many bytes long.
  Blank(usize),
  /// U+009B, a C1 control that also starts a CSI sequence.
  CsiIntroducer,
}

/// The char at the start of `bytes`, which starts with a special lead byte.
/// A lead byte always starts a char for the decoder (it ends any unfinished
/// sequence before it), so this is exactly what the decoder makes of it.
pub(super) fn special_char(bytes: &[u8]) -> SpecialChar {
  match *bytes {
    [0xC2, 0x9B, ..] => SpecialChar::CsiIntroducer,
    // C1 controls U+0080–U+009F, and U+00A0.
    [0xC2, 0x80..=0xA0, ..] => SpecialChar::Blank(2),
    // U+1680.
    [0xE1, 0x9A, 0x80, ..] => SpecialChar::Blank(3),
    // U+2000–U+200A, U+2028, U+2029, U+202F, U+205F.
    [0xE2, 0x80, 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF, ..] | [0xE2, 0x81, 0x9F, ..] => {
      SpecialChar::Blank(3)
    }
    // U+3000, U+FEFF.
    [0xE3, 0x80, 0x80, ..] | [0xEF, 0xBB, 0xBF, ..] => SpecialChar::Blank(3),
    _ => SpecialChar::Text,
  }
}

/// The escape sequences of raw bytes, decided block by block, left to right,
/// as the stripper decides them.
pub(super) struct Sequences<'a> {
  pub(super) grammar: Grammar<'a>,
  pub(super) bytes: &'a [u8],
  /// Where the last sequence matched one at a time ends.
  pub(super) end: usize,
  /// The ESC of a sequence [`bounded_block`] left undecided: it may run past
  /// the block that holds it.
  pub(super) undecided: Option<usize>,
  /// Where the last C1 control or whitespace char found starts and ends.
  pub(super) blank_from: usize,
  pub(super) blank_until: usize,
}

impl<'a> Sequences<'a> {
  pub(super) fn new(bytes: &'a [u8]) -> Self {
    Self {
      grammar: Grammar::new(bytes),
      bytes,
      end: 0,
      undecided: None,
      blank_from: 0,
      blank_until: 0,
    }
  }

  /// The non-ASCII bytes of the block at `at` (`high`) that make a line
  /// non-blank: all but the bytes of C1 controls and whitespace (which
  /// sanitising and trimming remove). Every other non-ASCII byte is part of a
  /// char that is text, or of bytes that are not UTF-8, which the decoder
  /// turns into U+FFFD, text too. Also returns the bit of the first byte
  /// before whose line counting stops (64 if none): in raw bytes, a U+009B
  /// (CSI introducer).
  #[inline(always)]
  pub(super) fn non_ascii<const AVX2: bool>(
    &mut self,
    at: usize,
    block: &[u8],
    high: u64,
    source: Source,
  ) -> (u64, usize) {
    // The continuation bytes of a blank char that started before.
    let mut blank =
      below(self.blank_until.saturating_sub(at)) & !below(self.blank_from.saturating_sub(at));
    if high & !blank == 0 {
      return (0, 64);
    }
    let mut special = utf8_masks_of::<AVX2>(block).special_lead & !blank;
    while special != 0 {
      let bit = special.trailing_zeros() as usize;
      special &= special - 1;
      let len = match special_char(&self.bytes[at + bit..]) {
        SpecialChar::Text => continue,
        SpecialChar::Blank(len) => len,
        SpecialChar::CsiIntroducer if source == Source::Raw => {
          return (high & !blank & below(bit), bit)
        }
        SpecialChar::CsiIntroducer => 2,
      };
      // Its continuation bytes may run into the next block.
      blank |= below(bit + len) & !below(bit);
      (self.blank_from, self.blank_until) = (at + bit, at + bit + len);
    }
    (high & !blank, 64)
  }

  /// Decides the escape sequences of the block at `at` that start before bit
  /// `limit`: the common ones all at once ([`common_csi`]), others one at a
  /// time with the grammar. Returns the bits they cover and the bit of the
  /// first ESC whose verdict needs bytes past the end of `bytes` (64 if none).
  #[inline(always)]
  pub(super) fn in_block(
    &mut self,
    at: usize,
    block: &[u8],
    masks: &EscapeMasks,
    limit: usize,
  ) -> (u64, usize) {
    let carried = below(self.end.saturating_sub(at));
    let escapes = masks.escape & !carried & below(limit);
    if escapes == 0 {
      return (carried, 64);
    }
    let (mut removed, mut rest) = (carried, escapes);
    if let Some((covered, taken)) = common_csi(block, masks, escapes) {
      if taken == block.len() {
        return (carried | covered, 64);
      }
      // Sequences from bit `taken` on run past the block: one at a time.
      (removed, rest) = (carried | covered, escapes & !below(taken));
    }
    while rest != 0 {
      let bit = rest.trailing_zeros() as usize;
      rest &= rest - 1;
      let start = at + bit;
      if start < self.end {
        continue;
      }
      if let Some(end) = common_csi_at(self.bytes, start) {
        self.end = end;
        removed |= below(end - at) & !below(bit);
        continue;
      }
      match self.grammar.attempt(start, false) {
        Attempt::Match(end) => {
          self.end = end;
          removed |= below(end - at) & !below(bit);
        }
        Attempt::NoMatch => {}
        Attempt::NeedMore => return (removed, bit),
      }
    }
    debug_assert!(self.end <= self.bytes.len());
    (removed, 64)
  }
}

impl Sequences<'_> {
  /// After a bounded block at `at` with ESCs at `escapes` and bytes no CSI
  /// sequence holds at `not_csi` (ESC among them; not empty, so a sequence
  /// left from before ends in the block): its last sequence is left undecided
  /// when nothing but CSI bytes follows its ESC in the block.
  #[cfg(target_arch = "x86_64")]
  #[inline(always)]
  pub(super) fn leave_undecided(&mut self, at: usize, escapes: u64, not_csi: u64) {
    debug_assert!(not_csi != 0);
    let last = 63 - not_csi.leading_zeros() as usize;
    self.undecided = (escapes >> last & 1 == 1).then_some(at + last);
  }

  /// Decides the sequence [`bounded_block`] left undecided, so that
  /// [`end`](Self::end) says where it ends. A verdict that needs bytes past the
  /// end leaves `end` as it is: such a sequence holds no newline and runs to
  /// the end, so no line after its ESC ends in the bytes.
  pub(super) fn settle(&mut self) {
    let Some(start) = self.undecided.take() else {
      return;
    };
    if start < self.end {
      return;
    }
    let decided = match common_csi_at(self.bytes, start) {
      Some(end) => Attempt::Match(end),
      None => self.grammar.attempt(start, false),
    };
    if let Attempt::Match(end) = decided {
      self.end = end;
    }
  }

  /// True when the complete line from `start` (nothing held there) to the
  /// `\n` at `end` has a printable byte outside escape sequences.
  pub(super) fn line_has_text(&mut self, start: usize, end: usize) -> bool {
    let mut pos = start;
    loop {
      let next = self
        .grammar
        .next_introducer(pos)
        .filter(|&introducer| introducer < end)
        .unwrap_or(end);
      if self.bytes[pos..next]
        .iter()
        .any(|&b| (0x21..0x80).contains(&b))
      {
        return true;
      }
      if next == end {
        return false;
      }
      pos = match self.grammar.attempt(next, false) {
        Attempt::Match(end) => end,
        _ => next + self.grammar.introducer_len(next),
      };
    }
  }
}

/// The bytes that end a CSI sequence (`is_csi_final`).
pub(super) static CSI_FINAL: [bool; 256] = {
  let mut table = [false; 256];
  let mut byte = 0;
  while byte < 256 {
    table[byte] = is_csi_final(byte as u8);
    byte += 1;
  }
  table
};

/// The bits covered by the escape sequences at `escapes`, when each of them is
/// the common `ESC [ <digits and ;> <final>` (colours, cursor moves), with no
/// digit group longer than the grammar's four; `None` otherwise. Also returns
/// how many bits of the block that decides: all, or (when the last sequence
/// may not end in the block) up to its ESC. The grammar matches exactly such
/// a sequence whole: `[` and any `;` right after it are its prefix run, then
/// come the parameters, each group of digits taken whole, and the first other
/// byte is the final.
///
/// All at once: with `F` the bits just after each `ESC [` and `R` the digit
/// and `;` bits, `(R + (F & R)) & !R` are the ends of the parameter runs that
/// start at `F`, `F & !R` those of empty runs, and the ends shifted up by one
/// minus the starts cover each sequence from its ESC to its final.
#[inline(always)]
pub(super) fn common_csi(block: &[u8], masks: &EscapeMasks, escapes: u64) -> Option<(u64, usize)> {
  let mut taken = block.len();
  let mut starts = escapes;
  if starts == 0 {
    return Some((0, taken));
  }
  let last = 63 - starts.leading_zeros() as usize;
  if last + 2 >= taken {
    // Its `[` or first parameter is past the block.
    (starts, taken) = (starts & below(last), last);
  }
  if starts & !(masks.bracket >> 1) != 0 {
    return None;
  }
  let (mut ends, overflow) = run_ends(starts, masks.params & below(taken));
  if overflow || ends & !below(taken.min(63)) != 0 {
    // The last sequence ends past the block (or at its last bit, which the
    // cover below could not shift): take the block up to its ESC.
    let last = 63 - starts.leading_zeros() as usize;
    (starts, taken) = (starts & below(last), last);
    (ends, _) = run_ends(starts, masks.params & below(taken));
  }
  if taken == 0 {
    return None;
  }
  let mut finals = ends & !masks.final_m;
  while finals != 0 {
    if !CSI_FINAL[usize::from(block[finals.trailing_zeros() as usize])] {
      return None;
    }
    finals &= finals - 1;
  }
  let covered = (ends << 1).wrapping_sub(starts);
  let params = masks.params;
  let five = params & params >> 1 & params >> 2 & params >> 3 & params >> 4;
  if five & covered != 0 {
    // Five parameter bytes in a row: the grammar takes at most four digits.
    let digit = digit_mask(block);
    let five = digit & digit >> 1 & digit >> 2 & digit >> 3 & digit >> 4;
    if five & covered != 0 {
      return None;
    }
  }
  Some((covered, taken))
}

/// [`common_csi`] for the one sequence at `start`: where it ends when it is
/// the common `ESC [ <digits and ;> <final>`, with no digit group longer
/// than four and the final in `bytes`; `None` otherwise.
#[inline]
pub(super) fn common_csi_at(bytes: &[u8], start: usize) -> Option<usize> {
  if bytes.get(start + 1) != Some(&b'[') {
    return None;
  }
  let mut digits = 0;
  for (i, &byte) in bytes.iter().enumerate().skip(start + 2) {
    match byte {
      b'0'..=b'9' if digits < 4 => digits += 1,
      b';' => digits = 0,
      b'0'..=b'9' => return None,
      _ => return CSI_FINAL[usize::from(byte)].then_some(i + 1),
    }
  }
  None
}

/// For ESCs at `starts` (each followed by `[`), the bit of the first byte after
/// each one's parameter run (`params` set bits), found with one addition; a
/// run that reaches past bit 63 has no end bit, and then the flag is set.
#[inline]
pub(super) fn run_ends(starts: u64, params: u64) -> (u64, bool) {
  let first = starts << 2;
  let (sum, overflow) = params.overflowing_add(first & params);
  ((sum & !params) | (first & !params), overflow)
}
