//! What a state directory holds, for `recover()`: every `<id>.task.json` of
//! one kind, sorted by its lock, its end record and its keeper's identity;
//! and [`forget`], which removes a reported task's files.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::identity::{prove_with, Identity};
use super::launch::KEEPER_TAG_VAR;
use super::lock::{AdoptionLock, TryLock};
use super::records::{
  check_task_id, read_record, read_record_or_quarantine, EndRecord, ReadRecord, TaskFiles,
  TaskKind, TaskRecord,
};

/// One finding of [`scan`]. Every variant with a record holds the task's
/// adoption lock: the caller owns the task until it drops the lock (after
/// [`forget`] for an end it reported).
#[derive(Debug)]
pub enum Found {
  /// A record that is not trusted (it was renamed `<name>.corrupt`).
  Corrupt { file: PathBuf, error: String },
  /// Another host holds the task's lock: not ours to report or adopt.
  Busy { id: String },
  /// The task ended; `end` says how. Report it once, then [`forget`] it.
  Ended {
    record: TaskRecord,
    end: EndRecord,
    lock: AdoptionLock,
  },
  /// Its keeper is alive and proved: adopt it (renew the lease, follow the
  /// output from the cursor, cancel through `<id>.cancel`).
  Running {
    record: TaskRecord,
    lock: AdoptionLock,
  },
  /// Its keeper is gone without an end record, or its pid now belongs to a
  /// stranger. Nothing is signalled; the task record was renamed
  /// `<id>.lost.json` so it is reported once.
  Lost {
    record: TaskRecord,
    reason: String,
    lock: AdoptionLock,
  },
}

/// Sorts every `*.task.json` of `kind` in `state_dir` (corrupt ones of any
/// kind are reported and renamed). The state directory is not validated
/// here: call `ensure_state_dir` first.
pub fn scan(state_dir: &Path, kind: TaskKind) -> io::Result<Vec<Found>> {
  let mut ids: Vec<String> = fs::read_dir(state_dir)?
    .filter_map(|entry| {
      let name = entry.ok()?.file_name().into_string().ok()?;
      let id = name.strip_suffix(".task.json")?.to_owned();
      check_task_id(&id).ok().map(|()| id)
    })
    .collect();
  ids.sort();
  let mut found = Vec::new();
  for id in ids {
    let files = TaskFiles::new(state_dir, &id);
    // Peek first, so another kind's task (another registry's) is neither
    // locked nor touched.
    let record: TaskRecord = match read_record(&files.task) {
      ReadRecord::Valid(record) => record,
      ReadRecord::Missing => continue,
      ReadRecord::Corrupt(_) => {
        if let ReadRecord::Corrupt(error) = read_record_or_quarantine::<TaskRecord>(&files.task) {
          found.push(Found::Corrupt {
            file: files.task.clone(),
            error,
          });
        }
        continue;
      }
    };
    if record.kind != kind || record.id != id {
      continue;
    }
    let lock = match AdoptionLock::try_acquire(state_dir, &id)? {
      TryLock::Acquired(lock) => lock,
      TryLock::Busy => {
        found.push(Found::Busy { id });
        continue;
      }
    };
    // Under the lock: the previous owner may have forgotten it meanwhile.
    if !files.task.exists() {
      continue;
    }
    let finding = classify(record, &files, lock, &mut found);
    found.push(finding);
  }
  Ok(found)
}

/// Sorts one task whose lock we hold; a corrupt end record is also reported
/// in `found`.
fn classify(
  record: TaskRecord,
  files: &TaskFiles,
  lock: AdoptionLock,
  found: &mut Vec<Found>,
) -> Found {
  let end = match read_record_or_quarantine::<EndRecord>(&files.end) {
    ReadRecord::Valid(end) => return Found::Ended { record, end, lock },
    ReadRecord::Missing => None,
    ReadRecord::Corrupt(error) => {
      found.push(Found::Corrupt {
        file: files.end.clone(),
        error: error.clone(),
      });
      Some(error)
    }
  };
  let keeper = &record.keeper;
  let identity = prove_with(keeper.pid, keeper.start_time, KEEPER_TAG_VAR, &keeper.tag);
  let reason = match (identity, end) {
    (Identity::Same, _) => return Found::Running { record, lock },
    (_, Some(error)) => format!("its end record is corrupt ({error})"),
    (Identity::Gone, None) => {
      // The keeper may have written its end and exited since we looked.
      if let ReadRecord::Valid(end) = read_record_or_quarantine::<EndRecord>(&files.end) {
        return Found::Ended { record, end, lock };
      }
      format!(
        "its keeper (pid {}) is gone and recorded no end",
        keeper.pid
      )
    }
    (Identity::Stranger, None) => format!(
      "its keeper's pid {} belongs to another process now",
      keeper.pid
    ),
  };
  let _ = fs::rename(&files.task, &files.lost);
  Found::Lost {
    record,
    reason,
    lock,
  }
}

/// Removes the files of task `id` once its end was reported: the task and
/// end records, the cursor, the cancel request, the raw log and the keeper's
/// log, and last the lock file (so a host that takes the lock meanwhile
/// finds no task). A shell's output file and sidecar stay. Missing files are
/// fine.
pub fn forget(state_dir: &Path, id: &str) -> io::Result<()> {
  check_task_id(id)?;
  let files = TaskFiles::new(state_dir, id);
  for path in [
    &files.task,
    &files.end,
    &files.cursor,
    &files.cancel,
    &files.log,
    &files.keeper_log,
    &files.lock,
  ] {
    match fs::remove_file(path) {
      Ok(()) => {}
      Err(error) if error.kind() == io::ErrorKind::NotFound => {}
      Err(error) => return Err(error),
    }
  }
  Ok(())
}
