//! Persistence on Windows with real processes (under Wine on the Linux CI machine, by
//! `npm run test:windows`): the keeper (this test binary re-executed) holds its task's Job
//! Object, follows the lease, takes cancel requests and records the end; identity by creation
//! time and environment tag; `scan` adopts once and never trusts a stranger. The sleeper is
//! `ping -n N 127.0.0.1` (about N - 1 seconds), as in the process tests.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
  CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};

use super::support::{
  config, keeper_identity, kill_proved, launch, launch_through_a_host, record, scan_when_free,
  text, wait_end, wait_until, Renewer, StateDir,
};
use crate::end::{EndBy, EndReason, EndVia};
use crate::persist::records::write_record;
use crate::persist::{
  addon_path, ensure_state_dir, forget, prove, request_cancel, scan, Found, Identity,
  ProcessIdentity, TaskKind, TaskProcess, TaskRecord, RECORD_VERSION,
};
use crate::process::{kill_now, proc_table, Liveness};

/// Every process of the system as (pid, parent pid), from a Toolhelp snapshot.
fn parent_links() -> Vec<(u32, u32)> {
  let mut links = Vec::new();
  // SAFETY: a snapshot handle of ours, closed below; `entry` is sized as the API asks.
  unsafe {
    let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    if snapshot == INVALID_HANDLE_VALUE {
      return links;
    }
    let mut entry: PROCESSENTRY32W = std::mem::zeroed();
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    let mut more = Process32FirstW(snapshot, &mut entry) != 0;
    while more {
      links.push((entry.th32ProcessID, entry.th32ParentProcessID));
      more = Process32NextW(snapshot, &mut entry) != 0;
    }
    CloseHandle(snapshot);
  }
  links
}

/// The live descendants of `root` as (pid, creation time); a child must have started after its
/// parent (a parent pid may name a dead parent's reused pid).
fn descendants(root: u32) -> Vec<(u32, u64)> {
  let links = parent_links();
  let mut found = Vec::new();
  let mut seen = HashSet::from([root]);
  let mut queue = VecDeque::from([(root, proc_table::start_time(root).unwrap_or(0))]);
  while let Some((parent, parent_start)) = queue.pop_front() {
    for &(pid, ppid) in &links {
      if ppid != parent || !seen.insert(pid) {
        continue;
      }
      if let Some(start) = proc_table::start_time(pid).filter(|&s| s >= parent_start) {
        found.push((pid, start));
        queue.push_back((pid, start));
      }
    }
  }
  found
}

fn running(&(pid, start): &(u32, u64)) -> bool {
  proc_table::liveness(pid)
    == Liveness::Live {
      start_time: Some(start),
    }
}

/// Two pings, one started by `start /b` (a grandchild of the leader's shell), both long.
const TWO_SLEEPERS: &str =
  "start /b ping -n 120 127.0.0.1 >NUL & ping -n 120 127.0.0.1 >NUL & echo done";

/// Waits until the task's tree holds at least `count` processes besides its leader.
fn wait_tree(record: &TaskRecord, count: usize) -> Vec<(u32, u64)> {
  let mut tree = Vec::new();
  let grown = wait_until(Duration::from_secs(30), || {
    tree = descendants(record.task.pid);
    tree.len() >= count
  });
  assert!(grown, "the task's tree did not start: {tree:?}");
  tree
}

fn assert_tree_gone(tree: &[(u32, u64)], dir: &StateDir, id: &str) {
  let gone = wait_until(Duration::from_secs(20), || !tree.iter().any(running));
  let survivors: Vec<_> = tree.iter().filter(|p| running(p)).collect();
  assert!(
    gone,
    "survivors {survivors:?}; keeper log: {}",
    text(&dir.files(id).keeper_log)
  );
}

#[test]
fn the_keeper_records_itself_and_its_task_by_creation_time_and_tag() {
  let dir = StateDir::new("win-identity");
  let cleanup = launch(&dir, TaskKind::Monitor, "mon_1", TWO_SLEEPERS, 30_000);
  let _renewer = Renewer::start(dir.path());
  let record = record(&cleanup);
  assert_eq!(keeper_identity(record), Identity::Same);
  assert!(record.keeper.start_time.is_some(), "{record:?}");
  assert_eq!(
    prove(record.task.pid, record.task.start_time, &record.task.tag),
    Identity::Same
  );
  // A wrong tag or a wrong creation time is a stranger, never the task.
  assert_eq!(
    prove(record.task.pid, record.task.start_time, "not-its-tag"),
    Identity::Stranger
  );
  assert_eq!(
    prove(
      record.task.pid,
      record.task.start_time.map(|t| t + 1),
      &record.task.tag
    ),
    Identity::Stranger
  );
  request_cancel(dir.path(), "mon_1", EndVia::Cancel).unwrap();
  let end = wait_end(&dir.files("mon_1"), Duration::from_secs(30)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Cancelled, "{end:?}");
  assert!(wait_until(Duration::from_secs(20), || keeper_identity(
    record
  ) == Identity::Gone));
  assert_eq!(
    prove(record.task.pid, record.task.start_time, &record.task.tag),
    Identity::Gone
  );
}

#[test]
fn an_expired_lease_ends_the_whole_tree_with_no_host() {
  let dir = StateDir::new("win-lease");
  // Nobody renews: the lease expires 1.5 s after the keeper started.
  let cleanup = launch(&dir, TaskKind::Shell, "bg_1", TWO_SLEEPERS, 1500);
  let record = record(&cleanup);
  let mut tree = vec![(record.task.pid, record.task.start_time.expect("start"))];
  let end = wait_end(&dir.files("bg_1"), Duration::from_secs(30));
  // The sleepers may have been seen before the end; look once more in case they were not.
  tree.extend(descendants(record.task.pid));
  let end = end.expect("end record");
  assert_eq!(end.end.reason, EndReason::HostExit, "{end:?}");
  assert_eq!(end.end.by, EndBy::Host);
  assert_eq!(end.end.detail.as_deref(), Some("lease of 1500 ms expired"));
  assert_tree_gone(&tree, &dir, "bg_1");
  assert!(wait_until(Duration::from_secs(20), || keeper_identity(
    record
  ) == Identity::Gone));
}

#[test]
fn a_cancel_request_ends_the_tree_and_records_the_caller() {
  let dir = StateDir::new("win-cancel");
  let _renewer = Renewer::start(dir.path());
  let cleanup = launch(&dir, TaskKind::Shell, "bg_1", TWO_SLEEPERS, 30_000);
  let record = record(&cleanup);
  let tree = wait_tree(record, 2);
  request_cancel(dir.path(), "bg_1", EndVia::Owner).unwrap();
  let end = wait_end(&dir.files("bg_1"), Duration::from_secs(30)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Cancelled, "{end:?}");
  assert_eq!(end.end.by, EndBy::Caller);
  assert_eq!(end.end.via, Some(EndVia::Owner));
  assert_tree_gone(&tree, &dir, "bg_1");
  // The shell's sidecar carries the end, as the registry writes it.
  let status = text(&dir.path().join("shell-bg_1.status"));
  assert!(status.contains("\"cancelled\""), "{status}");
}

#[test]
fn a_task_that_ends_while_no_host_runs_is_reported_once_with_its_exit_code() {
  let dir = StateDir::new("win-no-host");
  let id = "mon_7";
  let config = config(
    &dir,
    TaskKind::Monitor,
    id,
    "echo before & ping -n 3 127.0.0.1 >NUL & echo after & exit 7",
    30_000,
  );
  // A short-lived host launches the keeper and is killed.
  let (mut launcher, keeper_pid) = launch_through_a_host(&dir, &config);
  launcher.kill().unwrap();
  launcher.wait().unwrap();
  let end = wait_end(&dir.files(id), Duration::from_secs(30)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Exited, "{end:?}");
  assert_eq!(end.exit_code, Some(7));
  let log = text(&dir.files(id).log);
  assert!(log.contains("before") && log.contains("after"), "{log:?}");
  assert!(wait_until(
    Duration::from_secs(20),
    || proc_table::liveness(keeper_pid) == Liveness::Gone
  ));
  // The next host finds it ended, once: reported, then forgotten.
  let found = scan(dir.path(), TaskKind::Monitor).unwrap();
  let ended: Vec<_> = found
    .iter()
    .filter_map(|f| match f {
      Found::Ended { record, end, .. } => Some((record.id.clone(), end.exit_code)),
      _ => None,
    })
    .collect();
  assert_eq!(ended, vec![(id.to_owned(), Some(7))], "{found:?}");
  drop(found);
  forget(dir.path(), id).unwrap();
  assert!(scan(dir.path(), TaskKind::Monitor).unwrap().is_empty());
}

#[test]
fn a_recovering_host_adopts_a_running_task_once_and_stops_it() {
  let dir = StateDir::new("win-adopt");
  let _renewer = Renewer::start(dir.path());
  let cleanup = launch(&dir, TaskKind::Monitor, "mon_1", TWO_SLEEPERS, 30_000);
  let record = record(&cleanup);
  let tree = wait_tree(record, 2);
  let found = scan_when_free(dir.path(), TaskKind::Monitor);
  assert!(
    matches!(found.as_slice(), [Found::Running { record: r, .. }] if r.id == "mon_1"),
    "{found:?}"
  );
  // While this host holds it, a second one sees it busy and does not adopt it.
  let again = scan(dir.path(), TaskKind::Monitor).unwrap();
  assert!(
    matches!(again.as_slice(), [Found::Busy { id }] if id == "mon_1"),
    "{again:?}"
  );
  request_cancel(dir.path(), "mon_1", EndVia::Cancel).unwrap();
  let end = wait_end(&dir.files("mon_1"), Duration::from_secs(30)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Cancelled, "{end:?}");
  assert_tree_gone(&tree, &dir, "mon_1");
  drop(found);
}

#[test]
fn a_killed_keeper_takes_its_task_with_it_and_scan_reports_it_lost() {
  let dir = StateDir::new("win-killed");
  let _renewer = Renewer::start(dir.path());
  let cleanup = launch(&dir, TaskKind::Monitor, "mon_1", TWO_SLEEPERS, 30_000);
  let record = record(&cleanup);
  let tree = wait_tree(record, 2);
  assert_eq!(keeper_identity(record), Identity::Same);
  kill_proved(record.keeper.pid);
  // Its Job Object closed with it: the whole tree ends, and no end was recorded.
  assert_tree_gone(&tree, &dir, "mon_1");
  assert!(wait_until(Duration::from_secs(20), || keeper_identity(
    record
  ) == Identity::Gone));
  let found = scan_when_free(dir.path(), TaskKind::Monitor);
  match found.as_slice() {
    [Found::Lost { reason, .. }] => {
      assert!(reason.contains("is gone and recorded no end"), "{reason}")
    }
    other => panic!("{other:?}"),
  }
}

#[test]
fn a_stranger_at_the_keepers_pid_is_reported_lost_and_never_signalled() {
  let dir = StateDir::new("win-stranger");
  // A live process of ours that is not a keeper: its pid goes into a task record.
  // Started by the one launch path, as any task is.
  let cwd = std::env::temp_dir();
  let stranger = crate::launch::spawn_shell(&crate::launch::ShellCommand {
    command: "ping -n 60 127.0.0.1 >NUL",
    cwd: &cwd,
    env: &[],
    remove_env: &[],
    term: crate::launch::Term::Shell,
    terminal: None,
    limits: None,
  })
  .unwrap();
  let tag = stranger.group.task_tag.clone();
  let pid = stranger.pid;
  let start_time = proc_table::start_time(pid);
  assert!(start_time.is_some());
  // It carries its own tag: proved with it, and a stranger to any other.
  assert_eq!(prove(pid, start_time, &tag), Identity::Same);
  let record = TaskRecord {
    version: RECORD_VERSION,
    kind: TaskKind::Monitor,
    id: "mon_1".into(),
    command: "x".into(),
    description: "x".into(),
    cwd: "C:\\".into(),
    start_time: 1,
    lease_ms: 30_000,
    output_path: dir.files("mon_1").log.to_string_lossy().into_owned(),
    status_path: None,
    max_output_bytes: 1,
    options: serde_json::json!({}),
    keeper: ProcessIdentity {
      pid,
      start_time,
      tag: "keeper-someone-else".into(),
    },
    task: TaskProcess {
      pid,
      pgid: pid,
      start_time,
      tag: "someone-else".into(),
      cgroup: None,
    },
  };
  write_record(&dir.files("mon_1").task, &record).unwrap();
  let found = scan(dir.path(), TaskKind::Monitor).unwrap();
  match found.as_slice() {
    [Found::Lost { reason, .. }] => assert!(
      reason.contains("belongs to another process now"),
      "{reason}"
    ),
    other => panic!("{other:?}"),
  }
  assert_eq!(
    proc_table::liveness(pid),
    Liveness::Live { start_time },
    "the stranger was signalled"
  );
  kill_now(&stranger.group);
}

#[test]
fn a_state_dir_is_created_and_unsafe_paths_are_refused() {
  let base = StateDir::new("win-state");
  let created = base.path().join("a").join("state");
  ensure_state_dir(&created).unwrap();
  assert!(created.is_dir());
  ensure_state_dir(&created).unwrap();
  let file = base.path().join("file");
  std::fs::write(&file, "x").unwrap();
  let error = ensure_state_dir(&file).unwrap_err().to_string();
  assert!(
    error.contains("persist.stateDir") && error.contains("is not a directory"),
    "{error}"
  );
  let error = ensure_state_dir(std::path::Path::new("relative\\state"))
    .unwrap_err()
    .to_string();
  assert!(error.contains("must be an absolute path"), "{error}");
}

#[test]
fn the_addon_path_is_the_file_this_code_runs_from() {
  let found = addon_path().unwrap();
  let exe = std::env::current_exe().unwrap();
  assert_eq!(
    std::fs::canonicalize(found).unwrap(),
    std::fs::canonicalize(exe).unwrap()
  );
}
