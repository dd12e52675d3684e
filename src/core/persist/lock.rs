//! The adoption lock: `flock(LOCK_EX | LOCK_NB)` on `<stateDir>/<id>.lock`,
//! held by the host that owns the task for as long as the [`AdoptionLock`]
//! lives. The kernel releases it when that host dies, however it dies. Two
//! locks on the same file never coexist, in one process or in two (each
//! acquisition opens the file anew: `flock` belongs to the open file).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::records::{check_task_id, TaskFiles};

/// A held adoption lock; dropping it releases the lock.
#[derive(Debug)]
pub struct AdoptionLock {
  #[allow(dead_code)]
  file: File,
  path: PathBuf,
}

/// What [`AdoptionLock::try_acquire`] found.
#[derive(Debug)]
pub enum TryLock {
  Acquired(AdoptionLock),
  /// Another holder (another host, or another lock of this one) has it.
  Busy,
}

impl AdoptionLock {
  /// Takes the lock of task `id` in `state_dir`, creating the lock file
  /// (`0600`, never through a symlink) if needed. Never blocks.
  pub fn try_acquire(state_dir: &Path, id: &str) -> io::Result<TryLock> {
    check_task_id(id)?;
    imp::try_acquire(&TaskFiles::new(state_dir, id).lock)
  }

  /// The lock file.
  pub fn path(&self) -> &Path {
    &self.path
  }
}

#[cfg(unix)]
mod imp {
  use std::fs::OpenOptions;
  use std::io;
  use std::os::fd::AsRawFd;
  use std::path::Path;

  use super::{AdoptionLock, TryLock};
  use crate::persist::records::private_mode;

  pub(super) fn try_acquire(path: &Path) -> io::Result<TryLock> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true);
    private_mode(&mut options);
    // std opens with O_CLOEXEC: no child (a keeper, a task) inherits it.
    let file = options.open(path)?;
    loop {
      // SAFETY: flock on a descriptor we own, integer arguments only.
      if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(TryLock::Acquired(AdoptionLock {
          file,
          path: path.to_path_buf(),
        }));
      }
      let error = io::Error::last_os_error();
      match error.raw_os_error() {
        Some(libc::EINTR) => continue,
        Some(libc::EWOULDBLOCK) => return Ok(TryLock::Busy),
        _ => return Err(error),
      }
    }
  }
}

#[cfg(not(unix))]
mod imp {
  use std::io;
  use std::path::Path;

  use super::TryLock;

  pub(super) fn try_acquire(_path: &Path) -> io::Result<TryLock> {
    Err(crate::persist::unsupported())
  }
}
