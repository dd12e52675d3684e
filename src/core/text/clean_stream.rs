//! One byte stream turned into clean text: the streaming UTF-8 decoder, then
//! the streaming ANSI stripper (CONTRACT.md §4 items 1–2). Monitors and
//! background shells keep one per stdout and stderr.

use super::ansi::has_introducer;
use super::{AnsiStreamStripper, Utf8StreamDecoder};

#[derive(Default)]
pub struct CleanTextStream {
  utf8: Utf8StreamDecoder,
  ansi: AnsiStreamStripper,
  decoded: String,
  stripped: String,
}

impl CleanTextStream {
  /// One read: decoded and stripped; a split character or sequence waits for the
  /// next read. The common case (valid UTF-8, no escape sequence, nothing held)
  /// returns the read itself, without copying.
  pub fn push<'a>(&'a mut self, bytes: &'a [u8]) -> &'a str {
    let Self {
      utf8,
      ansi,
      decoded,
      stripped,
    } = self;
    let text: &str = match std::str::from_utf8(bytes) {
      Ok(text) if utf8.is_idle() => text,
      _ => {
        decoded.clear();
        utf8.decode(bytes, decoded);
        decoded
      }
    };
    if ansi.is_idle() && !has_introducer(text) {
      return text;
    }
    stripped.clear();
    ansi.push(text, stripped);
    stripped
  }

  /// True when no split character or escape sequence is held: the next read
  /// starts afresh.
  pub fn is_idle(&self) -> bool {
    self.utf8.is_idle() && self.ansi.is_idle()
  }

  /// An upper bound on the chars the stripper would hold if the next read
  /// began now: the chars it holds plus the bytes the decoder holds. A read
  /// may be cut anywhere, with the same outcome as reading it whole, when each
  /// piece but the last keeps this plus its own length within
  /// [`MAX_HELD_SEQUENCE_CHARS`](super::MAX_HELD_SEQUENCE_CHARS): then no piece
  /// makes the stripper give up on a sequence that the whole read would have
  /// completed.
  pub fn held_chars(&self) -> usize {
    self.utf8.held_len() + self.ansi.held_chars()
  }

  /// The end of the stream (EOF, settle, cancel): an incomplete UTF-8 sequence
  /// becomes U+FFFD, and an escape sequence still held is released as
  /// unterminated, exactly as `strip_ansi` resolves the end of a text
  /// (CONTRACT.md §3.17), so what follows an unterminated `ESC ]` is never
  /// swallowed. Monitors and output files both end their streams this way.
  pub fn finish(&mut self) -> &str {
    self.decoded.clear();
    self.utf8.finish(&mut self.decoded);
    self.stripped.clear();
    self.ansi.push(&self.decoded, &mut self.stripped);
    self.ansi.finish(&mut self.stripped);
    &self.stripped
  }

  /// Forgets a held escape sequence (the stream is being closed).
  pub fn discard_pending(&mut self) {
    self.ansi.discard_pending();
  }
}
