//! Text as JavaScript strings hold it: UTF-16 code units, made from UTF-8 without a detour
//! through `char`s (`readTaskOutput` hands its text to Node as UTF-16, API.md §6.4).

/// Appends `text.encode_utf16()` to `units`, fast: runs of ASCII are widened as blocks (which
/// the compiler vectorises), the characters between them decoded in place.
pub fn push_utf16(text: &str, units: &mut Vec<u16>) {
  let bytes = text.as_bytes();
  units.reserve(bytes.len());
  let continuation = |at: usize| u32::from(bytes[at] & 0x3F);
  let mut at = 0;
  while at < bytes.len() {
    let run = ascii_run(&bytes[at..]);
    units.extend(bytes[at..at + run].iter().map(|&b| u16::from(b)));
    at += run;
    // `text` is valid UTF-8: each lead byte says how many continuation bytes follow.
    while let Some(&lead) = bytes.get(at).filter(|b| !b.is_ascii()) {
      let lead = u32::from(lead);
      if lead < 0xE0 {
        units.push(((lead & 0x1F) << 6 | continuation(at + 1)) as u16);
        at += 2;
      } else if lead < 0xF0 {
        units.push(((lead & 0x0F) << 12 | continuation(at + 1) << 6 | continuation(at + 2)) as u16);
        at += 3;
      } else {
        let c = ((lead & 0x07) << 18
          | continuation(at + 1) << 12
          | continuation(at + 2) << 6
          | continuation(at + 3))
          - 0x1_0000;
        units.push(0xD800 | (c >> 10) as u16);
        units.push(0xDC00 | (c & 0x3FF) as u16);
        at += 4;
      }
    }
  }
}

/// How many bytes at the start of `bytes` are ASCII, 16 at a time.
fn ascii_run(bytes: &[u8]) -> usize {
  let mut run = 0;
  for block in bytes.chunks_exact(16) {
    if block.iter().fold(0, |any, &b| any | b) & 0x80 != 0 {
      break;
    }
    run += 16;
  }
  run
    + bytes[run..]
      .iter()
      .position(|b| !b.is_ascii())
      .unwrap_or(bytes.len() - run)
}

#[cfg(test)]
mod tests {
  use super::push_utf16;

  fn utf16_units(text: &str) -> Vec<u16> {
    let mut units = vec![0xFFFF];
    push_utf16(text, &mut units);
    units.split_off(1)
  }

  #[test]
  fn utf16_units_are_the_standard_ones() {
    for text in [
      "",
      "plain ascii, longer than eight bytes",
      "é",
      "ab€cdefghijk𝄞lmnop你好qrstuvwx",
      "𝄞𝄞𝄞𝄞𝄞𝄞𝄞𝄞𝄞",
      "12345678é12345678\u{FFFD}",
      "\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}",
    ] {
      assert_eq!(
        utf16_units(text),
        text.encode_utf16().collect::<Vec<_>>(),
        "{text:?}"
      );
    }
  }
}
