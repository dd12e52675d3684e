//! Helpers for the background shell tests: scratch directories, and (Linux)
//! spawning a command the way `executeBackground` does.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(target_os = "linux")]
use std::sync::{Mutex, MutexGuard};

/// Tests that run real shells take turns: they spawn trees, and fewer
/// descriptors open at once keeps the descriptor-counting tests stable.
#[cfg(target_os = "linux")]
pub(super) fn serial() -> MutexGuard<'static, ()> {
  static SERIAL: Mutex<()> = Mutex::new(());
  SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh directory under the system temp dir, removed on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
  pub(super) fn new(label: &str) -> Self {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
      "taskstream-shell-{label}-{}-{}",
      std::process::id(),
      NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).expect("create temp dir");
    Self(path)
  }

  pub(super) fn path(&self) -> &Path {
    &self.0
  }

  /// Writes `content` to `name` in the directory and returns its path.
  pub(super) fn file(&self, name: &str, content: &[u8]) -> PathBuf {
    let path = self.0.join(name);
    fs::write(&path, content).expect("write temp file");
    path
  }
}

impl Drop for TempDir {
  fn drop(&mut self) {
    let _ = fs::remove_dir_all(&self.0);
  }
}

#[cfg(target_os = "linux")]
pub(super) use process_helpers::*;

#[cfg(target_os = "linux")]
mod process_helpers {
  use std::time::{Duration, Instant};

  use crate::launch::{default_remove_env, ShellCommand, Term};
  use crate::process::SpawnedProcess;

  /// Spawns `script` with the shell, the environment and the `TERM` of a
  /// background shell (§2.15 step 6), as `executeBackground` does.
  pub(in crate::shell) fn spawn_shell(script: &str) -> SpawnedProcess {
    let remove_env = default_remove_env();
    let cwd = std::env::temp_dir();
    crate::launch::spawn_shell(&ShellCommand {
      command: script,
      cwd: &cwd,
      env: &[],
      remove_env: &remove_env,
      term: Term::Shell,
      terminal: None,
      limits: None,
    })
    .expect("spawn")
  }

  /// Polls `condition` every 10 ms until it holds or `timeout` passes.
  pub(in crate::shell) fn wait_until(
    timeout: Duration,
    mut condition: impl FnMut() -> bool,
  ) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
      if condition() {
        return true;
      }
      if Instant::now() >= deadline {
        return false;
      }
      std::thread::sleep(Duration::from_millis(10));
    }
  }
}
