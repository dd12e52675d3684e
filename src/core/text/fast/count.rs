//! Counting the complete lines of a read ([`count_lines`]) without building them.

use super::sequences::*;
use super::simd::*;
use super::*;
#[cfg(target_arch = "x86_64")]
use crate::text::bytes::avx2;
use crate::text::bytes::{find_line_end_or_not_plain, BlockMasks};

/// ECMAScript whitespace among ASCII bytes: TAB, LF, VT, FF, CR and space.
#[inline]
pub(super) fn is_ascii_trim(byte: u8) -> bool {
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
pub(super) fn count_lines_avx2(
  bytes: &[u8],
  max_line_units: usize,
  source: Source,
) -> (LineCount, usize) {
  count_lines_with::<true>(bytes, max_line_units, source)
}

#[inline(always)]
pub(super) fn count_lines_with<const AVX2: bool>(
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
pub(super) struct OpenLine {
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
pub(super) fn bounded_run<const AVX2: bool>(
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
pub(super) fn bounded_block<const AVX2: bool>(
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

/// What [`long_line`] found.
pub(super) enum LongLine {
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
pub(super) fn long_line(bytes: &[u8], start: usize, max_line_units: usize) -> LongLine {
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
pub(super) fn long_line_with_sequences<const AVX2: bool>(
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
