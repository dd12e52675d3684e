//! Table-driven test helpers over `spec/vectors.json` (CONTRACT.md §3).

use std::fmt::Debug;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::test_vectors::{cases, describe};

/// Run `check` on every vector listed under `name` and fail once, listing every failing case.
pub(super) fn run_table(name: &str, check: impl Fn(&Value) -> Result<(), String>) {
  let all = cases(name);
  let failures: Vec<String> = all
    .iter()
    .filter_map(|case| {
      check(case)
        .err()
        .map(|why| format!("  {}: {why}", describe(case)))
    })
    .collect();
  assert!(
    failures.is_empty(),
    "{} of {} `{name}` vectors failed:\n{}",
    failures.len(),
    all.len(),
    failures.join("\n")
  );
}

/// `Ok` when `got == want`, otherwise a message showing both.
pub(super) fn expect_eq<T: PartialEq + Debug>(got: T, want: T) -> Result<(), String> {
  if got == want {
    Ok(())
  } else {
    Err(format!("got {got:?}, want {want:?}"))
  }
}

/// The case's `input` as a string.
pub(super) fn input_str(case: &Value) -> Result<&str, String> {
  case["input"]
    .as_str()
    .ok_or_else(|| "input is not a string".to_owned())
}

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
pub(super) struct TempTree {
  root: PathBuf,
}

// Made only by Unix tests (the symlink vectors and containment checks).
#[cfg_attr(not(unix), allow(dead_code))]
impl TempTree {
  pub(super) fn new(label: &str) -> Self {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
      .duration_since(UNIX_EPOCH)
      .map_or(0, |d| d.subsec_nanos());
    let unique = format!(
      "taskstream-guards-{label}-{}-{nanos}-{}",
      std::process::id(),
      COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let root = std::env::temp_dir().join(unique);
    fs::create_dir_all(&root).expect("create temp tree");
    TempTree { root }
  }

  pub(super) fn path(&self) -> &Path {
    &self.root
  }

  /// Create `relative` (and its parents) under the tree and return its path.
  pub(super) fn dir(&self, relative: &str) -> PathBuf {
    let dir = self.root.join(relative);
    fs::create_dir_all(&dir).expect("create temp dir");
    dir
  }
}

impl Drop for TempTree {
  fn drop(&mut self) {
    let _ = fs::remove_dir_all(&self.root);
  }
}
