//! A host's hold on one persisted task: the adoption lock on `<id>.lock`
//! (held for as long as this host owns the task; the kernel drops it when
//! the host dies), the cancel request to its keeper, the cursor, and the
//! removal of the task's state once its end was reported.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::core::sync::lock;

/// Lowercase hex FNV-1a 64 of `bytes` (the records' checksum).
pub fn fnv1a64_hex(bytes: &[u8]) -> String {
  let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
  for b in bytes {
    hash ^= u64::from(*b);
    hash = hash.wrapping_mul(0x0100_0000_01b3);
  }
  format!("{hash:016x}")
}

/// Writes `contents` to `path` atomically (a temporary file, fsync, rename), 0600.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
  let name = path
    .file_name()
    .map(|n| n.to_string_lossy().into_owned())
    .unwrap_or_default();
  let tmp = path.with_file_name(format!(
    "{name}.tmp-{}-{}",
    std::process::id(),
    crate::core::ids::random_hex(8)
  ));
  let result = (|| {
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    {
      use std::os::unix::fs::OpenOptionsExt;
      open.mode(0o600);
    }
    let mut file = open.open(&tmp)?;
    file.write_all(contents)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
  })();
  if result.is_err() {
    let _ = std::fs::remove_file(&tmp);
  }
  result
}

/// `<id>.cursor`: `{ version, id, offset, checksum }`.
pub fn write_cursor(path: &Path, id: &str, offset: u64) -> io::Result<()> {
  let body = serde_json::json!({ "version": 1, "id": id, "offset": offset });
  let checksum = fnv1a64_hex(body.to_string().as_bytes());
  let mut full = body;
  full["checksum"] = serde_json::Value::String(checksum);
  write_atomic(path, full.to_string().as_bytes())
}

/// The offset of a cursor; `None` when absent or not to be trusted (the host
/// then starts from the beginning: every byte counts as missed).
pub fn read_cursor(path: &Path, id: &str) -> Option<u64> {
  let text = std::fs::read_to_string(path).ok()?;
  let mut v: serde_json::Value = serde_json::from_str(&text).ok()?;
  let checksum = v.as_object_mut()?.remove("checksum")?;
  if checksum.as_str()? != fnv1a64_hex(v.to_string().as_bytes())
    || v.get("version")?.as_u64()? != 1
    || v.get("id")?.as_str()? != id
  {
    return None;
  }
  v.get("offset")?.as_u64()
}

/// The files of task `id` in `state_dir`.
#[derive(Clone, Debug)]
pub struct TaskFiles {
  pub state_dir: PathBuf,
  pub id: String,
}

impl TaskFiles {
  pub fn new(state_dir: &Path, id: &str) -> Self {
    Self {
      state_dir: state_dir.to_owned(),
      id: id.to_owned(),
    }
  }
  pub fn file(&self, suffix: &str) -> PathBuf {
    self.state_dir.join(format!("{}{suffix}", self.id))
  }
  pub fn task(&self) -> PathBuf {
    self.file(".task.json")
  }
  pub fn end(&self) -> PathBuf {
    self.file(".end.json")
  }
  pub fn log(&self) -> PathBuf {
    self.file(".log")
  }
  pub fn cursor(&self) -> PathBuf {
    self.file(".cursor")
  }
  pub fn cancel(&self) -> PathBuf {
    self.file(".cancel")
  }
  pub fn lock(&self) -> PathBuf {
    self.file(".lock")
  }
}

/// The adoption lock on `<id>.lock`, held while this value lives.
pub struct AdoptionLock {
  file: File,
}

impl AdoptionLock {
  /// `Ok(None)` when another process holds it.
  pub fn try_take(files: &TaskFiles) -> io::Result<Option<Self>> {
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).create(true);
    #[cfg(unix)]
    {
      use std::os::unix::fs::OpenOptionsExt;
      open
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let file = open.open(files.lock())?;
    #[cfg(unix)]
    {
      use std::os::fd::AsRawFd;
      // SAFETY: flock on a descriptor we own.
      let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
      if rc != 0 {
        let error = io::Error::last_os_error();
        return if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
          Ok(None)
        } else {
          Err(error)
        };
      }
    }
    Ok(Some(Self { file }))
  }
}

impl std::fmt::Debug for AdoptionLock {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    write!(f, "AdoptionLock({:?})", self.file)
  }
}

/// This host's hold on a persisted task.
pub struct KeeperLink {
  pub files: TaskFiles,
  lock: Mutex<Option<AdoptionLock>>,
  cancel_sent: AtomicBool,
}

impl KeeperLink {
  pub fn new(files: TaskFiles, lock: AdoptionLock) -> Self {
    Self {
      files,
      lock: Mutex::new(Some(lock)),
      cancel_sent: AtomicBool::new(false),
    }
  }

  /// Asks the keeper to end the task (`{"via": …}` in `<id>.cancel`), once.
  pub fn request_cancel(&self, via: &str) {
    if self.cancel_sent.swap(true, Ordering::AcqRel) {
      return;
    }
    let body = serde_json::json!({ "via": via }).to_string();
    if let Err(error) = write_atomic(&self.files.cancel(), body.as_bytes()) {
      tracing::warn!(%error, id = %self.files.id, "taskstream: could not ask a keeper to stop its task");
    }
  }

  /// The task's end was reported: its state goes (a monitor's log too), the
  /// lock file last, then the lock is released.
  pub fn forget_state(&self, remove_log: bool) {
    let f = &self.files;
    let mut paths = vec![f.task(), f.end(), f.cursor(), f.cancel()];
    if remove_log {
      paths.push(f.log());
    }
    paths.push(f.file(".keeper.log"));
    for path in paths {
      let _ = std::fs::remove_file(path);
    }
    let _ = std::fs::remove_file(f.lock());
    lock(&self.lock).take();
  }

  /// Lets go of the task without touching its state (another host may adopt it).
  pub fn release(&self) {
    lock(&self.lock).take();
  }
}
