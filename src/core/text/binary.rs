//! Binary sniffing (CONTRACT.md §1.7, §3.16).

/// The sample size `isBinary` uses when the caller gives none.
pub const DEFAULT_BINARY_SAMPLE_SIZE: usize = 512;

/// `isBinary` (CONTRACT.md §1.7): true if and only if a `0x00` byte occurs in the first
/// `sample_size` bytes.
pub fn is_binary(bytes: &[u8], sample_size: usize) -> bool {
  bytes.iter().take(sample_size).any(|&byte| byte == 0)
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::test_vectors::{cases, describe};

  fn from_hex(hex: &str) -> Vec<u8> {
    (0..hex.len())
      .step_by(2)
      .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex byte"))
      .collect()
  }

  #[test]
  fn is_binary_vectors() {
    for case in cases("isBinary") {
      let bytes = from_hex(case["input"]["bytesHex"].as_str().expect("bytesHex"));
      let sample_size = case["input"]["sampleSize"]
        .as_u64()
        .map_or(DEFAULT_BINARY_SAMPLE_SIZE, |n| n as usize);
      let expected = case["expected"].as_bool().expect("bool expected");
      assert_eq!(
        is_binary(&bytes, sample_size),
        expected,
        "{}",
        describe(&case)
      );
    }
  }

  #[test]
  fn sample_edges() {
    assert!(!is_binary(&[0], 0));
    assert!(is_binary(&[1, 0], 2));
    assert!(!is_binary(&[1, 0], 1));
  }
}
