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
//!
//! `count.rs` counts lines, `discard.rs` skips the rest of an over-long line, `sequences.rs`
//! decides escape sequences on the raw bytes, `simd.rs` holds the per-block masks (AVX2
//! where available) they all share.

mod count;
mod discard;
mod sequences;
mod simd;
#[cfg(test)]
mod tests;

pub use count::count_lines;
pub use discard::{scan_discarded, Discarded};
pub use simd::carry_add;

pub(super) const ESC: u8 = 0x1B;

/// UTF-8 lead byte of U+0080–U+00BF.
pub(super) const C1_LEAD: u8 = 0xC2;

/// Second UTF-8 byte of U+009B, the one-char CSI introducer.
pub(super) const C1_CSI: u8 = 0x9B;

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
