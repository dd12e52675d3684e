//! The fast paths of `bytes` against their scalar definitions.

use super::*;

fn check_find(find: fn(&[u8], u8, u8) -> Option<usize>) {
  for len in 0..70 {
    for at in 0..len {
      for needle in [0x1B_u8, 0xC2] {
        let mut hay = vec![b'x'; len];
        hay[at] = needle;
        if at + 3 < len {
          hay[at + 3] = 0x1B;
        }
        assert_eq!(find(&hay, 0x1B, 0xC2), Some(at), "len {len} at {at}");
      }
    }
    assert_eq!(find(&vec![b'x'; len], 0x1B, 0xC2), None);
  }
  // Bytes next to the needles (0x1A, 0x1C, 0xC1, 0xC3, 0x80, 0xFF) never match.
  let near = [0x1A, 0x1C, 0xC1, 0xC3, 0x80, 0xFF, 0x00, 0x9B, 0x1A, 0x1C];
  assert_eq!(find(&near, 0x1B, 0xC2), None);
}

#[test]
fn finds_the_first_of_two_bytes_anywhere() {
  check_find(find_either);
  check_find(swar_find_either);
  check_find(scalar_find_either);
}

fn check_find_special(find: fn(&[u8]) -> Option<usize>, any_high: bool) {
  let special: &[u8] = if any_high {
    &[b'\n', 0x1B, 0x80, 0xC2, 0xFF, 0x9B]
  } else {
    &[b'\n', 0x1B, 0xC2]
  };
  let ordinary: &[u8] = if any_high {
    &[b'x', 0x00, 0x7F, b'\r', 0x0B, 0x1A, 0x1C]
  } else {
    &[b'x', 0x80, 0xC1, 0xC3, 0x9B, 0xFF, 0x0B, 0x1A, 0x1C]
  };
  for len in 0..140 {
    for at in 0..len {
      for &needle in special {
        let mut hay: Vec<u8> = (0..len).map(|i| ordinary[i % ordinary.len()]).collect();
        hay[at] = needle;
        if at + 5 < len {
          hay[at + 5] = b'\n';
        }
        assert_eq!(find(&hay), Some(at), "len {len} at {at} needle {needle:#x}");
      }
    }
    let hay: Vec<u8> = (0..len).map(|i| ordinary[i % ordinary.len()]).collect();
    assert_eq!(find(&hay), None, "len {len}");
  }
}

#[test]
fn finds_line_ends_and_special_bytes_anywhere() {
  check_find_special(find_line_end_or_not_plain, true);
  check_find_special(swar_find_line_special::<true>, true);
  check_find_special(scalar_find_line_special::<true>, true);
  check_find_special(find_line_end_or_introducer, false);
  check_find_special(swar_find_line_special::<false>, false);
  check_find_special(scalar_find_line_special::<false>, false);
}

fn below_len(len: usize) -> u64 {
  if len >= 64 {
    !0
  } else {
    (1 << len) - 1
  }
}

#[test]
fn plain_masks_classify_every_byte_value_at_every_position() {
  for value in 0..=255u8 {
    for len in [0, 1, 17, 63, 64] {
      for at in 0..len {
        let mut block = vec![b'x'; len];
        block[at] = value;
        let bit = 1u64 << at;
        let kept = ((0x20..=0x7F).contains(&value) && value != b'<')
          || matches!(value, b'\t' | b'\n' | b'\r');
        let expected = PlainMasks {
          newline: if value == b'\n' { bit } else { 0 },
          carriage_return: if value == b'\r' { bit } else { 0 },
          blank: if value == b' ' || value == b'\t' {
            bit
          } else {
            0
          },
          other: if kept { 0 } else { bit },
        };
        assert_eq!(
          plain_masks(&block),
          expected,
          "value {value:#x} at {at} of {len}"
        );
        assert_eq!(portable_plain_masks(&block), expected);
        #[cfg(target_arch = "x86_64")]
        if len == 64 && avx2::available() {
          // SAFETY: the CPU has AVX2.
          assert_eq!(
            unsafe { avx2::plain_masks_64(&block) },
            expected,
            "avx2: value {value:#x} at {at}"
          );
        }
        #[cfg(target_arch = "x86_64")]
        if len == 64 && avx512::available() {
          // SAFETY: the CPU has AVX-512 F and BW.
          assert_eq!(
            unsafe { avx512::plain_masks_64(&block) },
            expected,
            "avx512: value {value:#x} at {at}"
          );
        }
      }
    }
  }
}

#[test]
fn block_masks_classify_every_byte_value_at_every_position() {
  for value in 0..=255u8 {
    for len in [0, 1, 17, 63, 64] {
      for at in 0..len {
        let mut block = vec![b'\t'; len];
        block[at] = value;
        let bit = 1u64 << at;
        let expected = BlockMasks {
          newline: if value == b'\n' { bit } else { 0 },
          printable: if (0x21..=0x7F).contains(&value) {
            bit
          } else {
            0
          },
          not_plain: if value >= 0x80 || value == 0x1B {
            bit
          } else {
            0
          },
        };
        assert_eq!(
          block_masks(&block),
          expected,
          "value {value:#x} at {at} of {len}"
        );
        assert_eq!(portable_block_masks(&block), expected);
        let escape = EscapeMasks {
          escape: if value == 0x1B { bit } else { 0 },
          bracket: if value == b'[' { bit } else { 0 },
          params: if value.is_ascii_digit() || value == b';' {
            bit
          } else {
            0
          },
          final_m: if value == b'm' { bit } else { 0 },
        };
        assert_eq!(
          escape_masks(&block),
          escape,
          "value {value:#x} at {at} of {len}"
        );
        assert_eq!(portable_escape_masks(&block), escape);
        let utf8 = Utf8Masks {
          special_lead: if [0xC2, 0xE1, 0xE2, 0xE3, 0xEF].contains(&value) {
            bit
          } else {
            0
          },
        };
        assert_eq!(
          utf8_masks(&block),
          utf8,
          "value {value:#x} at {at} of {len}"
        );
        assert_eq!(portable_utf8_masks(&block), utf8);
        // The filler TAB is whitespace too.
        let whitespace = if matches!(value, b'\t'..=b'\r' | b' ') {
          below_len(len)
        } else {
          below_len(len) & !bit
        };
        assert_eq!(whitespace_mask(&block), whitespace);
        assert_eq!(portable_whitespace_mask(&block), whitespace);
        #[cfg(target_arch = "x86_64")]
        if len == 64 && avx2::available() {
          let class = CsiClassMasks {
            escape: escape.escape,
            close_bracket: if value == b']' { bit } else { 0 },
            // The filler TAB is no CSI byte either.
            not_csi: if crate::text::csi_bytes::is_csi_byte(value) {
              !bit
            } else {
              !0
            },
          };
          // SAFETY: the CPU has AVX2.
          unsafe {
            assert_eq!(avx2::block_masks_64(&block), expected);
            assert_eq!(avx2::escape_masks_64(&block), escape);
            assert_eq!(avx2::csi_class_masks_64(&block), class, "value {value:#x}");
            assert_eq!(avx2::utf8_masks_64(&block), utf8);
            assert_eq!(avx2::whitespace_mask_64(&block), whitespace);
          }
        }
        let digit = if value.is_ascii_digit() { bit } else { 0 };
        assert_eq!(digit_mask(&block), digit);
      }
    }
  }
}
