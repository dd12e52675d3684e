//! Random identifiers: `mon_` + 16 hex for monitors, `bg_` + 8 hex for shells.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// `len` lowercase hex characters from the OS random source (falling back to a
/// randomly keyed hash of a counter and the time where there is none).
pub fn random_hex(len: usize) -> String {
  let mut bytes = vec![0u8; len.div_ceil(2)];
  if !fill_from_os(&mut bytes) {
    fill_from_hasher(&mut bytes);
  }
  let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
  hex.truncate(len);
  hex
}

fn fill_from_os(bytes: &mut [u8]) -> bool {
  std::fs::File::open("/dev/urandom")
    .and_then(|mut f| f.read_exact(bytes))
    .is_ok()
}

fn fill_from_hasher(bytes: &mut [u8]) {
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  for chunk in bytes.chunks_mut(8) {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
      std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos()),
    );
    let value = hasher.finish().to_le_bytes();
    chunk.copy_from_slice(&value[..chunk.len()]);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn hex_of_the_requested_length_and_distinct() {
    let a = random_hex(16);
    let b = random_hex(16);
    assert_eq!(a.len(), 16);
    assert_eq!(random_hex(8).len(), 8);
    assert!(a
      .chars()
      .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_ne!(a, b);
    let mut fallback = [0u8; 4];
    fill_from_hasher(&mut fallback);
  }
}
