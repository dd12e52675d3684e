//! The adoption lock: `flock(LOCK_EX | LOCK_NB)` (Windows: `LockFileEx`) on `<stateDir>/<id>.lock`,
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

/// `LockFileEx(LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY)` on the file's first byte:
/// the lock belongs to the handle (a second open of the same file in the same process is refused
/// too), and the system releases it when the handle closes, with the host however it ends. The
/// handle is not inheritable, and shares delete access so that `forget` can remove the file
/// under it.
#[cfg(windows)]
mod imp {
  use std::fs::OpenOptions;
  use std::io;
  use std::os::windows::fs::OpenOptionsExt;
  use std::os::windows::io::AsRawHandle;
  use std::path::Path;

  use windows_sys::Win32::Foundation::{ERROR_IO_PENDING, ERROR_LOCK_VIOLATION};
  use windows_sys::Win32::Storage::FileSystem::{
    LockFileEx, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, LOCKFILE_EXCLUSIVE_LOCK,
    LOCKFILE_FAIL_IMMEDIATELY,
  };
  use windows_sys::Win32::System::IO::OVERLAPPED;

  use super::{AdoptionLock, TryLock};

  pub(super) fn try_acquire(path: &Path) -> io::Result<TryLock> {
    let file = OpenOptions::new()
      .read(true)
      .write(true)
      .create(true)
      .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
      .open(path)?;
    // SAFETY: plain data; offset 0.
    let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
    // SAFETY: a live handle of ours (opened for synchronous I/O), one byte, a live OVERLAPPED.
    let ok = unsafe {
      LockFileEx(
        file.as_raw_handle() as _,
        LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
        0,
        1,
        0,
        &mut overlapped,
      )
    };
    if ok != 0 {
      return Ok(TryLock::Acquired(AdoptionLock {
        file,
        path: path.to_path_buf(),
      }));
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error().map(|code| code as u32) {
      Some(ERROR_LOCK_VIOLATION) | Some(ERROR_IO_PENDING) => Ok(TryLock::Busy),
      _ => Err(error),
    }
  }
}
