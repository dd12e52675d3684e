//! A host's hold on one persisted task: the adoption lock on `<id>.lock`
//! (held for as long as this host owns the task; the kernel drops it when
//! the host dies), the cancel request to its keeper, the cursor, and the
//! removal of the task's state once its end was reported.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::end_view::EndView;
use crate::end::EndVia;
use crate::persist::identity::{prove_with, Identity};
use crate::persist::records::{read_record, write_record, CursorRecord, ReadRecord};
use crate::persist::{
  self, AdoptionLock, EndRecord, ProcessIdentity, TaskFiles, KEEPER_TAG_VAR, RECORD_VERSION,
};
use crate::sync::lock;

/// `<id>.cursor`.
pub fn write_cursor(path: &Path, id: &str, offset: u64) -> io::Result<()> {
  write_record(
    path,
    &CursorRecord {
      version: RECORD_VERSION,
      id: id.to_owned(),
      offset,
    },
  )
}

/// The offset of a cursor; `None` when absent or not to be trusted (the host
/// then counts every byte of the log as missed).
pub fn read_cursor(path: &Path, id: &str) -> Option<u64> {
  match read_record::<CursorRecord>(path) {
    ReadRecord::Valid(c) if c.id == id => Some(c.offset),
    _ => None,
  }
}

/// The keeper's end record, as a follower polls it.
pub fn read_end(path: &Path) -> Result<Option<EndView>, String> {
  match read_record::<EndRecord>(path) {
    ReadRecord::Valid(end) => Ok(Some(EndView::from_record(&end))),
    ReadRecord::Missing => Ok(None),
    ReadRecord::Corrupt(error) => Err(error),
  }
}

/// This host's hold on a persisted task.
pub struct KeeperLink {
  pub state_dir: PathBuf,
  pub id: String,
  pub files: TaskFiles,
  lock: Mutex<Option<AdoptionLock>>,
  cancel_sent: AtomicBool,
  /// The keeper, once it answered (from its task record).
  keeper: Mutex<Option<ProcessIdentity>>,
}

impl KeeperLink {
  pub fn new(state_dir: &Path, id: &str, lock: AdoptionLock) -> Self {
    Self {
      state_dir: state_dir.to_owned(),
      id: id.to_owned(),
      files: TaskFiles::new(state_dir, id),
      lock: Mutex::new(Some(lock)),
      cancel_sent: AtomicBool::new(false),
      keeper: Mutex::new(None),
    }
  }

  /// The keeper as its task record names it.
  pub fn set_keeper(&self, keeper: ProcessIdentity) {
    *lock(&self.keeper) = Some(keeper);
  }

  /// Whether the recorded keeper still runs (proved by start time and tag;
  /// `true` while none is known).
  pub fn keeper_alive(&self) -> bool {
    match &*lock(&self.keeper) {
      Some(k) => prove_with(k.pid, k.start_time, KEEPER_TAG_VAR, &k.tag) == Identity::Same,
      None => true,
    }
  }

  /// Asks the keeper to end the task (`<id>.cancel`), once.
  pub fn request_cancel(&self, via: EndVia) {
    if self.cancel_sent.swap(true, Ordering::AcqRel) {
      return;
    }
    if let Err(error) = persist::request_cancel(&self.state_dir, &self.id, via) {
      tracing::warn!(%error, id = %self.id, "taskstream: could not ask a keeper to stop its task");
    }
  }

  /// The task's end was reported: its state goes (the lock file last), then
  /// the lock is released.
  pub fn forget_state(&self) {
    if let Err(error) = persist::forget(&self.state_dir, &self.id) {
      tracing::debug!(%error, id = %self.id, "taskstream: could not remove a task's state");
    }
    lock(&self.lock).take();
  }

  /// Lets go of the task without touching its state (another host may adopt it).
  pub fn release(&self) {
    lock(&self.lock).take();
  }
}
