//! The output sanitiser of CONTRACT.md §2.14 steps 5–7 (escape sequences stripped, control
//! characters dropped, each `\r` redraw collapsed to its last frame), fast: what
//! `readTaskOutput` runs on every window it reads. It gives exactly what
//! [`clean_output_text`] gives, checked on random output in the tests.
//!
//! The four sequence passes of step 5 and the frame rule of step 7 keep to their lines, so the
//! text is cleaned line by line, in one pass: a SIMD scan finds the next byte the sanitiser may
//! change, and what lies between is copied as it is (a window without such a byte is handed back
//! without a copy). Lines whose escape sequences the single pass cannot take exactly (DCS, SOS,
//! PM and APC strings, an incomplete CSI or `ESC`-intermediate escape, ESC ESC: rare) go through
//! [`clean_output_text`] instead.

use super::tail::clean_output_text;

const ESC: u8 = 0x1B;
const BEL: u8 = 0x07;

/// Decodes `bytes` (an invalid sequence becomes U+FFFD) and sanitises it like
/// [`clean_output_text`]: no trim.
pub(crate) fn sanitize_output(bytes: Vec<u8>) -> String {
  let text = match String::from_utf8(bytes) {
    Ok(text) => text,
    Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
  };
  if find_special::<false>(text.as_bytes(), 0).is_none() {
    return text;
  }
  let out = clean(&text);
  debug_assert!(std::str::from_utf8(&out).is_ok());
  // SAFETY: `out` is `text` (valid UTF-8) with whole characters left out (ASCII controls,
  // escape sequences, which start and end at ASCII bytes, C1 and bidi characters, `\r` frames
  // cut at ASCII bytes), and lines that `clean_output_text` returned as `String`s.
  unsafe { String::from_utf8_unchecked(out) }
}

/// The line being cleaned: where it starts in the input and in the output, and whether it holds
/// a `\r` (its frames are then collapsed when it ends).
struct Line {
  input_start: usize,
  output_start: usize,
  redrawn: bool,
}

fn clean(text: &str) -> Vec<u8> {
  let raw = text.as_bytes();
  let mut out = Vec::with_capacity(raw.len());
  let mut line = Line {
    input_start: 0,
    output_start: 0,
    redrawn: false,
  };
  let mut specials = Specials::new(raw);
  let mut at = 0;
  let mut next = 0;
  while let Some(found) = specials.next_from(next) {
    next = found + 1;
    if raw[found] == b'\n' && !line.redrawn {
      // Nothing to do at this line end: the copy waits for the next special byte.
      line = Line {
        input_start: next,
        output_start: out.len() + (next - at),
        redrawn: false,
      };
      continue;
    }
    out.extend_from_slice(&raw[at..found]);
    at = found + 1;
    match raw[found] {
      b'\n' => {
        keep_last_frame(&mut out, line.output_start);
        out.push(b'\n');
        line = Line {
          input_start: at,
          output_start: out.len(),
          redrawn: false,
        };
      }
      b'\r' => {
        out.push(b'\r');
        line.redrawn = true;
      }
      ESC => match escape_len(&raw[found..]) {
        Some(length) => at = found + length,
        None => {
          // The four passes, on this line alone.
          let end = raw[found..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(raw.len(), |newline| found + newline + 1);
          out.truncate(line.output_start);
          out.extend_from_slice(clean_output_text(&text[line.input_start..end]).as_bytes());
          at = end;
          line = Line {
            input_start: end,
            output_start: out.len(),
            redrawn: false,
          };
        }
      },
      // A C1 control (U+0080–U+009F) and a bidi control (U+202A–U+202E, U+2066–U+2069).
      0xC2 => at = found + 2,
      0xE2 => at = found + 3,
      // Any other C0 control.
      _ => {}
    }
    next = at;
  }
  out.extend_from_slice(&raw[at..]);
  if line.redrawn {
    keep_last_frame(&mut out, line.output_start);
  }
  out
}

/// How many bytes of `sequence` (from an ESC) step 5 removes, when the single pass can tell
/// without the rest of the line (`None`: the line goes through the four passes):
/// * a complete CSI (`ESC [`, parameters 0x30–0x3F, intermediates 0x20–0x2F, a final
///   0x40–0x7E) or `ESC`-intermediates escape (`ESC`, 0x20–0x2F, …, a final 0x30–0x7E): all of
///   it; incomplete, they are `None` (removing a later sequence could complete them);
/// * an OSC: to its BEL or `ESC \` included, else to the next ESC, `\r`, `\n` or the end;
/// * ESC before any other byte, or at the end: the ESC alone (a control character);
/// * a DCS, SOS, PM or APC string, and ESC ESC: `None`.
fn escape_len(sequence: &[u8]) -> Option<usize> {
  match sequence.get(1) {
    Some(b'[') => csi_len(sequence),
    Some(b']') => {
      let body = sequence[2..]
        .iter()
        .position(|&b| matches!(b, BEL | ESC | b'\n' | b'\r'))
        .map_or(sequence.len(), |end| 2 + end);
      Some(match &sequence[body..] {
        [BEL, ..] => body + 1,
        [ESC, b'\\', ..] => body + 2,
        _ => body,
      })
    }
    Some(0x20..=0x2F) => {
      let end = 1
        + sequence[1..]
          .iter()
          .position(|b| !(0x20..=0x2F).contains(b))?;
      (0x30..=0x7E).contains(&sequence[end]).then_some(end + 1)
    }
    Some(b'P' | b'X' | b'^' | b'_' | &ESC) => None,
    _ => Some(1),
  }
}

/// The length of the complete CSI sequence (`ESC [`, parameter bytes 0x30–0x3F, intermediate
/// bytes 0x20–0x2F, a final byte 0x40–0x7E) at the start of `bytes`, as §2.14 step 5 matches it.
pub(crate) fn csi_len(bytes: &[u8]) -> Option<usize> {
  if bytes.len() < 3 || bytes[0] != ESC || bytes[1] != b'[' {
    return None;
  }
  let mut at = 2;
  while bytes.get(at).is_some_and(|b| (0x30..=0x3F).contains(b)) {
    at += 1;
  }
  while bytes.get(at).is_some_and(|b| (0x20..=0x2F).contains(b)) {
    at += 1;
  }
  bytes
    .get(at)
    .is_some_and(|b| (0x40..=0x7E).contains(b))
    .then_some(at + 1)
}

/// Step 7 on the line in `out[start..]`: keeps its last non-empty `\r` frame (none: empty).
fn keep_last_frame(out: &mut Vec<u8>, start: usize) {
  let line = &out[start..];
  let mut end = line.len();
  let frame = loop {
    let begin = line[..end]
      .iter()
      .rposition(|&b| b == b'\r')
      .map_or(0, |cr| cr + 1);
    if begin < end {
      break begin..end;
    }
    if begin == 0 {
      break 0..0;
    }
    end = begin - 1;
  };
  let length = frame.len();
  out.copy_within(start + frame.start..start + frame.end, start);
  out.truncate(start + length);
}

/// True for a byte the sanitiser may change, in valid UTF-8: a C0 control but TAB (and LF
/// unless `NEWLINE`), and the lead byte of a C1 control (`C2 80`–`C2 9F`) or of a bidi control
/// (`E2 80 AA`–`E2 80 AE`, `E2 81 A6`–`E2 81 A9`).
#[inline]
fn is_special_at<const NEWLINE: bool>(bytes: &[u8], at: usize) -> bool {
  match bytes[at] {
    b'\t' => false,
    b'\n' => NEWLINE,
    0x00..=0x1F => true,
    0xC2 => bytes.get(at + 1).is_some_and(|b| (0x80..=0x9F).contains(b)),
    0xE2 => matches!(
      (bytes.get(at + 1), bytes.get(at + 2)),
      (Some(0x80), Some(0xAA..=0xAE)) | (Some(0x81), Some(0xA6..=0xA9))
    ),
    _ => false,
  }
}

/// The first byte at or after `from` that [`is_special_at`] accepts.
pub(crate) fn find_special<const NEWLINE: bool>(bytes: &[u8], from: usize) -> Option<usize> {
  #[cfg(target_arch = "x86_64")]
  {
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe { sse2::find_special::<NEWLINE>(bytes, from) }
  }
  #[cfg(not(target_arch = "x86_64"))]
  scalar_find_special::<NEWLINE>(bytes, from)
}

fn scalar_find_special<const NEWLINE: bool>(bytes: &[u8], from: usize) -> Option<usize> {
  (from..bytes.len()).find(|&at| is_special_at::<NEWLINE>(bytes, at))
}

/// The bytes [`is_special_at`] accepts (LF included), block by block: a bit mask of 64 bytes at a
/// time, so that text with a control or an escape sequence on every line pays a bit scan per
/// byte found, not a search.
struct Specials<'a> {
  bytes: &'a [u8],
  /// Where the block of `mask` starts.
  base: usize,
  mask: u64,
}

impl<'a> Specials<'a> {
  fn new(bytes: &'a [u8]) -> Self {
    Self {
      bytes,
      base: 0,
      mask: block_mask(bytes, 0),
    }
  }

  /// The first special byte at or after `at`. `at` never goes back, so the blocks before the
  /// current one, scanned already, hold nothing at or after it.
  fn next_from(&mut self, at: usize) -> Option<usize> {
    let mut at = at.max(self.base);
    loop {
      if at >= self.bytes.len() {
        return None;
      }
      if at >= self.base + 64 {
        // A sequence or a line taken whole jumped past the block.
        self.base = at;
        self.mask = block_mask(self.bytes, at);
      }
      let mask = self.mask & (!0u64 << (at - self.base));
      if mask != 0 {
        return Some(self.base + mask.trailing_zeros() as usize);
      }
      self.base += 64;
      at = self.base;
      self.mask = block_mask(self.bytes, self.base);
    }
  }
}

/// Bit `i` set when `bytes[base + i]` is special (LF included), for the (up to) 64 bytes from
/// `base`.
fn block_mask(bytes: &[u8], base: usize) -> u64 {
  #[cfg(target_arch = "x86_64")]
  if base + 64 + 2 <= bytes.len() {
    // SAFETY: SSE2 is part of the x86_64 baseline; the block and the two bytes after it exist.
    return unsafe { sse2::block_mask(bytes, base) };
  }
  scalar_block_mask(bytes, base)
}

fn scalar_block_mask(bytes: &[u8], base: usize) -> u64 {
  let end = bytes.len().min(base + 64);
  (base..end)
    .filter(|&at| is_special_at::<true>(bytes, at))
    .fold(0, |mask, at| mask | 1 << (at - base))
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
  use std::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8,
    _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
  };

  use super::scalar_find_special;

  #[inline]
  #[target_feature(enable = "sse2")]
  fn load(bytes: &[u8], at: usize) -> __m128i {
    let lane: &[u8; 16] = bytes[at..at + 16].try_into().expect("16 bytes");
    // SAFETY: `lane` is 16 readable bytes; the load is unaligned.
    unsafe { _mm_loadu_si128(lane.as_ptr().cast()) }
  }

  #[inline]
  #[target_feature(enable = "sse2")]
  fn splat(byte: u8) -> __m128i {
    _mm_set1_epi8(byte as i8)
  }

  /// The special bytes of the 16 bytes at `at` as a bit mask (the two bytes after them must
  /// exist). The lead bytes `C2` and `E2` are common in text (`é`, `“`, `✓`, box drawing):
  /// only a lane holding one looks at the next two bytes.
  #[inline]
  #[target_feature(enable = "sse2")]
  fn lane<const NEWLINE: bool>(bytes: &[u8], at: usize) -> u32 {
    let v = load(bytes, at);
    // Signed compares: 0x00..=0x1F is `> -1 && < 0x20`.
    let control = _mm_and_si128(
      _mm_cmpgt_epi8(v, splat(0xFF)),
      _mm_cmplt_epi8(v, splat(0x20)),
    );
    let mut kept = _mm_cmpeq_epi8(v, splat(b'\t'));
    if !NEWLINE {
      kept = _mm_or_si128(kept, _mm_cmpeq_epi8(v, splat(b'\n')));
    }
    let mut special = _mm_andnot_si128(kept, control);
    let c2 = _mm_cmpeq_epi8(v, splat(0xC2));
    let e2 = _mm_cmpeq_epi8(v, splat(0xE2));
    if _mm_movemask_epi8(_mm_or_si128(c2, e2)) != 0 {
      let next = load(bytes, at + 1);
      let after = load(bytes, at + 2);
      // C2 80..=9F: the next byte, signed, is below 0xA0.
      let c1 = _mm_and_si128(c2, _mm_cmplt_epi8(next, splat(0xA0)));
      // E2 80 AA..=AE and E2 81 A6..=A9.
      let embedding = _mm_and_si128(
        _mm_cmpeq_epi8(next, splat(0x80)),
        _mm_and_si128(
          _mm_cmpgt_epi8(after, splat(0xA9)),
          _mm_cmplt_epi8(after, splat(0xAF)),
        ),
      );
      let isolate = _mm_and_si128(
        _mm_cmpeq_epi8(next, splat(0x81)),
        _mm_and_si128(
          _mm_cmpgt_epi8(after, splat(0xA5)),
          _mm_cmplt_epi8(after, splat(0xAA)),
        ),
      );
      let bidi = _mm_and_si128(e2, _mm_or_si128(embedding, isolate));
      special = _mm_or_si128(special, _mm_or_si128(c1, bidi));
    }
    _mm_movemask_epi8(special) as u32
  }

  /// [`super::find_special`], 16 bytes at a time.
  #[target_feature(enable = "sse2")]
  pub(super) fn find_special<const NEWLINE: bool>(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at + 18 <= bytes.len() {
      let hits = lane::<NEWLINE>(bytes, at);
      if hits != 0 {
        return Some(at + hits.trailing_zeros() as usize);
      }
      at += 16;
    }
    scalar_find_special::<NEWLINE>(bytes, at)
  }

  /// [`super::block_mask`] of the 64 bytes at `base` (the two bytes after them must exist).
  #[target_feature(enable = "sse2")]
  pub(super) fn block_mask(bytes: &[u8], base: usize) -> u64 {
    (0..4).fold(0, |mask, lane_no| {
      mask | u64::from(lane::<true>(bytes, base + 16 * lane_no)) << (16 * lane_no)
    })
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::text::test_support::XorShift;

  #[test]
  fn the_scan_finds_exactly_the_bytes_the_sanitiser_may_change() {
    let specials: [&[u8]; 9] = [
      b"\x00",
      b"\x1b",
      b"\r",
      b"\x1f",
      "\u{80}".as_bytes(),
      "\u{9f}".as_bytes(),
      "\u{202a}".as_bytes(),
      "\u{202e}".as_bytes(),
      "\u{2069}".as_bytes(),
    ];
    let ordinary: [&[u8]; 12] = [
      b"x",
      b"\t",
      b"\x7f",
      b" ",
      "\u{a0}".as_bytes(),
      "é".as_bytes(),
      "\u{2029}".as_bytes(),
      "\u{202f}".as_bytes(),
      "\u{2065}".as_bytes(),
      "\u{206a}".as_bytes(),
      "✓".as_bytes(),
      "𝄞".as_bytes(),
    ];
    let mut rng = XorShift(0x5CA9);
    for _ in 0..3000 {
      let mut bytes = Vec::new();
      let length = rng.below(70);
      while bytes.len() < length {
        bytes.extend_from_slice(ordinary[rng.below(ordinary.len())]);
        if rng.below(4) == 0 {
          bytes.push(b'\n');
        }
      }
      if rng.below(3) > 0 {
        let at = bytes.len() - rng.below(bytes.len().min(40) + 1);
        let at = (0..=at)
          .rev()
          .find(|&i| std::str::from_utf8(&bytes[..i]).is_ok())
          .unwrap_or(0);
        let special = specials[rng.below(specials.len())];
        bytes.splice(at..at, special.iter().copied());
      }
      for from in [0, 1, 17] {
        let from = from.min(bytes.len());
        assert_eq!(
          find_special::<true>(&bytes, from),
          scalar_find_special::<true>(&bytes, from),
          "{bytes:x?} from {from}"
        );
        assert_eq!(
          find_special::<false>(&bytes, from),
          scalar_find_special::<false>(&bytes, from),
          "{bytes:x?} from {from}"
        );
      }
    }
  }

  #[test]
  fn block_masks_and_the_scan_from_any_position() {
    let mut rng = XorShift(0xB10C);
    let pieces: [&[u8]; 8] = [
      b"x",
      b"\n",
      b"\x1b",
      b"\t",
      "\u{85}".as_bytes(),
      "\u{202e}".as_bytes(),
      "✓".as_bytes(),
      "é".as_bytes(),
    ];
    for _ in 0..500 {
      let mut bytes = Vec::new();
      let length = rng.below(300);
      while bytes.len() < length {
        bytes.extend_from_slice(pieces[rng.below(pieces.len())]);
      }
      for base in 0..bytes.len() {
        assert_eq!(
          block_mask(&bytes, base),
          scalar_block_mask(&bytes, base),
          "{bytes:x?} at {base}"
        );
      }
      let mut specials = Specials::new(&bytes);
      let mut at = 0;
      while at <= bytes.len() {
        assert_eq!(
          specials.next_from(at),
          scalar_find_special::<true>(&bytes, at),
          "{bytes:x?} from {at}"
        );
        at += 1 + rng.below(70);
      }
    }
  }

  #[test]
  fn escape_lengths() {
    assert_eq!(escape_len(b"\x1b[1;2 m!"), Some(7));
    assert_eq!(escape_len(b"\x1b[1;2 3m"), None);
    assert_eq!(escape_len(b"\x1b]0;t\x07x"), Some(6));
    assert_eq!(escape_len(b"\x1b]0;t\x1b\\x"), Some(7));
    assert_eq!(escape_len(b"\x1b]0;t\x1b[0m"), Some(5));
    assert_eq!(escape_len(b"\x1b]0;t\rx"), Some(5));
    assert_eq!(escape_len(b"\x1b]0;t"), Some(5));
    assert_eq!(escape_len(b"\x1b(B"), Some(3));
    assert_eq!(escape_len(b"\x1b( \x7f"), None);
    assert_eq!(escape_len(b"\x1b("), None);
    assert_eq!(escape_len(b"\x1b7"), Some(1));
    assert_eq!(escape_len(b"\x1b"), Some(1));
    assert_eq!(escape_len(b"\x1b\\"), Some(1));
    assert_eq!(escape_len(b"\x1bPq"), None);
    assert_eq!(escape_len(b"\x1b\x1b[0m"), None);
  }

  #[test]
  fn frames() {
    for (line, frame) in [
      ("a\rb", "b"),
      ("a\rb\r", "b"),
      ("\r\r", ""),
      ("abc", "abc"),
      ("\rx\r\r", "x"),
    ] {
      let mut out = b"keep".to_vec();
      out.extend_from_slice(line.as_bytes());
      keep_last_frame(&mut out, 4);
      assert_eq!(out, format!("keep{frame}").into_bytes(), "{line:?}");
    }
  }
}
