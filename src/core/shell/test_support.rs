//! Helpers for the background shell tests: scratch directories, and (Linux)
//! spawning a command the way `executeBackground` does.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

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

  use crate::core::process::{
    child_env, new_task_tag, resolve_program, shell_config, spawn, EnvOptions, SpawnRequest,
    SpawnedProcess,
  };

  /// Spawns `script` with the shell, the environment and the `TERM` of a
  /// background shell (§2.15 step 6).
  pub(in crate::core::shell) fn spawn_shell(script: &str) -> SpawnedProcess {
    let shell = shell_config();
    let program = resolve_program(&shell.program, std::env::var_os("PATH").as_deref())
      .expect("the shell is on PATH");
    let mut args = shell.args_prefix;
    args.push(script.to_owned());
    let task_tag = new_task_tag();
    let env = child_env(
      std::env::vars_os(),
      &EnvOptions {
        remove: Vec::new(),
        term: "xterm-256color",
        overrides: Vec::new(),
        task_tag: task_tag.clone(),
      },
    );
    spawn(SpawnRequest {
      program,
      args,
      cwd: std::env::temp_dir(),
      env,
      task_tag,
      terminal: None,
    })
    .expect("spawn")
  }

  /// Polls `condition` every 10 ms until it holds or `timeout` passes.
  pub(in crate::core::shell) fn wait_until(
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
