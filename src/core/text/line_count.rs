//! Counting lines without building them: what a monitor does with a read the
//! throttle rejects whole (the firehose case, CONTRACT.md §2.10). Works on 64
//! bytes at a time with [`block_masks`], so no per-line work remains, and on
//! raw bytes: plain text (ASCII without ESC) needs no decoding or stripping.

use super::bytes::block_masks;

/// Lines of a text that ends with `\n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCount {
  /// Every line, blank ones included.
  pub lines: u64,
  /// Lines holding at least one printable ASCII byte above space (`0x21..=0x7F`):
  /// the lines that stay non-blank after trimming and `sanitizeMonitorLine`.
  pub non_blank: u64,
}

/// Counts the lines of `text`, which ends with `\n` (or is empty), when it is
/// plain text (ASCII without ESC, so decoding and ANSI stripping leave it as it
/// is) and no line is longer than `max_line_len` bytes (its `\n` not counted);
/// `None` otherwise, and the caller takes the exact path.
///
/// A line is non-blank when a printable byte comes after the previous `\n`.
/// Per block, with `P` the printable bits and `N` the newline bits, adding `P`
/// to `!N` carries out of every run of non-newline bits that holds a `P` bit,
/// into the `\n` that ends it: `(!N + P + carry) & N` are the newlines that end
/// a non-blank line, and the carry out of bit 63 continues the run into the
/// next block.
pub fn count_plain_lines(text: &[u8], max_line_len: usize) -> Option<LineCount> {
  debug_assert!(text.last().is_none_or(|&b| b == b'\n'));
  // Lines between two newlines of one block are shorter than 63 bytes.
  debug_assert!(max_line_len >= 63);
  let mut count = LineCount::default();
  let mut carry = false;
  // Bytes since the last newline.
  let mut run = 0usize;
  for block in text.chunks(64) {
    let masks = block_masks(block);
    if masks.not_plain != 0 {
      return None;
    }
    let newline = masks.newline;
    let (partial, carry_a) = (!newline).overflowing_add(masks.printable);
    let (sum, carry_b) = partial.overflowing_add(u64::from(carry));
    carry = carry_a || carry_b;
    count.lines += u64::from(newline.count_ones());
    count.non_blank += u64::from((sum & newline).count_ones());
    if newline == 0 {
      run += block.len();
    } else {
      if run + newline.trailing_zeros() as usize > max_line_len {
        return None;
      }
      let last = 63 - newline.leading_zeros() as usize;
      run = block.len() - 1 - last;
    }
  }
  Some(count)
}

#[cfg(test)]
mod tests {
  use super::*;

  /// The definition, one line at a time.
  fn reference(text: &[u8], max_line_len: usize) -> Option<LineCount> {
    if !text.is_ascii() || text.contains(&0x1B) {
      return None;
    }
    let mut count = LineCount::default();
    let body = text.strip_suffix(b"\n")?;
    for line in body.split(|&b| b == b'\n') {
      if line.len() > max_line_len {
        return None;
      }
      count.lines += 1;
      count.non_blank += u64::from(line.iter().any(|&b| b > b' '));
    }
    Some(count)
  }

  #[test]
  fn counts_blank_and_non_blank_lines() {
    let text = b"yes\n\n  \n\t\r\n\x01\x7f\n a \n";
    assert_eq!(
      count_plain_lines(text, 4096),
      Some(LineCount {
        lines: 6,
        non_blank: 3
      })
    );
    assert_eq!(count_plain_lines(b"", 4096), Some(LineCount::default()));
  }

  #[test]
  fn non_plain_text_or_long_lines_take_the_exact_path() {
    assert_eq!(count_plain_lines("é\n".as_bytes(), 4096), None);
    assert_eq!(count_plain_lines(b"a\n\x80\n", 4096), None);
    assert_eq!(count_plain_lines(b"\x1b[31mred\n", 4096), None);
    let line = format!("{}\n", "x".repeat(4097));
    assert_eq!(count_plain_lines(line.as_bytes(), 4096), None);
    let line = format!("{}\n", "x".repeat(4096));
    assert_eq!(
      count_plain_lines(line.as_bytes(), 4096),
      Some(LineCount {
        lines: 1,
        non_blank: 1
      })
    );
  }

  /// Random texts of printable, blank and control bytes, with lines running
  /// across block boundaries and around the length limit, agree with the
  /// line-at-a-time definition.
  #[test]
  fn agrees_with_the_definition_on_random_texts() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      seed
    };
    let alphabet = [
      b'\n', b' ', b'\t', b'\r', 0x01, 0x00, b'y', b'~', 0x7f, 0x1b,
    ];
    for round in 0..3000 {
      let len = (next() % 400) as usize;
      // Mostly blanks, so lines with a single printable byte are common.
      let mut text: Vec<u8> = (0..len)
        .map(|_| match next() % 16 {
          0..=3 => b'\n',
          4 => alphabet[(next() % alphabet.len() as u64) as usize],
          5 => b'y',
          _ => b' ',
        })
        .collect();
      if round % 7 == 0 {
        text.extend(std::iter::repeat_n(b' ', (next() % 200) as usize));
        text.push(b'z');
      }
      text.push(b'\n');
      for max in [63, 64, 100, 4096] {
        assert_eq!(
          count_plain_lines(&text, max),
          reference(&text, max),
          "round {round}, limit {max}: {text:?}"
        );
      }
    }
  }
}
