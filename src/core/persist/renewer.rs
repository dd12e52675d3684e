//! The process-wide lease renewer: one thread that sets the mtime of
//! `<stateDir>/lease` to now for every stateDir this process started or
//! recovered a persisted task in, every `min(leaseMs) / 4` (at least 250 ms),
//! for as long as the process lives. A Rust thread never keeps Node alive.
//! Only [`attach`] creates a lease; the thread renews existing ones, so a
//! state directory that its owner removes stays removed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::sync::lock;

struct Renewer {
  dirs: Mutex<HashMap<PathBuf, u64>>,
  poke: Condvar,
}

fn renewer() -> &'static Renewer {
  static RENEWER: OnceLock<Renewer> = OnceLock::new();
  RENEWER.get_or_init(|| {
    let spawned = std::thread::Builder::new()
      .name("taskstream-lease".into())
      .spawn(run);
    if let Err(error) = spawned {
      tracing::warn!(%error, "taskstream: the lease renewer thread could not start");
    }
    Renewer {
      dirs: Mutex::new(HashMap::new()),
      poke: Condvar::new(),
    }
  })
}

/// Renews `<state_dir>/lease` now and from now on, at least every
/// `lease_ms / 4` (the shortest lease of the directory counts).
pub fn attach(state_dir: &Path, lease_ms: u64) {
  renew(state_dir);
  let r = renewer();
  let mut dirs = lock(&r.dirs);
  let entry = dirs.entry(state_dir.to_owned()).or_insert(lease_ms);
  *entry = (*entry).min(lease_ms);
  r.poke.notify_all();
}

/// The renewal period for the attached dirs.
fn period(dirs: &HashMap<PathBuf, u64>) -> Duration {
  let min = dirs.values().copied().min().unwrap_or(4000);
  Duration::from_millis((min / 4).max(250))
}

fn run() {
  let r = renewer();
  let mut dirs = lock(&r.dirs);
  loop {
    let wait = period(&dirs);
    dirs = r
      .poke
      .wait_timeout(dirs, wait)
      .map(|(guard, _)| guard)
      .unwrap_or_else(|poisoned| poisoned.into_inner().0);
    let list: Vec<PathBuf> = dirs.keys().cloned().collect();
    drop(dirs);
    for dir in &list {
      renew_existing(dir);
    }
    dirs = lock(&r.dirs);
  }
}

/// Sets the lease file's mtime to now (created 0600 if absent, never
/// through a symlink): `core::persist::renew`.
pub fn renew(state_dir: &Path) {
  if let Err(error) = crate::persist::renew(state_dir) {
    tracing::debug!(%error, dir = %state_dir.display(), "taskstream: lease renewal failed");
  }
}

fn renew_existing(state_dir: &Path) {
  if let Err(error) = crate::persist::renew_existing(state_dir) {
    tracing::debug!(%error, dir = %state_dir.display(), "taskstream: lease renewal failed");
  }
}
