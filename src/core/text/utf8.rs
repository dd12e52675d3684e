//! Streaming UTF-8 decoding, one decoder per stream (CONTRACT.md §2.3 layer 1, §4 item 1).

/// The longest UTF-8 sequence.
const MAX_SEQUENCE_LEN: usize = 4;

/// Streaming UTF-8 decoder: the same output as `TextDecoder('utf-8')` fed with
/// `{ stream: true }` and then flushed. Invalid bytes follow the WHATWG replacement rule (each
/// maximal subpart becomes one U+FFFD); a sequence cut at the end of a read is kept until the
/// next read, and one still incomplete at [`finish`](Self::finish) becomes one U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8StreamDecoder {
  /// A valid but incomplete sequence from the end of the last read (at most 3 bytes).
  pending: [u8; MAX_SEQUENCE_LEN],
  pending_len: usize,
}

impl Utf8StreamDecoder {
  pub fn new() -> Self {
    Self::default()
  }

  /// Decodes one read, appending the text to `out`.
  pub fn decode(&mut self, bytes: &[u8], out: &mut String) {
    let rest = self.complete_pending(bytes, out);
    self.decode_fresh(rest, out);
  }

  /// True when no incomplete sequence is held, so a read that is valid UTF-8
  /// by itself decodes to itself.
  pub fn is_idle(&self) -> bool {
    self.pending_len == 0
  }

  /// Bytes of the incomplete sequence held (at most 3).
  pub fn held_len(&self) -> usize {
    self.pending_len
  }

  /// Ends the stream: an incomplete sequence still held becomes one U+FFFD. The decoder can be
  /// reused afterwards.
  pub fn finish(&mut self, out: &mut String) {
    if self.pending_len > 0 {
      out.push(char::REPLACEMENT_CHARACTER);
      self.pending_len = 0;
    }
  }

  /// Feeds bytes into the held sequence until it completes or proves invalid; returns the
  /// bytes not consumed. On an invalid byte the held prefix becomes one U+FFFD and that byte
  /// is decoded again as the start of something new.
  fn complete_pending<'a>(&mut self, mut bytes: &'a [u8], out: &mut String) -> &'a [u8] {
    while self.pending_len > 0 {
      let Some((&byte, tail)) = bytes.split_first() else {
        break;
      };
      self.pending[self.pending_len] = byte;
      self.pending_len += 1;
      match std::str::from_utf8(&self.pending[..self.pending_len]) {
        Ok(text) => {
          out.push_str(text);
          self.pending_len = 0;
          bytes = tail;
        }
        Err(error) if error.error_len().is_none() => bytes = tail,
        Err(_) => {
          out.push(char::REPLACEMENT_CHARACTER);
          self.pending_len = 0;
        }
      }
    }
    bytes
  }

  /// Decodes bytes that start on a sequence boundary; keeps an incomplete tail.
  fn decode_fresh(&mut self, mut bytes: &[u8], out: &mut String) {
    loop {
      match std::str::from_utf8(bytes) {
        Ok(text) => {
          out.push_str(text);
          return;
        }
        Err(error) => {
          let (valid, rest) = bytes.split_at(error.valid_up_to());
          out.push_str(std::str::from_utf8(valid).unwrap_or_default());
          match error.error_len() {
            Some(invalid_len) => {
              out.push(char::REPLACEMENT_CHARACTER);
              bytes = &rest[invalid_len..];
            }
            None => {
              self.pending[..rest.len()].copy_from_slice(rest);
              self.pending_len = rest.len();
              return;
            }
          }
        }
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Decodes `pieces` as consecutive reads of one stream.
  fn decode_pieces(pieces: &[&[u8]]) -> String {
    let mut decoder = Utf8StreamDecoder::new();
    let mut out = String::new();
    for piece in pieces {
      decoder.decode(piece, &mut out);
    }
    decoder.finish(&mut out);
    out
  }

  /// Every two-read split of `bytes` decodes like a whole-buffer lossy decode.
  fn assert_every_split_matches_whole(bytes: &[u8]) {
    let whole = String::from_utf8_lossy(bytes);
    for cut in 0..=bytes.len() {
      let (head, tail) = bytes.split_at(cut);
      assert_eq!(
        decode_pieces(&[head, tail]),
        whole,
        "{bytes:x?} cut at {cut}"
      );
    }
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(decode_pieces(&singles), whole, "{bytes:x?} byte by byte");
  }

  #[test]
  fn a_char_split_across_reads_decodes_whole() {
    let bytes = "你好".as_bytes();
    assert_eq!(decode_pieces(&[&bytes[..2], &bytes[2..]]), "你好");
    assert_every_split_matches_whole("a你😀é\u{FFFF}".as_bytes());
  }

  #[test]
  fn an_incomplete_sequence_at_the_end_is_one_replacement() {
    assert_eq!(decode_pieces(&[b"\xE2"]), "\u{FFFD}");
    assert_eq!(decode_pieces(&[b"ab", b"\xF0\x9F\x98"]), "ab\u{FFFD}");
  }

  #[test]
  fn invalid_sequences_follow_the_maximal_subpart_rule() {
    let samples: [&[u8]; 9] = [
      b"a\xFFb",
      b"\xE2\x28\xA1",
      b"\xE2\x82\x28",
      b"\xF0\x9F\x98\x41",
      b"\xED\xA0\x80x",
      b"\xC0\xAF",
      b"\xF4\x90\x80\x80",
      b"\xE0\x80\xAF\xE2\x82",
      b"ok\x80\x80\xE2\x82\xAC\xF0",
    ];
    for bytes in samples {
      assert_every_split_matches_whole(bytes);
    }
    assert_eq!(decode_pieces(&[b"\xE2\x82", b"\x28"]), "\u{FFFD}(");
  }

  #[test]
  fn finish_resets_for_reuse() {
    let mut decoder = Utf8StreamDecoder::new();
    let mut out = String::new();
    decoder.decode(b"\xE2\x82", &mut out);
    decoder.finish(&mut out);
    decoder.decode(b"x", &mut out);
    decoder.finish(&mut out);
    assert_eq!(out, "\u{FFFD}x");
  }
}
