//! Lines counted and discarded without building them, straight from the raw
//! bytes of a read: what a monitor does with a read the throttle rejects whole
//! (the firehose case, CONTRACT.md §2.10) and with the rest of an over-long
//! line. The definition is the exact path (decoder, ANSI stripper, line
//! splitter, `throttledEmit`); these functions give the same counts, or stop
//! where they cannot, and the caller takes the exact path from there.
//!
//! Both start where the decoder and the stripper hold nothing, so a byte is
//! either plain text (ASCII other than ESC: decoded and stripped unchanged),
//! part of an escape sequence (which the stripper removes; the same
//! [`Grammar`] decides it here, on the raw bytes, which gives the same verdicts
//! as on their lossy decoding), part of a non-ASCII char (or of bytes that are
//! not UTF-8, which the decoder turns into U+FFFD, never swallowing an ASCII
//! byte), or something they leave to the exact path. Sequences are decided
//! with the bytes that follow them in the read and never with "the text ends
//! here", so a sequence that could still be completed by a later read is where
//! they stop, exactly as the streaming stripper holds it.

use super::ansi::{Attempt, Grammar};
#[cfg(target_arch = "x86_64")]
use super::bytes::avx2;
use super::bytes::{
  block_masks, digit_mask, escape_masks, find_line_end_or_introducer, find_line_end_or_not_plain,
  utf8_masks, whitespace_mask, BlockMasks, EscapeMasks, Utf8Masks,
};
use super::csi_bytes::is_csi_final;

const ESC: u8 = 0x1B;
/// UTF-8 lead byte of U+0080–U+00BF.
const C1_LEAD: u8 = 0xC2;
/// Second UTF-8 byte of U+009B, the one-char CSI introducer.
const C1_CSI: u8 = 0x9B;

/// What the splitter and `throttledEmit` would have done with some lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCount {
  /// Complete lines, blank ones included (the splitter's pieces).
  pub lines: u64,
  /// Lines that are not blank after trimming and `sanitizeMonitorLine`: the
  /// ones `throttledEmit` would spend a token on (or drop).
  pub non_blank: u64,
  /// Bytes after the 4096-unit cut of over-long lines (`truncatedBytes`).
  pub truncated_bytes: u64,
}

impl LineCount {
  fn add(&mut self, other: LineCount) {
    self.lines += other.lines;
    self.non_blank += other.non_blank;
    self.truncated_bytes += other.truncated_bytes;
  }
}

/// What the bytes given to [`count_lines`] are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
  /// Raw bytes of a stream: ESC starts an escape sequence, which the stripper
  /// removes.
  Raw,
  /// Text the stripper has already passed: an ESC left in it is an ordinary
  /// control char.
  Stripped,
}

/// `bits` low bits set.
#[inline]
fn below(bits: usize) -> u64 {
  if bits >= 64 {
    !0
  } else {
    (1u64 << bits) - 1
  }
}

/// ECMAScript whitespace among ASCII bytes: TAB, LF, VT, FF, CR and space.
#[inline]
fn is_ascii_trim(byte: u8) -> bool {
  matches!(byte, b'\t'..=b'\r' | b' ')
}

/// Counts the complete lines at the start of `bytes`, which starts a line with
/// nothing held by the decoder or the stripper, as the splitter and
/// `throttledEmit` would see them (lines are cut at `max_line_units`). Returns
/// the counts and the bytes they took: up to the end of the last line counted.
/// It stops before the first line it cannot count: one holding a U+009B, an
/// escape sequence whose verdict needs bytes past the end, or (when longer
/// than `max_line_units` bytes) anything but plain text, or one that does not
/// end in `bytes`.
///
/// Works on 64 bytes at a time (`block_masks`). A line is non-blank when
/// text comes after the previous `\n`: a printable ASCII byte (`0x21..=0x7F`)
/// or a non-ASCII char other than C1 controls and whitespace, or bytes that
/// are not UTF-8 (U+FFFD) (what `sanitizeMonitorLine` and trimming leave),
/// outside escape sequences. Per block, with `T` the text bits and `N`
/// the newline bits, both without the bytes of escape sequences
/// (decided by `Sequences::in_block`, or bounded by `bounded_block`), adding `T` to
/// `!N` carries out of every run of non-newline bits that holds a `T` bit,
/// into the `\n` that ends it: `(!N + T + carry) & N` are the newlines that
/// end a non-blank line, and the carry out of bit 63 continues the run into
/// the next block.
pub fn count_lines(bytes: &[u8], max_line_units: usize, source: Source) -> (LineCount, usize) {
  #[cfg(target_arch = "x86_64")]
  if avx2::available() {
    // SAFETY: the CPU has the features.
    return unsafe { count_lines_avx2(bytes, max_line_units, source) };
  }
  count_lines_with::<false>(bytes, max_line_units, source)
}

/// [`count_lines`] compiled for CPUs with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,lzcnt,bmi1,bmi2")]
fn count_lines_avx2(bytes: &[u8], max_line_units: usize, source: Source) -> (LineCount, usize) {
  count_lines_with::<true>(bytes, max_line_units, source)
}

/// [`block_masks`] of a block, with AVX2 when `AVX2` (only ever true in code
/// that runs after [`avx2::available`]).
#[inline(always)]
fn block_masks_of<const AVX2: bool>(block: &[u8]) -> BlockMasks {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::block_masks_64(block) };
  }
  block_masks(block)
}

/// [`utf8_masks`] of a block, as [`block_masks_of`].
#[inline(always)]
fn utf8_masks_of<const AVX2: bool>(block: &[u8]) -> Utf8Masks {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::utf8_masks_64(block) };
  }
  utf8_masks(block)
}

/// What the bytes at a [special lead](Utf8Masks::special_lead) decode to, as
/// far as a line is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpecialChar {
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
fn special_char(bytes: &[u8]) -> SpecialChar {
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

/// [`escape_masks`] of a block, as [`block_masks_of`].
#[inline(always)]
fn escape_masks_of<const AVX2: bool>(block: &[u8]) -> EscapeMasks {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::escape_masks_64(block) };
  }
  escape_masks(block)
}

#[inline(always)]
fn count_lines_with<const AVX2: bool>(
  bytes: &[u8],
  max_line_units: usize,
  source: Source,
) -> (LineCount, usize) {
  // Lines between two newlines of one block are shorter than 63 bytes.
  debug_assert!(max_line_units >= 63);
  let mut count = LineCount::default();
  let mut sequences = Sequences::new(bytes);
  let mut line = OpenLine::default();
  let mut at = 0;
  // The masks of the block at `at`, when the plain loop below made them.
  let mut next_masks = None;
  while at < bytes.len() {
    let block = &bytes[at..bytes.len().min(at + 64)];
    // The block was bounded, and is ASCII: coloured lines, likely to go on.
    let mut coloured = false;
    let masks = next_masks
      .take()
      .unwrap_or_else(|| block_masks_of::<AVX2>(block));
    // The line ends, text bytes (at least, at most) and where counting stops:
    // before the line holding that bit (64: no stop).
    if masks.not_plain == 0 {
      // A plain block is text unless a sequence runs into it.
      sequences.settle();
    }
    let (newline, text_low, text_high, stop) = if masks.not_plain == 0 && sequences.end <= at {
      (masks.newline, masks.printable, masks.printable, 64)
    } else if let Some((bounded, ascii)) =
      bounded_block::<AVX2>(&mut sequences, at, block, &masks, source)
    {
      coloured = ascii;
      bounded
    } else {
      if line.carry_low != line.carry_high {
        // Deciding this block needs to know the line so far.
        return (count, line.start);
      }
      sequences.settle();
      let escapes = escape_masks_of::<AVX2>(block);
      let high = masks.not_plain & !escapes.escape;
      let (chars, mut stop) = sequences.non_ascii::<AVX2>(at, block, high, source);
      let mut removed = 0;
      if source == Source::Raw {
        let (covered, need_more) = sequences.in_block(at, block, &escapes, stop);
        removed = covered;
        stop = stop.min(need_more);
      }
      let text = (masks.printable | chars) & !removed;
      (masks.newline & !removed & below(stop), text, text, stop)
    };
    if (newline != 0 || stop == 64) && line.runs_past(newline, block.len(), max_line_units) {
      // No newline of this block came before the over-long line's end.
      let long = match long_line(bytes, line.start, max_line_units) {
        LongLine::Counted(long, end) => Some((long, end)),
        LongLine::NotPlain if source == Source::Raw => {
          long_line_with_sequences::<AVX2>(&mut sequences, line.start, max_line_units)
        }
        LongLine::NotPlain | LongLine::NoEnd => None,
      };
      match long {
        Some((long, end)) => {
          count.add(long);
          // Sequences this block already decided after `end` are decided
          // again; one left undecided ended before the line's start.
          (at, sequences.end) = (end, end);
          sequences.undecided = None;
          line = OpenLine {
            start: end,
            ..OpenLine::default()
          };
          continue;
        }
        None => return (count, line.start),
      }
    }
    let (sum_high, out_high) = carry_add(newline, text_high, line.carry_high);
    let (sum_low, out_low) = if text_low == text_high && line.carry_low == line.carry_high {
      (sum_high, out_high)
    } else {
      carry_add(newline, text_low, line.carry_low)
    };
    (line.carry_low, line.carry_high) = (out_low, out_high);
    count.lines += u64::from(newline.count_ones());
    let sure = sum_low & newline;
    count.non_blank += u64::from(sure.count_ones());
    let mut unsure = sum_high & newline & !sure;
    // Lines decided one at a time are left to this loop.
    coloured &= unsure == 0;
    while unsure != 0 {
      // Text at most, not at least: decide that line one sequence at a time.
      let bit = unsure.trailing_zeros() as usize;
      unsure &= unsure - 1;
      let before = newline & below(bit);
      let start = if before == 0 {
        line.start
      } else {
        at + 64 - before.leading_zeros() as usize
      };
      count.non_blank += u64::from(sequences.line_has_text(start, at + bit));
    }
    line.advance(at, newline, block.len());
    if stop < 64 {
      return (count, line.start);
    }
    at += block.len();
    if masks.not_plain == 0 && line.carry_low == line.carry_high {
      // Plain text tends to go on: a loop of its own while it does.
      let mut carry = line.carry_low;
      while at + 64 <= bytes.len() && sequences.end <= at {
        let masks = block_masks_of::<AVX2>(&bytes[at..at + 64]);
        let newline = masks.newline;
        if masks.not_plain != 0 || line.runs_past(newline, 64, max_line_units) {
          next_masks = Some(masks);
          break;
        }
        let (sum, out) = carry_add(newline, masks.printable, carry);
        carry = out;
        count.lines += u64::from(newline.count_ones());
        count.non_blank += u64::from((sum & newline).count_ones());
        line.advance(at, newline, 64);
        at += 64;
      }
      (line.carry_low, line.carry_high) = (carry, carry);
    } else if coloured {
      // So do coloured lines.
      next_masks = bounded_run::<AVX2>(
        &mut sequences,
        &mut at,
        &mut line,
        &mut count,
        max_line_units,
      );
    }
  }
  (count, line.start)
}

/// The line [`count_lines`] is in.
#[derive(Clone, Copy, Debug, Default)]
struct OpenLine {
  /// Where it starts.
  start: usize,
  /// Its bytes before the block being counted (raw bytes: at least its units).
  run: usize,
  /// Whether it has text so far, at least (`carry_low`) and at most
  /// (`carry_high`): they differ only after blocks whose sequences were
  /// bounded rather than decided ([`bounded_block`]).
  carry_low: bool,
  carry_high: bool,
}

impl OpenLine {
  /// True when the line would pass `max_line_units` bytes before the first
  /// newline of a block of `len` bytes (its whole length when `newline` is 0).
  #[inline(always)]
  fn runs_past(&self, newline: u64, len: usize, max_line_units: usize) -> bool {
    let before = if newline == 0 {
      len
    } else {
      newline.trailing_zeros() as usize
    };
    self.run + before > max_line_units
  }

  /// Moves past the block of `len` bytes at `at`: the line after its last
  /// newline, if it has one, is the open line.
  #[inline(always)]
  fn advance(&mut self, at: usize, newline: u64, len: usize) {
    if newline == 0 {
      self.run += len;
    } else {
      let last = 63 - newline.leading_zeros() as usize;
      self.start = at + last + 1;
      self.run = len - 1 - last;
    }
  }
}

/// After a block [`bounded_block`] took: the blocks that follow while they
/// are such blocks of ASCII with no sequence running in from a decided one,
/// whose lines are all surely blank or surely not, and that hold no line too
/// long, counted as the main loop counts them, in a loop of its own. Returns
/// the masks of the block it stopped at, which the main loop takes from there.
#[inline(always)]
fn bounded_run<const AVX2: bool>(
  sequences: &mut Sequences<'_>,
  at: &mut usize,
  line: &mut OpenLine,
  count: &mut LineCount,
  max_line_units: usize,
) -> Option<BlockMasks> {
  #[cfg(target_arch = "x86_64")]
  if AVX2 {
    let bytes = sequences.bytes;
    while *at + 64 <= bytes.len() && sequences.end <= *at {
      let block = &bytes[*at..*at + 64];
      let masks = block_masks_of::<AVX2>(block);
      // SAFETY: `AVX2` is true only behind `avx2::available()`.
      let class = unsafe { avx2::csi_class_masks_64(block) };
      let next_is_close =
        class.close_bracket >> 1 | u64::from(bytes.get(*at + 64) == Some(&b']')) << 63;
      let newline = masks.newline;
      // ASCII with an ESC, none of them an OSC's.
      let usual = masks.not_plain != 0
        && masks.not_plain & !class.escape == 0
        && class.escape & next_is_close == 0;
      if !usual || line.runs_past(newline, 64, max_line_units) {
        return Some(masks);
      }
      let (sum_high, out_high) = carry_add(newline, masks.printable, line.carry_high);
      let (sum_low, out_low) = carry_add(newline, masks.printable & class.not_csi, line.carry_low);
      let sure = sum_low & newline;
      if sum_high & newline & !sure != 0 {
        return Some(masks);
      }
      (line.carry_low, line.carry_high) = (out_low, out_high);
      count.lines += u64::from(newline.count_ones());
      count.non_blank += u64::from(sure.count_ones());
      // The block holds an ESC, so a byte no CSI sequence holds.
      sequences.leave_undecided(*at, class.escape, class.not_csi);
      line.advance(*at, newline, 64);
      *at += 64;
    }
  }
  let _ = (sequences, at, line, count, max_line_units);
  None
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

/// A full block of raw bytes whose sequences all take the CSI alternative
/// (no `ESC ]` starts in it), without deciding them (AVX2 only): such a match
/// never holds a newline, and it holds nothing but
/// [`is_csi_byte`](super::csi_bytes::is_csi_byte) bytes
/// after its ESC. So the newlines are exact, printable bytes outside that
/// class are surely text, and all printable bytes at most. Bounds like these
/// need no sequence decided, not even one that runs in from the block before;
/// a sequence that may run past the block is left undecided
/// ([`Sequences::settle`] decides it when a later block needs to know where it
/// ends). Nothing it leaves undecided can change a count: a sequence whose
/// verdict needs bytes past the end holds no newline, so the line it is in
/// does not end in the bytes. Also says whether the block is ASCII. `None` for other
/// blocks.
#[inline(always)]
fn bounded_block<const AVX2: bool>(
  sequences: &mut Sequences<'_>,
  at: usize,
  block: &[u8],
  masks: &BlockMasks,
  source: Source,
) -> Option<((u64, u64, u64, usize), bool)> {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 && source == Source::Raw {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    let class = unsafe { avx2::csi_class_masks_64(block) };
    let carried = below(sequences.end.saturating_sub(at));
    let next_is_close =
      class.close_bracket >> 1 | u64::from(sequences.bytes.get(at + 64) == Some(&b']')) << 63;
    if class.escape & !carried & next_is_close != 0 {
      return None;
    }
    let high = masks.not_plain & !class.escape;
    let (chars, stop) = sequences.non_ascii::<AVX2>(at, block, high, source);
    // ESC is not a CSI byte: a sequence ends before the first other such byte
    // after its ESC. So the last one of the block ends in it unless it is the
    // last ESC with nothing after it but CSI bytes (then it is left to decide),
    // and one left from before ends in it unless the block has no such byte.
    let not_csi = class.not_csi & !carried & below(stop);
    if not_csi != 0 {
      sequences.leave_undecided(at, class.escape, not_csi);
    }
    let chars = chars & !carried;
    let printable = masks.printable & !carried;
    let bounds = (
      masks.newline & !carried & below(stop),
      printable & class.not_csi | chars,
      printable | chars,
      stop,
    );
    return Some((bounds, high == 0));
  }
  let _ = (sequences, at, block, masks, source);
  None
}

/// The escape sequences of raw bytes, decided block by block, left to right,
/// as the stripper decides them.
struct Sequences<'a> {
  grammar: Grammar<'a>,
  bytes: &'a [u8],
  /// Where the last sequence matched one at a time ends.
  end: usize,
  /// The ESC of a sequence [`bounded_block`] left undecided: it may run past
  /// the block that holds it.
  undecided: Option<usize>,
  /// Where the last C1 control or whitespace char found starts and ends.
  blank_from: usize,
  blank_until: usize,
}

impl<'a> Sequences<'a> {
  fn new(bytes: &'a [u8]) -> Self {
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
  fn non_ascii<const AVX2: bool>(
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
  fn in_block(
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
  fn leave_undecided(&mut self, at: usize, escapes: u64, not_csi: u64) {
    debug_assert!(not_csi != 0);
    let last = 63 - not_csi.leading_zeros() as usize;
    self.undecided = (escapes >> last & 1 == 1).then_some(at + last);
  }

  /// Decides the sequence [`bounded_block`] left undecided, so that
  /// [`end`](Self::end) says where it ends. A verdict that needs bytes past the
  /// end leaves `end` as it is: such a sequence holds no newline and runs to
  /// the end, so no line after its ESC ends in the bytes.
  fn settle(&mut self) {
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
  fn line_has_text(&mut self, start: usize, end: usize) -> bool {
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
static CSI_FINAL: [bool; 256] = {
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
fn common_csi(block: &[u8], masks: &EscapeMasks, escapes: u64) -> Option<(u64, usize)> {
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
fn common_csi_at(bytes: &[u8], start: usize) -> Option<usize> {
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
fn run_ends(starts: u64, params: u64) -> (u64, bool) {
  let first = starts << 2;
  let (sum, overflow) = params.overflowing_add(first & params);
  ((sum & !params) | (first & !params), overflow)
}

/// What [`long_line`] found.
enum LongLine {
  /// The line's count, and where the next line starts.
  Counted(LineCount, usize),
  /// Something other than plain text comes before the line's end, if any.
  NotPlain,
  /// The line does not end in the bytes.
  NoEnd,
}

/// The line from `start`, longer than `max_line_units` bytes, when it is plain
/// text and ends in `bytes`: its count (trimmed; when still over the cap, cut,
/// so not blank, and what follows the kept units is truncated) and where the
/// next line starts.
fn long_line(bytes: &[u8], start: usize, max_line_units: usize) -> LongLine {
  let Some(offset) = find_line_end_or_not_plain(&bytes[start..]) else {
    return LongLine::NoEnd;
  };
  let end = start + offset;
  if bytes[end] != b'\n' {
    return LongLine::NotPlain;
  }
  let line = &bytes[start..end];
  let lead = line.iter().take_while(|&&b| is_ascii_trim(b)).count();
  let trail = line[lead..]
    .iter()
    .rev()
    .take_while(|&&b| is_ascii_trim(b))
    .count();
  let mut count = LineCount {
    lines: 1,
    ..LineCount::default()
  };
  if line.len() - lead - trail > max_line_units {
    count.non_blank = 1;
    count.truncated_bytes = (line.len() - lead - max_line_units) as u64;
  } else {
    count.non_blank = u64::from(line.iter().any(|&b| b > b' '));
  }
  LongLine::Counted(count, end + 1)
}

/// [`long_line`] for a line that holds escape sequences (ASCII only): decided
/// one block at a time (`Sequences::in_block`), the text left counted, its
/// leading and trailing whitespace too, to cut it as the splitter would.
#[inline(always)]
fn long_line_with_sequences<const AVX2: bool>(
  sequences: &mut Sequences<'_>,
  start: usize,
  max_line_units: usize,
) -> Option<(LineCount, usize)> {
  let bytes = sequences.bytes;
  // No sequence runs over the `\n` before `start`: decide from there.
  sequences.end = start;
  sequences.undecided = None;
  // Text bytes: all, the leading whitespace (once text came), and the
  // whitespace since the last other byte.
  let (mut text, mut lead, mut trail) = (0, None, 0);
  let mut has_text = false;
  let mut at = start;
  while at < bytes.len() {
    let block = &bytes[at..bytes.len().min(at + 64)];
    let masks = block_masks_of::<AVX2>(block);
    let escapes = escape_masks_of::<AVX2>(block);
    if masks.not_plain & !escapes.escape != 0 {
      return None;
    }
    let (covered, need_more) = sequences.in_block(at, block, &escapes, 64);
    let kept = !covered & below(block.len());
    let newline = masks.newline & kept;
    let end = if newline == 0 {
      block.len()
    } else {
      newline.trailing_zeros() as usize
    };
    if need_more < end {
      return None;
    }
    let kept = kept & below(end);
    let other = kept & !whitespace_mask_of::<AVX2>(block);
    let kept_count = kept.count_ones() as usize;
    text += kept_count;
    if lead.is_none() && other != 0 {
      lead = Some(
        text - kept_count + (kept & below(other.trailing_zeros() as usize)).count_ones() as usize,
      );
    }
    trail = if other == 0 {
      trail + kept_count
    } else {
      (kept & !below(64 - other.leading_zeros() as usize)).count_ones() as usize
    };
    has_text |= masks.printable & kept != 0;
    if newline != 0 {
      let mut count = LineCount {
        lines: 1,
        ..LineCount::default()
      };
      if let Some(lead) = lead {
        if text - lead - trail > max_line_units {
          count.non_blank = 1;
          count.truncated_bytes = (text - lead - max_line_units) as u64;
        } else {
          count.non_blank = u64::from(has_text);
        }
      }
      return Some((count, at + end + 1));
    }
    at += block.len();
  }
  None
}

/// [`whitespace_mask`] of a block, as [`block_masks_of`].
#[inline(always)]
fn whitespace_mask_of<const AVX2: bool>(block: &[u8]) -> u64 {
  #[cfg(target_arch = "x86_64")]
  if AVX2 && block.len() == 64 {
    // SAFETY: `AVX2` is true only behind `avx2::available()`.
    return unsafe { avx2::whitespace_mask_64(block) };
  }
  whitespace_mask(block)
}

/// What [`scan_discarded`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Discarded {
  /// UTF-8 bytes of the text (decoded and stripped) in the bytes consumed,
  /// the line's `\n` not included.
  pub text_bytes: u64,
  /// Raw bytes consumed.
  pub consumed: usize,
  /// The line's `\n` was found (it is the last byte consumed).
  pub line_ended: bool,
}

/// The rest of an over-long line being discarded, from the start of `bytes`,
/// with nothing held by the decoder or the stripper: finds the line's end (the
/// first `\n` outside escape sequences) at the speed of a byte search and
/// counts the text before it as the splitter would (text bytes: plain bytes
/// count one each, valid UTF-8 as it is, escape sequences not at all). Stops
/// early, before an escape sequence whose verdict needs bytes past the end or
/// before bytes that are not valid UTF-8, where the caller takes the exact path.
pub fn scan_discarded(bytes: &[u8]) -> Discarded {
  #[cfg(target_arch = "x86_64")]
  if avx2::available() {
    // SAFETY: the CPU has the features.
    return unsafe { scan_discarded_avx2(bytes) };
  }
  scan_discarded_with::<false>(bytes)
}

/// [`scan_discarded`] compiled for CPUs with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,lzcnt,bmi1,bmi2")]
fn scan_discarded_avx2(bytes: &[u8]) -> Discarded {
  scan_discarded_with::<true>(bytes)
}

#[inline(always)]
fn scan_discarded_with<const AVX2: bool>(bytes: &[u8]) -> Discarded {
  let mut sequences = Sequences::new(bytes);
  let mut text_bytes = 0u64;
  let mut at = 0;
  // The last block held escape sequences: the next one likely does too.
  let mut dense = false;
  while at < bytes.len() {
    if sequences.end <= at && !dense {
      // Plain text: a byte search.
      match find_line_end_or_not_plain(&bytes[at..]) {
        None => {
          text_bytes += (bytes.len() - at) as u64;
          at = bytes.len();
          break;
        }
        Some(offset) => {
          text_bytes += offset as u64;
          at += offset;
        }
      }
      if bytes[at] == b'\n' {
        return Discarded {
          text_bytes,
          consumed: at + 1,
          line_ended: true,
        };
      }
    }
    // Escape sequences, 64 bytes at a time.
    let block = &bytes[at..bytes.len().min(at + 64)];
    let masks = block_masks_of::<AVX2>(block);
    let escapes = escape_masks_of::<AVX2>(block);
    if masks.not_plain & !escapes.escape != 0 {
      let resume = sequences.end.max(at);
      return scan_discarded_utf8(sequences, resume, text_bytes);
    }
    let (removed, stop) = sequences.in_block(at, block, &escapes, 64);
    dense = escapes.escape != 0;
    let kept = !removed & below(stop.min(block.len()));
    let newline = masks.newline & kept;
    if newline != 0 {
      let end = newline.trailing_zeros() as usize;
      text_bytes += u64::from((kept & below(end)).count_ones());
      return Discarded {
        text_bytes,
        consumed: at + end + 1,
        line_ended: true,
      };
    }
    text_bytes += u64::from(kept.count_ones());
    if stop < 64 {
      return Discarded {
        text_bytes,
        consumed: at + stop,
        line_ended: false,
      };
    }
    at += block.len();
  }
  Discarded {
    text_bytes,
    consumed: at,
    line_ended: false,
  }
}

/// [`scan_discarded`] from `at`, with `text_bytes` counted before it, for text
/// that is not all ASCII: one char, byte search or sequence at a time.
fn scan_discarded_utf8(
  mut sequences: Sequences<'_>,
  mut at: usize,
  mut text_bytes: u64,
) -> Discarded {
  let bytes = sequences.bytes;
  // The bytes from the last non-ASCII byte met up to here are valid UTF-8.
  let mut valid_until = 0;
  let stopped = |at: usize, text_bytes: u64| Discarded {
    text_bytes,
    consumed: at,
    line_ended: false,
  };
  loop {
    let found = if at < valid_until {
      match find_line_end_or_introducer(&bytes[at..valid_until]) {
        Some(offset) => at + offset,
        None => {
          text_bytes += (valid_until - at) as u64;
          at = valid_until;
          continue;
        }
      }
    } else {
      match find_line_end_or_not_plain(&bytes[at..]) {
        Some(offset) => at + offset,
        None => return stopped(bytes.len(), text_bytes + (bytes.len() - at) as u64),
      }
    };
    text_bytes += (found - at) as u64;
    match bytes[found] {
      b'\n' => {
        return Discarded {
          text_bytes,
          consumed: found + 1,
          line_ended: true,
        }
      }
      ESC => {}
      C1_LEAD if found < valid_until => {
        if bytes.get(found + 1) != Some(&C1_CSI) {
          // Another char of U+0080–U+00BF: text.
          text_bytes += 2;
          at = found + 2;
          continue;
        }
      }
      _ => {
        // A non-ASCII byte after what is known valid (it starts a char).
        valid_until = found
          + match std::str::from_utf8(&bytes[found..]) {
            Ok(_) => bytes.len() - found,
            Err(error) => error.valid_up_to(),
          };
        if valid_until == found {
          return stopped(found, text_bytes);
        }
        at = found;
        continue;
      }
    }
    match sequences.grammar.attempt(found, false) {
      Attempt::Match(end) => at = end,
      Attempt::NoMatch => {
        let len = sequences.grammar.introducer_len(found);
        text_bytes += len as u64;
        at = found + len;
      }
      Attempt::NeedMore => return stopped(found, text_bytes),
    }
  }
}

/// Bytes at the end of `bytes` that begin a UTF-8 sequence and do not finish
/// it (0 to 3): what the decoder holds for the next read.
pub fn incomplete_utf8_tail(bytes: &[u8]) -> usize {
  let start = bytes.len().saturating_sub(3);
  match bytes[start..].iter().rposition(|&b| b >= 0xC0) {
    Some(lead) => match std::str::from_utf8(&bytes[start + lead..]) {
      Err(error) if error.error_len().is_none() => bytes.len() - start - lead,
      _ => 0,
    },
    None => 0,
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::core::text::test_support::XorShift;
  use crate::core::text::{ecma_trim, utf16_len, CleanTextStream};

  fn count(bytes: &[u8], max: usize, source: Source) -> (LineCount, usize) {
    count_lines(bytes, max, source)
  }

  /// What every build of [`count_lines`] this CPU can run gives: they may
  /// stop at different lines (the AVX2 one bounds sequences it does not
  /// decide), and each must be right.
  fn count_variants(bytes: &[u8], max: usize, source: Source) -> Vec<(LineCount, usize)> {
    #[allow(unused_mut)]
    let mut variants = vec![count_lines_with::<false>(bytes, max, source)];
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
      // SAFETY: the CPU has the features.
      variants.push(unsafe { count_lines_avx2(bytes, max, source) });
    }
    variants
  }

  /// [`scan_discarded`], checking that the build for every CPU agrees.
  fn scan(bytes: &[u8]) -> Discarded {
    let baseline = scan_discarded_with::<false>(bytes);
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
      // SAFETY: the CPU has the features.
      assert_eq!(unsafe { scan_discarded_avx2(bytes) }, baseline);
    }
    assert_eq!(scan_discarded(bytes), baseline);
    baseline
  }

  /// The definition, one line at a time, on the stripped text of `bytes`
  /// (whole lines only; no line may need more bytes to be decided).
  fn reference(text: &str, max: usize) -> LineCount {
    let mut count = LineCount::default();
    let body = text.rsplit_once('\n').map_or("", |(body, _)| body);
    if text.contains('\n') {
      for line in body.split('\n') {
        count.lines += 1;
        let trimmed = ecma_trim(line);
        if trimmed.is_empty() {
          continue;
        }
        if utf16_len(trimmed) > max {
          count.non_blank += 1;
          let kept = crate::core::text::truncate_utf16(trimmed, max);
          let offset = kept.as_ptr() as usize - line.as_ptr() as usize;
          count.truncated_bytes += (line.len() - offset - kept.len()) as u64;
        } else {
          // What `sanitizeMonitorLine` and trimming leave: not C0 (TAB is
          // whitespace), not C1, not whitespace.
          let text = |c: char| {
            !(c < ' '
              || ('\u{80}'..='\u{9f}').contains(&c)
              || crate::core::text::is_ecma_whitespace(c))
          };
          count.non_blank += u64::from(trimmed.chars().any(text));
        }
      }
    }
    count
  }

  #[test]
  fn counts_blank_and_non_blank_lines() {
    let text = b"yes\n\n  \n\t\r\n\x01\x7f\n a \n";
    assert_eq!(
      count(text, 4096, Source::Raw),
      (
        LineCount {
          lines: 6,
          non_blank: 3,
          truncated_bytes: 0
        },
        text.len()
      )
    );
    assert_eq!(count(b"", 4096, Source::Raw), (LineCount::default(), 0));
    // A partial line at the end is not counted.
    assert_eq!(count(b"a\nbc", 4096, Source::Raw).1, 2);
  }

  #[test]
  fn escape_sequences_are_not_text() {
    let text = b"\x1b[32mINFO\x1b[0m x\n\x1b[1m\x1b[0m\n\x1b]0;title\x07\n\x1b]8;;u\x1b\\\n";
    assert_eq!(
      count(text, 4096, Source::Raw),
      (
        LineCount {
          lines: 4,
          non_blank: 1,
          truncated_bytes: 0
        },
        text.len()
      )
    );
    // Left by the stripper, an ESC is a control: `[1m` is text.
    assert_eq!(count(b"\x1b[1m\n", 4096, Source::Stripped).0.non_blank, 1);
    // An unmatched ESC is a control char; what follows it is text.
    assert_eq!(count(b"\x1bW\n", 4096, Source::Raw).0.non_blank, 1);
    assert_eq!(count(b"\x1b\n", 4096, Source::Raw).0.non_blank, 0);
    // An OSC may hold newlines: they end no line.
    let text = b"a\n\x1b]0;x\ny\x07\nb\n";
    assert_eq!(
      count(text, 4096, Source::Raw),
      (
        LineCount {
          lines: 3,
          non_blank: 2,
          truncated_bytes: 0
        },
        text.len()
      )
    );
  }

  #[test]
  fn non_ascii_text_and_blanks() {
    // C1 controls and whitespace are blank; other chars are text.
    let text = "你好\n\u{a0}\u{3000}\u{feff}\n\u{85}\n，\n\u{202e}\n\u{2028}é\n";
    assert_eq!(
      count(text.as_bytes(), 4096, Source::Raw),
      (
        LineCount {
          lines: 6,
          non_blank: 4,
          truncated_bytes: 0
        },
        text.len()
      )
    );
    // Left by the stripper, U+009B is a C1 control.
    assert_eq!(
      count("\u{9b}\n".as_bytes(), 4096, Source::Stripped),
      (
        LineCount {
          lines: 1,
          ..LineCount::default()
        },
        3
      )
    );
  }

  #[test]
  fn bytes_that_are_not_utf8_are_text() {
    // The decoder makes U+FFFD of them; a blank char's lead ends any
    // unfinished sequence before it.
    let text = b"\xff\n \x80\n\xe2\x80\n\xe2\x80\xc2\x85\n\xc2\x85\n\xc2A\n";
    assert_eq!(
      count(text, 4096, Source::Raw),
      (
        LineCount {
          lines: 6,
          non_blank: 5,
          truncated_bytes: 0
        },
        text.len()
      )
    );
  }

  #[test]
  fn stops_before_lines_it_cannot_count() {
    // U+009B (it starts a CSI).
    assert_eq!(count("a\n\u{9b}1m\nc\n".as_bytes(), 4096, Source::Raw).1, 2);
    // A sequence that needs more bytes (a CSI at the end, an OSC not ended).
    assert_eq!(count(b"a\nb\x1b[3", 4096, Source::Raw).1, 2);
    assert_eq!(count(b"a\n\x1b]0;t\nb\n", 4096, Source::Raw).1, 2);
    // An over-long line that does not end, holds non-ASCII, or a sequence
    // that needs more bytes.
    let long = format!("a\n{}", "x".repeat(5000));
    assert_eq!(count(long.as_bytes(), 4096, Source::Raw).1, 2);
    let long = format!("a\n\x1b[1m{}é\nb\n", "x".repeat(5000));
    assert_eq!(count(long.as_bytes(), 4096, Source::Raw).1, 2);
    let long = format!("a\n\x1b[1m{}\x1b]0;\nb\n", "x".repeat(5000));
    assert_eq!(count(long.as_bytes(), 4096, Source::Raw).1, 2);
  }

  #[test]
  fn over_long_lines_with_sequences_are_cut() {
    // What is cut is the stripped, trimmed line: sequences and leading
    // whitespace (even between sequences) are not counted, trailing
    // whitespace is (it follows the kept units).
    let text = format!(
      "a\n \x1b[1m \x1b[0m{}\x1b[0m  \nb\n \x1b[1m{}\x1b[0m \n",
      "x".repeat(5000),
      " \x1b[1m".repeat(4000)
    );
    assert_eq!(
      count(text.as_bytes(), 4096, Source::Raw),
      (
        LineCount {
          lines: 4,
          non_blank: 3,
          truncated_bytes: 5000 + 2 - 4096
        },
        text.len()
      )
    );
  }

  #[test]
  fn over_long_plain_lines_are_cut() {
    let text = format!("  {}  \nb\n{}\n", "x".repeat(5000), " ".repeat(5000));
    assert_eq!(
      count(text.as_bytes(), 4096, Source::Raw),
      (
        LineCount {
          lines: 3,
          non_blank: 2,
          truncated_bytes: 5002 - 4096
        },
        text.len()
      )
    );
  }

  /// What the exact path makes of `bytes` with fresh state: decoded and
  /// stripped, and nothing finished (a held char or sequence waits).
  fn exact_text(bytes: &[u8]) -> String {
    CleanTextStream::default().push(bytes).to_owned()
  }

  /// Checks that the exact path may resume at `consumed` with fresh state:
  /// the text of the whole is the text of `bytes[..consumed]`, returned,
  /// followed by the text of the rest read afresh.
  fn decided_prefix(bytes: &[u8], consumed: usize, what: &str) -> String {
    let whole = exact_text(bytes);
    let rest = exact_text(&bytes[consumed..]);
    assert!(
      whole.ends_with(&rest),
      "{what}: the exact path cannot resume at {consumed}: {whole:?} vs {rest:?}"
    );
    whole[..whole.len() - rest.len()].to_owned()
  }

  /// Random texts of printable, blank, control, escape and long runs, with
  /// lines running across block boundaries and around the length limit, agree
  /// with the line-at-a-time definition up to where counting stopped; the
  /// exact path can take over there; and it stops only where it has to.
  #[test]
  fn agrees_with_the_definition_on_random_texts() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let pieces: [&[u8]; 31] = [
      "你好".as_bytes(),
      "，".as_bytes(),
      "\u{a0}".as_bytes(),
      "\u{3000}".as_bytes(),
      "\u{2028}\u{202f}".as_bytes(),
      "\u{feff}".as_bytes(),
      "\u{85}\u{9f}".as_bytes(),
      "\u{9b}1m".as_bytes(),
      "\u{202e}".as_bytes(),
      "😀".as_bytes(),
      b"\xff",
      b"\xe4\xbd",
      b"\x1b[32m",
      b"\x1b[0m",
      b"\x1b[38;5;196m",
      b"\x1b[12345m",
      b"\x1b[?25l",
      b"\x1b[;1m",
      b"\x1b]0;t\x07",
      b"\x1b]8;;u\x1b\\",
      b"\x1b",
      b"\x1b[",
      b"\x1b[1;",
      b"\x1b]0;\n\x07",
      b"\x1b]0;",
      b"\x1bD",
      b"\x1b\x1b[1m",
      "é".as_bytes(),
      b"\x7f",
      b"\x01",
      b"\r",
    ];
    let mut stopped_early = 0;
    for round in 0..4000 {
      let len = rng.below(400);
      let mut text: Vec<u8> = Vec::new();
      while text.len() < len {
        match rng.below(20) {
          0..=3 => text.push(b'\n'),
          4..=6 => text.extend_from_slice(pieces[rng.below(pieces.len())]),
          7 => text.push(b'y'),
          8 if round % 5 == 0 => text.extend(std::iter::repeat_n(b' ', rng.below(200))),
          _ => text.push(b' '),
        }
      }
      if round % 7 == 0 {
        text.extend(std::iter::repeat_n(b'z', rng.below(200)));
      }
      if round % 3 != 0 {
        text.push(b'\n');
      }
      stopped_early += check_against_the_definition(&text, &format!("round {round}"));
    }
    assert!(stopped_early > 0);
  }

  /// Coloured lines, many blocks of them in a row: lines of sequences and
  /// text, lines of sequences only (blank), sequences cut by block ends with
  /// plain bytes, non-ASCII or an OSC after them, so that the bounded blocks
  /// hand over to every other kind of block with a sequence left undecided.
  #[test]
  fn agrees_with_the_definition_on_coloured_runs() {
    let mut rng = XorShift(0x51_7cc1_b727_220a);
    let sequences: [&[u8]; 8] = [
      b"\x1b[32m",
      b"\x1b[0m",
      b"\x1b[38;5;196m",
      b"\x1b[1;31m",
      b"\x1b[?25l",
      b"\x1b[K",
      b"\x1b[2J",
      b"\x1b[12;40H",
    ];
    let others: [&[u8]; 9] = [
      b"INFO",
      b"request",
      b"y",
      b" ",
      b"MNOP",
      "é".as_bytes(),
      b"\x1b]0;t\x07",
      b"\r",
      b"\x1b[1;",
    ];
    let mut stopped_early = 0;
    for round in 0..1500 {
      let len = 64 + rng.below(1500);
      let mut text: Vec<u8> = Vec::new();
      while text.len() < len {
        match rng.below(40) {
          0..=5 => text.push(b'\n'),
          6..=24 => text.extend_from_slice(sequences[rng.below(sequences.len())]),
          25..=34 => text.extend_from_slice(others[..5][rng.below(5)]),
          35 | 36 if round % 3 == 0 => text.extend_from_slice(others[5 + rng.below(4)]),
          // A run of plain bytes, letters that are CSI bytes or text.
          37 => text.extend(std::iter::repeat_n(b"Ae"[rng.below(2)], rng.below(140))),
          _ => text.extend_from_slice(b"\x1b[0m\n"),
        }
      }
      if round % 2 == 0 {
        text.push(b'\n');
      }
      stopped_early += check_against_the_definition(&text, &format!("coloured round {round}"));
    }
    assert!(stopped_early > 0);
  }

  /// Checks [`count_lines`] (every variant) on `text` against the exact
  /// path, for both sources and four line limits; returns how often the
  /// baseline stopped before a complete line.
  fn check_against_the_definition(text: &[u8], label: &str) -> usize {
    let mut stopped_early = 0;
    for source in [Source::Raw, Source::Stripped] {
      for max in [63, 64, 100, 4096] {
        for (variant, (count, consumed)) in
          count_variants(text, max, source).into_iter().enumerate()
        {
          let what = format!("{label}, {source:?}, limit {max}, variant {variant}: {text:?}");
          assert!(consumed == 0 || text[consumed - 1] == b'\n', "{what}");
          let counted = match source {
            Source::Raw => decided_prefix(text, consumed, &what),
            Source::Stripped => String::from_utf8_lossy(&text[..consumed]).into_owned(),
          };
          assert_eq!(count, reference(&counted, max), "{what}");
          let rest = &text[consumed..];
          // The baseline stops only before a line with non-ASCII, an escape
          // sequence (that may need more bytes, or in an over-long line), or
          // an over-long line that ends in no newline outside sequences.
          // (The AVX2 build may also stop before a line it only bounded,
          // when a block it must decide follows.)
          if let (0, Some(newline)) = (variant, rest.iter().position(|&b| b == b'\n')) {
            stopped_early += 1;
            let line = &rest[..newline];
            assert!(
              !line.is_ascii() || line.contains(&0x1B) || line.len() > max,
              "{what}: stopped at {consumed}"
            );
          }
        }
      }
    }
    stopped_early
  }

  /// The discard scan against its definition: the text bytes of the exact
  /// path's text up to its first `\n`, and the exact path can take over where
  /// the scan ends.
  #[test]
  fn discard_scan_agrees_with_the_definition() {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let pieces: [&[u8]; 17] = [
      b"\x1b[32m",
      b"\x1b]0;t\x07",
      b"\x1b]0;x\ny\x07",
      b"\x1b",
      b"\x1b[",
      b"\x1b[1;",
      b"\x1b[12",
      b"\x1b]",
      "é".as_bytes(),
      "你".as_bytes(),
      "\u{9b}1m".as_bytes(),
      "\u{9c}".as_bytes(),
      "\u{85}".as_bytes(),
      b"\xff",
      b"\xe4\xbd",
      b"\r",
      b"\n",
    ];
    let mut outcomes = [0; 3];
    for round in 0..20_000 {
      let mut text: Vec<u8> = Vec::new();
      for _ in 0..rng.below(12) {
        match rng.below(4) {
          0 => text.extend_from_slice(pieces[rng.below(pieces.len())]),
          1 => text.extend(std::iter::repeat_n(b'a', rng.below(100))),
          _ => text.push(b'q'),
        }
      }
      let what = format!("round {round}: {text:x?}");
      let scan_end = text.len() - incomplete_utf8_tail(&text);
      let d = scan(&text[..scan_end]);
      let decided = decided_prefix(&text, d.consumed, &what);
      if d.line_ended {
        outcomes[0] += 1;
        assert_eq!(decided.find('\n'), Some(decided.len() - 1), "{what}");
        assert_eq!(d.text_bytes, decided.len() as u64 - 1, "{what}");
      } else {
        assert!(!decided.contains('\n'), "{what}");
        assert_eq!(d.text_bytes, decided.len() as u64, "{what}");
        if d.consumed < scan_end {
          outcomes[1] += 1;
          // Stopped before an undecided sequence or bytes that are not valid.
          let first = text[d.consumed];
          assert!(
            first == 0x1B || first >= 0x80,
            "{what}: stopped at {}",
            d.consumed
          );
        } else {
          outcomes[2] += 1;
          assert_eq!(d.consumed, scan_end, "{what}");
        }
      }
    }
    assert!(outcomes.iter().all(|&n| n > 100), "{outcomes:?}");
  }

  /// The one-at-a-time path for common CSI sequences matches what the
  /// grammar matches, whenever it answers.
  #[test]
  fn common_csi_at_matches_the_grammar() {
    let mut rng = XorShift(0x1234_5678_9abc_def1);
    let alphabet: &[u8] = b"\x1b[[;;0123456789m:?x]\n";
    let mut answered = 0;
    for _ in 0..100_000 {
      let len = 1 + rng.below(12);
      let mut bytes = vec![0x1b];
      bytes.extend((1..len).map(|_| alphabet[rng.below(alphabet.len())]));
      if len > 1 && rng.below(2) == 0 {
        bytes[1] = b'[';
      }
      if let Some(end) = common_csi_at(&bytes, 0) {
        answered += 1;
        assert_eq!(
          Grammar::new(&bytes).attempt(0, false),
          Attempt::Match(end),
          "{bytes:?}"
        );
      }
    }
    assert!(answered > 1000, "{answered}");
  }

  /// The bulk path for common CSI sequences covers exactly what the grammar
  /// matches, whenever it answers.
  #[test]
  fn common_csi_covers_what_the_grammar_matches() {
    let mut rng = XorShift(0x5851_f42d_4c95_7f2d);
    let pieces: [&[u8]; 16] = [
      b"\x1b[32m",
      b"\x1b[0m",
      b"\x1b[m",
      b"\x1b[38;5;196m",
      b"\x1b[;1m",
      b"\x1b[1;;2H",
      b"\x1b[12345m",
      b"\x1b[1234m",
      b"\x1b[?25l",
      b"\x1b[1:2m",
      b"\x1b[1;x",
      b"\x1b[",
      b"\x1b",
      b"12345;",
      b"[",
      b"m",
    ];
    let mut answered = 0;
    for round in 0..50_000 {
      let mut block: Vec<u8> = Vec::new();
      while block.len() < 64 {
        if rng.below(3) == 0 {
          block.extend_from_slice(pieces[rng.below(pieces.len())]);
        } else {
          block.push(b"ab 9;"[rng.below(5)]);
        }
      }
      block.truncate(if round % 4 == 0 { rng.below(65) } else { 64 });
      let masks = escape_masks(&block);
      let Some((covered, taken)) = common_csi(&block, &masks, masks.escape) else {
        continue;
      };
      answered += 1;
      let mut grammar = Grammar::new(&block);
      let mut expected = 0u64;
      let mut end = 0;
      for start in 0..taken {
        if start < end || block[start] != 0x1B {
          continue;
        }
        match grammar.attempt(start, false) {
          Attempt::Match(e) => {
            assert!(e <= taken, "round {round}: {block:?}");
            end = e;
            expected |= below(e) & !below(start);
          }
          other => panic!("round {round}: {other:?} at {start} of {block:?}"),
        }
      }
      assert_eq!(covered, expected, "round {round}: {block:?}");
      assert!(
        taken == block.len() || block[taken] == 0x1B,
        "round {round}: {block:?}"
      );
    }
    assert!(answered > 1000, "{answered}");
  }

  #[test]
  fn incomplete_tails() {
    assert_eq!(incomplete_utf8_tail(b""), 0);
    assert_eq!(incomplete_utf8_tail(b"abc"), 0);
    assert_eq!(incomplete_utf8_tail("a你".as_bytes()), 0);
    assert_eq!(incomplete_utf8_tail(&"a你".as_bytes()[..3]), 2);
    assert_eq!(incomplete_utf8_tail(&"a😀".as_bytes()[..4]), 3);
    assert_eq!(incomplete_utf8_tail(b"a\xc2"), 1);
    assert_eq!(incomplete_utf8_tail(b"a\xe0\x80"), 0);
    assert_eq!(incomplete_utf8_tail(b"a\x80"), 0);
  }
}
