//! One cgroup v2 per task, where the host may create them (Linux): the
//! containment that depends on nothing a task's processes can change.
//!
//! Process groups, parent links and the environment tag all fail for a daemon
//! that double-forks, calls `setsid` and clears its environment (`env -i`,
//! `sudo`): it ends up in no group of ours, with no tag and with init as its
//! parent. A cgroup holds every process forked inside it, whatever it does to
//! itself, and `cgroup.kill` (Linux 5.14) SIGKILLs all of them in one step,
//! including children forked while the kill runs, which no `/proc` scan can
//! promise.
//!
//! Layout: `<the host's own cgroup>/taskstream-<host pid>/<task tag>`. The
//! task cgroups are children of the host's, so every limit the host is under
//! still applies to its tasks. No controller is enabled. The child is moved
//! into its cgroup right after `posix_spawn` returns (the shell has only just
//! been exec'd, so it has not forked yet) and, on the fork path, by the child
//! itself before it execs. When no cgroup v2 hierarchy is mounted, the host's
//! cgroup is not writable, or `cgroup.kill` is missing, every function here
//! is a no-op and containment falls back to groups, parent links and tags.
//! `TASKSTREAM_CGROUP=0` turns cgroups off (to test that fallback).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use once_cell::sync::Lazy;

use crate::sync::lock;

/// Set to `0` to keep tasks out of cgroups.
pub const CGROUP_ENV: &str = "TASKSTREAM_CGROUP";

/// The directory under which this host creates its tasks' cgroups, if it can.
static BASE: Lazy<Option<PathBuf>> = Lazy::new(|| {
  if std::env::var_os(CGROUP_ENV).is_some_and(|v| v == "0") {
    return None;
  }
  let base = own_cgroup_dir()?.join(format!("taskstream-{}", std::process::id()));
  match fs::create_dir(&base) {
    Ok(()) => {}
    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
    Err(error) => {
      tracing::debug!(%error, path = %base.display(), "taskstream: no task cgroups");
      return None;
    }
  }
  if !base.join("cgroup.kill").exists() {
    tracing::debug!("taskstream: cgroup.kill is missing (Linux < 5.14); no task cgroups");
    let _ = fs::remove_dir(&base);
    return None;
  }
  Some(base)
});

/// Whether tasks get cgroups on this host.
pub fn available() -> bool {
  BASE.is_some()
}

/// The host's base directory for task cgroups (the watchdog removes it).
pub fn base() -> Option<&'static Path> {
  BASE.as_deref()
}

/// The host's own cgroup v2 directory: the `0::<path>` line of
/// `/proc/self/cgroup` under the mount point of the `cgroup2` file system.
fn own_cgroup_dir() -> Option<PathBuf> {
  let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
  let own = cgroups.lines().find_map(|line| line.strip_prefix("0::"))?;
  let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
  let mount = cgroup2_mount_point(&mounts)?;
  Some(mount.join(own.trim_start_matches('/')))
}

/// The mount point of the first `cgroup2` file system in a mountinfo text.
pub(super) fn cgroup2_mount_point(mountinfo: &str) -> Option<PathBuf> {
  mountinfo.lines().find_map(|line| {
    let (fields, rest) = line.split_once(" - ")?;
    if rest.split(' ').next()? != "cgroup2" {
      return None;
    }
    let mount_point = fields.split(' ').nth(4)?;
    Some(PathBuf::from(unescape_octal(mount_point)))
  })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(text: &str) -> String {
  let bytes = text.as_bytes();
  let mut out = Vec::with_capacity(bytes.len());
  let mut i = 0;
  while i < bytes.len() {
    if bytes[i] == b'\\'
      && i + 4 <= bytes.len()
      && bytes[i + 1..i + 4]
        .iter()
        .all(|b| (b'0'..=b'7').contains(b))
    {
      let value = bytes[i + 1..i + 4]
        .iter()
        .fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
      out.push(value as u8);
      i += 4;
    } else {
      out.push(bytes[i]);
      i += 1;
    }
  }
  String::from_utf8_lossy(&out).into_owned()
}

/// A task's cgroup, created before the child is spawned.
pub struct TaskCgroup {
  dir: PathBuf,
  /// `cgroup.procs`, opened for writing, so moving a process is one write.
  procs: File,
}

/// Ready-made, empty task cgroups. Creating a cgroup costs the kernel a
/// good part of a millisecond, so the timer thread keeps a few ready and a
/// spawn on the JavaScript thread usually only takes one.
static POOL: Mutex<Vec<TaskCgroup>> = Mutex::new(Vec::new());
/// How many ready cgroups the pool keeps.
const POOL_SIZE: usize = 8;
/// Names pooled cgroups (`t<n>`); a task's cgroup need not carry its tag.
static POOLED: AtomicU64 = AtomicU64::new(0);
/// Task cgroups asked for so far ([`TaskCgroup::create`]).
static CREATED: AtomicU64 = AtomicU64::new(0);

impl TaskCgroup {
  /// A cgroup for a new task, from the pool when one is ready, else created
  /// now as `<base>/<tag>`; `None` when cgroups are unavailable or it fails.
  ///
  /// The pool starts with a process's second task: a process that starts one (a keeper) makes
  /// no cgroups it will not use, and leaves its watchdog none to remove.
  pub fn create(tag: &str) -> Option<TaskCgroup> {
    BASE.as_ref()?;
    let pooled = lock(&POOL).pop();
    if CREATED.fetch_add(1, Ordering::Relaxed) > 0 {
      super::timer::schedule(std::time::Duration::ZERO, refill_pool);
    }
    pooled.or_else(|| Self::make(tag))
  }

  fn make(name: &str) -> Option<TaskCgroup> {
    let dir = BASE.as_ref()?.join(name);
    if let Err(error) = fs::create_dir(&dir) {
      tracing::debug!(%error, "taskstream: could not create a task cgroup");
      return None;
    }
    match OpenOptions::new()
      .write(true)
      .open(dir.join("cgroup.procs"))
    {
      Ok(procs) => Some(TaskCgroup { dir, procs }),
      Err(error) => {
        tracing::debug!(%error, "taskstream: could not open a task cgroup");
        let _ = fs::remove_dir(&dir);
        None
      }
    }
  }

  /// Its directory.
  pub fn dir(&self) -> &Path {
    &self.dir
  }

  /// The path of its `cgroup.procs`.
  pub fn procs_path(&self) -> PathBuf {
    self.dir.join("cgroup.procs")
  }

  /// The descriptor a forked child writes `0` to, moving itself in.
  pub fn procs_fd(&self) -> std::os::fd::RawFd {
    std::os::fd::AsRawFd::as_raw_fd(&self.procs)
  }

  /// The cgroup of a task whose child moves itself in through [`Self::procs_fd`] or
  /// [`Self::procs_path`] before anything of the task runs. Should that move fail, the cgroup
  /// stays empty and the task relies on the other mechanisms (group, tag, descendants).
  pub fn entered_by_child(self) -> PathBuf {
    self.dir
  }

  /// Removes the cgroup of a task that never started.
  pub fn discard(self) {
    let _ = fs::remove_dir(&self.dir);
  }
}

/// Tops the pool up (on the timer thread).
fn refill_pool() {
  while lock(&POOL).len() < POOL_SIZE {
    let name = format!("t{}", POOLED.fetch_add(1, Ordering::Relaxed));
    match TaskCgroup::make(&name) {
      Some(cgroup) => lock(&POOL).push(cgroup),
      None => return,
    }
  }
}

/// SIGKILL to every process in the cgroup, atomically (`cgroup.kill`).
pub fn kill(dir: &Path) {
  if let Err(error) = fs::write(dir.join("cgroup.kill"), b"1") {
    if error.kind() != io::ErrorKind::NotFound {
      tracing::debug!(%error, path = %dir.display(), "taskstream: cgroup.kill failed");
    }
  }
}

/// The processes in the cgroup now.
pub fn pids(dir: &Path) -> Vec<u32> {
  fs::read_to_string(dir.join("cgroup.procs"))
    .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
    .unwrap_or_default()
}

/// Whether a live process is in the cgroup (`populated 1` in `cgroup.events`).
pub fn populated(dir: &Path) -> bool {
  fs::read_to_string(dir.join("cgroup.events"))
    .map(|text| text.lines().any(|l| l.trim() == "populated 1"))
    .unwrap_or(false)
}

/// Removes an empty cgroup; false while it still holds a process.
pub fn remove(dir: &Path) -> bool {
  match fs::remove_dir(dir) {
    Ok(()) => true,
    Err(e) => e.kind() == io::ErrorKind::NotFound,
  }
}
