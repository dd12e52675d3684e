//! Helpers for the persistence tests: scratch state directories, keeper
//! configs, the re-executed keeper program, a lease renewer, polling with
//! deadlines, and cleanup that kills by recorded group and tag.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::persist::records::{read_record, ReadRecord};
use crate::persist::{
  prove, renew, EndRecord, Identity, KeeperConfig, KeeperProgram, TaskFiles, TaskKind, TaskRecord,
  KEEPER_TAG_VAR, RECORD_VERSION,
};
use crate::process::{
  child_env, kill_now, new_task_tag, proc_table, tree_alive, EnvOptions, ProcessGroup,
};

/// A fresh `0700` state directory under the system temp dir, removed on drop.
pub(super) struct StateDir(PathBuf);

impl StateDir {
  pub(super) fn new(label: &str) -> Self {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
      "taskstream-persist-{label}-{}-{}",
      std::process::id(),
      NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).expect("create state dir");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).unwrap();
    Self(path)
  }

  pub(super) fn path(&self) -> &Path {
    &self.0
  }

  pub(super) fn files(&self, id: &str) -> TaskFiles {
    TaskFiles::new(&self.0, id)
  }
}

impl Drop for StateDir {
  fn drop(&mut self) {
    let _ = fs::remove_dir_all(&self.0);
  }
}

/// This test binary re-executed as a keeper (see `keeper_entry`).
pub(super) fn keeper_program() -> KeeperProgram {
  KeeperProgram {
    program: std::env::current_exe().expect("current_exe"),
    args: [
      "--exact",
      "persist::tests::keeper_entry",
      "--nocapture",
      "--test-threads=1",
    ]
    .iter()
    .map(OsString::from)
    .collect(),
    env: vec![("TASKSTREAM_TEST_KEEPER".into(), "1".into())],
  }
}

/// `setsid <program>` in a test command, on a system without the `setsid`
/// program (macOS) done by perl's `POSIX::setsid` (same pid: it execs).
fn portable_setsid(command: &str) -> String {
  if cfg!(target_os = "linux") {
    command.to_owned()
  } else {
    command.replace(
      "setsid ",
      "perl -MPOSIX -e 'POSIX::setsid(); exec @ARGV or die' ",
    )
  }
}

/// A keeper config running `bash -c <command>` in `dir` (see [`portable_setsid`]).
pub(super) fn config(
  dir: &StateDir,
  kind: TaskKind,
  id: &str,
  command: &str,
  lease_ms: u64,
) -> KeeperConfig {
  let task_tag = new_task_tag();
  let env = child_env(
    std::env::vars_os(),
    &EnvOptions {
      remove: vec!["TASKSTREAM_TEST_KEEPER".into(), KEEPER_TAG_VAR.into()],
      term: "dumb",
      overrides: Vec::new(),
      task_tag: task_tag.clone(),
    },
  );
  let output_path = match kind {
    TaskKind::Monitor => dir.files(id).log,
    TaskKind::Shell => dir.path().join(format!("shell-{id}.output")),
  };
  KeeperConfig {
    version: RECORD_VERSION,
    kind,
    id: id.to_owned(),
    state_dir: dir.path().to_string_lossy().into_owned(),
    command: command.to_owned(),
    description: format!("test {id}"),
    cwd: "/".to_owned(),
    program: "/bin/bash".to_owned(),
    args: vec!["-c".to_owned(), portable_setsid(command)],
    env: env
      .into_iter()
      .map(|(k, v)| {
        (
          k.to_string_lossy().into_owned(),
          v.to_string_lossy().into_owned(),
        )
      })
      .collect(),
    task_tag,
    lease_ms,
    output_path: output_path.to_string_lossy().into_owned(),
    status_path: (kind == TaskKind::Shell).then(|| {
      dir
        .path()
        .join(format!("shell-{id}.status"))
        .to_string_lossy()
        .into_owned()
    }),
    max_output_bytes: 1 << 20,
    start_time: crate::clock::wall_ms() as u64,
    options: serde_json::json!({ "test": true }),
  }
}

/// Renews the lease of a state directory every 200 ms until dropped.
pub(super) struct Renewer {
  stop: Arc<AtomicBool>,
  thread: Option<JoinHandle<()>>,
}

impl Renewer {
  pub(super) fn start(dir: &Path) -> Self {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let dir = dir.to_path_buf();
    renew(&dir).expect("renew");
    let thread = std::thread::spawn(move || {
      while !flag.load(Ordering::Relaxed) {
        let _ = renew(&dir);
        std::thread::sleep(Duration::from_millis(200));
      }
    });
    Self {
      stop,
      thread: Some(thread),
    }
  }
}

impl Drop for Renewer {
  fn drop(&mut self) {
    self.stop.store(true, Ordering::Relaxed);
    if let Some(thread) = self.thread.take() {
      let _ = thread.join();
    }
  }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
pub(super) fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
  let deadline = Instant::now() + timeout;
  loop {
    if condition() {
      return true;
    }
    if Instant::now() >= deadline {
      return false;
    }
    std::thread::sleep(Duration::from_millis(20));
  }
}

/// The task's group as its keeper recorded it.
pub(super) fn group_of(record: &TaskRecord) -> ProcessGroup {
  ProcessGroup {
    pgid: record.task.pgid,
    leader_start_time: record.task.start_time,
    task_tag: record.task.tag.clone(),
    cgroup: record.task.cgroup.as_ref().map(PathBuf::from),
    limits: None,
  }
}

/// Kills what a test left behind: the task's tree (by its recorded group
/// and tag) and the keeper (only if proved to be it).
pub(super) struct Cleanup(pub(super) Option<TaskRecord>);

impl Drop for Cleanup {
  fn drop(&mut self) {
    let Some(record) = self.0.take() else {
      return;
    };
    let keeper = &record.keeper;
    if crate::persist::identity::prove_with(
      keeper.pid,
      keeper.start_time,
      KEEPER_TAG_VAR,
      &keeper.tag,
    ) == Identity::Same
    {
      // SAFETY: kill with integer arguments, to a proved process.
      unsafe {
        libc::kill(keeper.pid as libc::pid_t, libc::SIGKILL);
      }
    }
    let group = group_of(&record);
    if tree_alive(&group) {
      kill_now(&group);
    }
  }
}

/// The end record, once the keeper wrote it (or `None` after `timeout`).
pub(super) fn wait_end(files: &TaskFiles, timeout: Duration) -> Option<EndRecord> {
  let mut end = None;
  wait_until(timeout, || {
    if let ReadRecord::Valid(record) = read_record::<EndRecord>(&files.end) {
      end = Some(record);
    }
    end.is_some()
  });
  end
}

/// The file's text, lossy; empty if unreadable.
pub(super) fn text(path: &Path) -> String {
  fs::read(path)
    .map(|b| String::from_utf8_lossy(&b).into_owned())
    .unwrap_or_default()
}

/// `(pid, start time)` of every `pid <n>` line of `text`.
pub(super) fn reported_pids(text: &str) -> Vec<(u32, u64)> {
  text
    .lines()
    .filter_map(|line| line.strip_prefix("pid ")?.trim().parse().ok())
    .filter_map(|pid| Some((pid, proc_table::start_time(pid)?)))
    .collect()
}

/// The task's leader is still the recorded live process.
pub(super) fn task_alive(record: &TaskRecord) -> bool {
  prove(record.task.pid, record.task.start_time, &record.task.tag) == Identity::Same
}

/// `scan`, again while it finds a task busy: a fork of this process by a test
/// running beside this one shares a lock this process just dropped until
/// that fork's exec closes it.
pub(super) fn scan_when_free(
  dir: &Path,
  kind: crate::persist::TaskKind,
) -> Vec<crate::persist::Found> {
  let deadline = Instant::now() + Duration::from_secs(10);
  loop {
    let found = crate::persist::scan(dir, kind).expect("scan");
    let busy = found
      .iter()
      .any(|f| matches!(f, crate::persist::Found::Busy { .. }));
    if !busy || Instant::now() >= deadline {
      return found;
    }
    drop(found);
    std::thread::sleep(Duration::from_millis(20));
  }
}
