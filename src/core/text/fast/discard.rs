//! Skipping the rest of an over-long line up to its end ([`scan_discarded`]).

use super::sequences::*;
use super::simd::*;
use super::*;
use crate::text::ansi::Attempt;
#[cfg(target_arch = "x86_64")]
use crate::text::bytes::avx2;
use crate::text::bytes::{find_line_end_or_introducer, find_line_end_or_not_plain};

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
pub(super) fn scan_discarded_avx2(bytes: &[u8]) -> Discarded {
  scan_discarded_with::<true>(bytes)
}

#[inline(always)]
pub(super) fn scan_discarded_with<const AVX2: bool>(bytes: &[u8]) -> Discarded {
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
pub(super) fn scan_discarded_utf8(
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
