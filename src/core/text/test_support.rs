//! Shared helpers for the text tests.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::test_vectors::{cases, describe};

/// Checks `function` against every vector under `name` whose input and expected value are
/// strings.
pub(crate) fn assert_string_vectors(name: &str, function: impl Fn(&str) -> String) {
  for case in cases(name) {
    let input = case["input"].as_str().expect("string input");
    let expected = case["expected"].as_str().expect("string expected");
    assert_eq!(function(input), expected, "{name}: {}", describe(&case));
  }
}

/// A tiny deterministic PRNG (xorshift64) for property tests.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
  pub(crate) fn next(&mut self) -> u64 {
    self.0 ^= self.0 << 13;
    self.0 ^= self.0 >> 7;
    self.0 ^= self.0 << 17;
    self.0
  }

  /// A value in `0..bound` (`bound` > 0).
  pub(crate) fn below(&mut self, bound: usize) -> usize {
    (self.next() % bound as u64) as usize
  }
}

/// A fresh directory under the system temp dir (named after `prefix`), removed on drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
  pub(crate) fn new(prefix: &str) -> Self {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
      "{prefix}-{}-{}",
      std::process::id(),
      NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&path).expect("create temp dir");
    Self(path)
  }

  /// Writes `content` to `name` in the directory.
  pub(crate) fn file(&self, name: &str, content: &[u8]) -> PathBuf {
    let path = self.0.join(name);
    std::fs::write(&path, content).expect("write temp file");
    path
  }
}

impl Drop for TempDir {
  fn drop(&mut self) {
    let _ = std::fs::remove_dir_all(&self.0);
  }
}
