//! `recover()` of either registry (docs/persistence.md): what becomes of each finding of a
//! [`scan`](super::scan), in order. The registry registers, settles and adopts a task, and reports
//! what it leaves, through [`TakeOver`]; this decides which, and does the state's part: an ended
//! task's state is forgotten once it is settled (then its lock goes), a running one gets its
//! link to its keeper, whose lease this host renews from then on.

use std::path::Path;
use std::sync::Arc;

use super::{forget, renewer, EndView, Found, KeeperLink, TaskRecord};

/// What a registry does with the tasks `recover()` found.
pub trait TakeOver {
  /// What registering a recorded task leaves for its settle or adoption.
  type Registered;
  type Error;

  /// Registers the recorded task as running. A refusal (its id is taken) leaves the task alone:
  /// it is reported [`Self::busy`], with the reason.
  fn register(&mut self, record: &TaskRecord) -> Result<Self::Registered, String>;
  /// Settles a registered task with its recorded end (one terminal notification).
  fn settle(
    &mut self,
    record: &TaskRecord,
    registered: Self::Registered,
    end: &EndView,
  ) -> Result<(), Self::Error>;
  /// Follows a registered task whose keeper lives, through `link`.
  fn adopt(
    &mut self,
    record: &TaskRecord,
    registered: Self::Registered,
    link: Arc<KeeperLink>,
  ) -> Result<(), Self::Error>;
  /// A record that is not trusted (renamed `<name>.corrupt` by the scan).
  fn corrupt(&mut self, file: &Path, error: &str) -> Result<(), Self::Error>;
  /// A task left alone: another live host holds it, or (`why`) this registry refused it.
  fn busy(&mut self, id: &str, why: Option<&str>) -> Result<(), Self::Error>;
  /// A task whose keeper is gone without an end, or is not the recorded process (never signalled).
  fn lost(&mut self, record: &TaskRecord, reason: &str) -> Result<(), Self::Error>;
}

/// Takes over every finding of the scan of `state_dir`, in order; stops at the registry's first
/// error.
pub fn take_over<T: TakeOver>(
  state_dir: &Path,
  found: Vec<Found>,
  host: &mut T,
) -> Result<(), T::Error> {
  for finding in found {
    let (record, end, lock) = match finding {
      Found::Corrupt { file, error } => {
        host.corrupt(&file, &error)?;
        continue;
      }
      Found::Busy { id } => {
        host.busy(&id, None)?;
        continue;
      }
      Found::Lost { record, reason, .. } => {
        host.lost(&record, &reason)?;
        continue;
      }
      Found::Ended { record, end, lock } => (record, Some(end), lock),
      Found::Running { record, lock } => (record, None, lock),
    };
    let registered = match host.register(&record) {
      Ok(registered) => registered,
      Err(why) => {
        host.busy(&record.id, Some(&why))?;
        continue;
      }
    };
    match end {
      Some(end) => {
        host.settle(&record, registered, &EndView::from_record(&end))?;
        let _ = forget(state_dir, &record.id);
        drop(lock);
      }
      None => {
        let link = Arc::new(KeeperLink::new(state_dir, &record.id, lock));
        link.set_keeper(record.keeper.clone());
        renewer::attach(state_dir, record.lease_ms);
        host.adopt(&record, registered, link)?;
      }
    }
  }
  Ok(())
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::end::TaskEnd;
  use crate::persist::{
    ensure_state_dir, AdoptionLock, EndRecord, ProcessIdentity, TaskFiles, TaskKind, TaskProcess,
    TryLock, RECORD_VERSION,
  };

  /// Says what it was asked, in order; refuses to register `taken`.
  #[derive(Default)]
  struct Host(Vec<String>);

  impl TakeOver for Host {
    type Registered = String;
    type Error = String;

    fn register(&mut self, record: &TaskRecord) -> Result<String, String> {
      self.0.push(format!("register {}", record.id));
      match record.id.as_str() {
        "taken" => Err("its id is taken".into()),
        id => Ok(format!("entry {id}")),
      }
    }
    fn settle(&mut self, _: &TaskRecord, entry: String, end: &EndView) -> Result<(), String> {
      self.0.push(format!("settle {entry} at {}", end.end_time));
      Ok(())
    }
    fn adopt(
      &mut self,
      _: &TaskRecord,
      entry: String,
      link: Arc<KeeperLink>,
    ) -> Result<(), String> {
      self.0.push(format!("adopt {entry} ({})", link.id));
      Ok(())
    }
    fn corrupt(&mut self, file: &Path, error: &str) -> Result<(), String> {
      let name = file.file_name().unwrap().to_string_lossy();
      self.0.push(format!("corrupt {name}: {error}"));
      Ok(())
    }
    fn busy(&mut self, id: &str, why: Option<&str>) -> Result<(), String> {
      self.0.push(format!("busy {id} {why:?}"));
      Ok(())
    }
    fn lost(&mut self, record: &TaskRecord, reason: &str) -> Result<(), String> {
      self.0.push(format!("lost {}: {reason}", record.id));
      Ok(())
    }
  }

  fn record(id: &str) -> TaskRecord {
    let identity = ProcessIdentity {
      pid: 1,
      start_time: None,
      tag: "t".into(),
    };
    TaskRecord {
      version: RECORD_VERSION,
      kind: TaskKind::Shell,
      id: id.into(),
      command: "sleep 1".into(),
      description: "sleep 1".into(),
      cwd: "/".into(),
      start_time: 0,
      lease_ms: 60_000,
      output_path: "/dev/null".into(),
      status_path: None,
      max_output_bytes: 0,
      options: serde_json::Value::Null,
      keeper: identity,
      task: TaskProcess {
        pid: 2,
        pgid: 2,
        start_time: None,
        tag: "t".into(),
        cgroup: None,
      },
    }
  }

  #[test]
  fn every_finding_in_order_an_ended_task_forgotten_once_settled_a_running_one_adopted() {
    let dir = std::env::temp_dir().join(format!("taskstream-take-over-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    ensure_state_dir(&dir).unwrap();
    let lock = |id: &str| match AdoptionLock::try_acquire(&dir, id).unwrap() {
      TryLock::Acquired(lock) => lock,
      _ => panic!("the lock of {id} is free"),
    };
    let ended = TaskFiles::new(&dir, "bg_ended");
    std::fs::write(&ended.task, "{}").unwrap();
    let end = EndRecord {
      version: RECORD_VERSION,
      id: "bg_ended".into(),
      end_time: 1234,
      end: TaskEnd::exited(Some(0)),
      exit_code: Some(0),
      output_bytes: 0,
      dropped_bytes: 0,
    };
    let found = vec![
      Found::Corrupt {
        file: dir.join("x.task.json.corrupt"),
        error: "bad checksum".into(),
      },
      Found::Busy { id: "bg_b".into() },
      Found::Lost {
        record: record("bg_lost"),
        reason: "keeper gone".into(),
        lock: lock("bg_lost"),
      },
      Found::Ended {
        record: record("bg_ended"),
        end,
        lock: lock("bg_ended"),
      },
      Found::Running {
        record: record("taken"),
        lock: lock("taken"),
      },
      Found::Running {
        record: record("bg_run"),
        lock: lock("bg_run"),
      },
    ];
    let mut host = Host::default();
    take_over(&dir, found, &mut host).unwrap();
    assert_eq!(
      host.0,
      [
        "corrupt x.task.json.corrupt: bad checksum",
        "busy bg_b None",
        "lost bg_lost: keeper gone",
        "register bg_ended",
        "settle entry bg_ended at 1234",
        "register taken",
        "busy taken Some(\"its id is taken\")",
        "register bg_run",
        "adopt entry bg_run (bg_run)",
      ]
    );
    // The ended task's state is gone and its lock free; a refused one's lock is free too.
    assert!(!ended.task.exists());
    for id in ["bg_ended", "taken"] {
      assert!(matches!(
        AdoptionLock::try_acquire(&dir, id).unwrap(),
        TryLock::Acquired(_)
      ));
    }
    let _ = std::fs::remove_dir_all(&dir);
  }
}
