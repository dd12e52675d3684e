//! The state directory, the records, the lease, the adoption lock and
//! identity proofs.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::process::Command;
use std::time::{Duration, SystemTime};

use super::support::{wait_until, StateDir};
use crate::end::{EndVia, TaskEnd};
use crate::persist::identity::prove_with;
use crate::persist::records::{
  fnv1a64, read_cancel, read_record, read_record_or_quarantine, render_record, write_record,
};
use crate::persist::renewer;
use crate::persist::state_dir::validate_state_dir;
use crate::persist::{
  ensure_state_dir, forget, last_renewal, prove, renew, request_cancel, scan, CursorRecord,
  EndRecord, Found, Identity, ProcessIdentity, ReadRecord, TaskKind, TaskProcess, TaskRecord,
  RECORD_VERSION,
};
use crate::process::{self, kill_now, new_task_tag, proc_table, SpawnRequest};

pub(super) fn mode(path: &std::path::Path) -> u32 {
  fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_state_dir_is_created_private_and_unsafe_ones_are_refused() {
  let scratch = StateDir::new("state-dir");
  let dir = scratch.path().join("nested").join("state");
  ensure_state_dir(&dir).unwrap();
  assert_eq!(mode(&dir), 0o700);
  ensure_state_dir(&dir).unwrap();

  let error = ensure_state_dir(std::path::Path::new("relative/state")).unwrap_err();
  assert!(error.to_string().contains("persist.stateDir"), "{error}");

  let link = scratch.path().join("link");
  symlink(&dir, &link).unwrap();
  let error = ensure_state_dir(&link).unwrap_err();
  assert!(
    error.to_string().contains("persist.stateDir") && error.to_string().contains("symbolic link"),
    "{error}"
  );

  let file = scratch.path().join("file");
  fs::write(&file, "x").unwrap();
  let error = ensure_state_dir(&file).unwrap_err();
  assert!(error.to_string().contains("not a directory"), "{error}");

  let open = scratch.path().join("open");
  fs::create_dir(&open).unwrap();
  fs::set_permissions(&open, fs::Permissions::from_mode(0o750)).unwrap();
  let error = ensure_state_dir(&open).unwrap_err();
  assert!(
    error.to_string().contains("persist.stateDir") && error.to_string().contains("0750"),
    "{error}"
  );

  // Another owner: only root can make one.
  // SAFETY: geteuid has no preconditions.
  if unsafe { libc::geteuid() } == 0 {
    let theirs = scratch.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    assert_eq!(fs::metadata(&theirs).unwrap().uid(), 65534);
    let error = validate_state_dir(&theirs).unwrap_err();
    assert!(
      error.to_string().contains("persist.stateDir")
        && error.to_string().contains("owned by uid 65534"),
      "{error}"
    );
  }
}

fn sample_record(id: &str) -> TaskRecord {
  TaskRecord {
    version: RECORD_VERSION,
    kind: TaskKind::Monitor,
    id: id.to_owned(),
    command: "echo \"hi\"\n".to_owned(),
    description: "sample".to_owned(),
    cwd: "/".to_owned(),
    start_time: 1_700_000_000_123,
    lease_ms: 1500,
    output_path: format!("/tmp/{id}.log"),
    status_path: None,
    max_output_bytes: 1 << 30,
    options: serde_json::json!({ "maxEvents": 5, "nested": { "b": 1, "a": [1, 2] } }),
    keeper: ProcessIdentity {
      pid: 1,
      start_time: Some(2),
      tag: "keeper-x".to_owned(),
    },
    task: TaskProcess {
      pid: 3,
      pgid: 3,
      start_time: None,
      tag: "task-x".to_owned(),
      cgroup: None,
    },
  }
}

#[test]
fn records_round_trip_with_a_checksum_of_the_json_without_it() {
  let dir = StateDir::new("records");
  let record = sample_record("mon_1");
  let path = dir.files("mon_1").task;
  write_record(&path, &record).unwrap();
  assert_eq!(mode(&path), 0o600);
  let text = fs::read_to_string(&path).unwrap();
  assert!(text.starts_with("{\"version\":1,\"kind\":\"monitor\",\"id\":\"mon_1\","));
  assert!(text.ends_with("\"}\n"), "{text}");
  // The checksum is FNV-1a 64 of the same JSON without the checksum key.
  let (body, sum) = text.trim_end().rsplit_once(",\"checksum\":\"").unwrap();
  let sum = sum.strip_suffix("\"}").unwrap();
  assert_eq!(
    sum,
    format!("{:016x}", fnv1a64(format!("{body}}}").as_bytes()))
  );
  assert_eq!(read_record::<TaskRecord>(&path), ReadRecord::Valid(record));
  // Only the target remains: no temporary file.
  let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
  assert_eq!(names.len(), 1);

  let end = EndRecord {
    version: RECORD_VERSION,
    id: "mon_1".to_owned(),
    end_time: 5,
    end: TaskEnd::cancelled(EndVia::AbortAll),
    exit_code: None,
    output_bytes: 10,
    dropped_bytes: 0,
  };
  let end_path = dir.files("mon_1").end;
  write_record(&end_path, &end).unwrap();
  assert_eq!(read_record::<EndRecord>(&end_path), ReadRecord::Valid(end));
  assert_eq!(
    read_record::<EndRecord>(&dir.path().join("missing")),
    ReadRecord::Missing
  );
  // FNV-1a 64 test vectors.
  assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
  assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
}

#[test]
fn corrupt_records_are_reported_renamed_and_never_trusted() {
  let dir = StateDir::new("corrupt");
  let good = render_record(&sample_record("mon_1")).unwrap();
  let mut wrong_version = sample_record("mon_1");
  wrong_version.version = 2;
  let cursor = CursorRecord {
    version: RECORD_VERSION,
    id: "mon_1".to_owned(),
    offset: 42,
  };
  // A field removed, the checksum recomputed: still corrupt.
  let without_field = {
    let text = render_record(&cursor).unwrap();
    let body = text.split(",\"checksum\"").next().unwrap();
    let body = body.replace(",\"offset\":42", "");
    format!(
      "{}{},\"checksum\":\"{:016x}\"}}\n",
      body,
      "",
      fnv1a64(format!("{body}}}").as_bytes())
    )
  };
  let cases: Vec<(&str, String, &str)> = vec![
    (
      "half-written",
      good[..good.len() / 2].to_owned(),
      "checksum",
    ),
    ("empty", String::new(), "checksum"),
    ("garbage", "\u{0}\u{1}not json".to_owned(), "checksum"),
    (
      "tampered",
      good.replace("\"leaseMs\"", "\"leaseMz\""),
      "checksum mismatch",
    ),
    (
      "value changed",
      good.replace("1700000000123", "1700000000124"),
      "checksum mismatch",
    ),
    (
      "wrong version",
      render_record(&wrong_version).unwrap(),
      "version 2",
    ),
  ];
  for (label, text, expected) in cases {
    let path = dir
      .path()
      .join(format!("{}.task.json", label.replace(' ', "-")));
    fs::write(&path, &text).unwrap();
    match read_record_or_quarantine::<TaskRecord>(&path) {
      ReadRecord::Corrupt(error) => assert!(error.contains(expected), "{label}: {error}"),
      other => panic!("{label}: {other:?}"),
    }
    assert!(!path.exists(), "{label}: renamed away");
    let mut renamed = path.clone().into_os_string();
    renamed.push(".corrupt");
    assert_eq!(fs::read_to_string(&renamed).unwrap(), text, "{label}: kept");
    // Reported once: the next read finds nothing.
    assert_eq!(
      read_record_or_quarantine::<TaskRecord>(&path),
      ReadRecord::Missing
    );
  }
  let path = dir.path().join("cursor");
  fs::write(&path, &without_field).unwrap();
  match read_record::<CursorRecord>(&path) {
    ReadRecord::Corrupt(error) => assert!(error.contains("offset"), "{error}"),
    other => panic!("{other:?}"),
  }
  // A symlink is never followed.
  let target = dir.path().join("target");
  fs::write(&target, &good).unwrap();
  let link = dir.path().join("link.task.json");
  symlink(&target, &link).unwrap();
  assert!(matches!(
    read_record::<TaskRecord>(&link),
    ReadRecord::Corrupt(_)
  ));
}

#[test]
fn scan_reports_a_corrupt_task_record_once_and_skips_it() {
  let dir = StateDir::new("scan-corrupt");
  let path = dir.files("mon_bad").task;
  fs::write(&path, "{\"version\":1,\"kind\":\"monitor\"").unwrap();
  let found = scan(dir.path(), TaskKind::Monitor).unwrap();
  assert!(
    matches!(found.as_slice(), [Found::Corrupt { file, error }] if file == &path && error.contains("checksum")),
    "{found:?}"
  );
  assert!(scan(dir.path(), TaskKind::Monitor).unwrap().is_empty());
  assert!(dir.path().join("mon_bad.task.json.corrupt").exists());
}

#[test]
fn the_lease_is_the_mtime_of_a_private_file() {
  let dir = StateDir::new("lease");
  assert_eq!(last_renewal(dir.path()), None);
  let before = SystemTime::now() - Duration::from_secs(1);
  renew(dir.path()).unwrap();
  let first = last_renewal(dir.path()).unwrap();
  assert!(first >= before);
  assert_eq!(mode(&dir.path().join("lease")), 0o600);
  // An old mtime is moved forward by the next renewal.
  let old = SystemTime::now() - Duration::from_secs(3600);
  fs::File::options()
    .write(true)
    .open(dir.path().join("lease"))
    .unwrap()
    .set_modified(old)
    .unwrap();
  assert_eq!(last_renewal(dir.path()), Some(old));
  renew(dir.path()).unwrap();
  assert!(last_renewal(dir.path()).unwrap() >= first);
}

/// The renewer thread renews the leases that exist and creates none: a state
/// directory its owner removes (while this process is still attached to it)
/// is not refilled with a new lease. Before, a renewal that ran during the
/// removal recreated the lease and the removal failed with ENOTEMPTY.
#[test]
fn the_renewer_never_recreates_a_removed_lease() {
  let removed = StateDir::new("renewer-removed");
  let watched = StateDir::new("renewer-watched");
  renewer::attach(removed.path(), 1000);
  fs::remove_file(removed.path().join("lease")).unwrap();
  renewer::attach(watched.path(), 1000);
  // Two renewals of the other directory after the removal: the second one's
  // pass began after the first pass, which listed both directories, ended.
  for _ in 0..2 {
    let old = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
      .write(true)
      .open(watched.path().join("lease"))
      .unwrap()
      .set_modified(old)
      .unwrap();
    assert!(
      wait_until(Duration::from_secs(30), || {
        last_renewal(watched.path()).is_some_and(|at| at > old + Duration::from_secs(60))
      }),
      "the renewer renewed the lease it was attached to"
    );
  }
  assert!(
    !removed.path().join("lease").exists(),
    "the removed lease was recreated"
  );
  assert_eq!(fs::read_dir(removed.path()).unwrap().count(), 0);
}

#[test]
fn cancel_requests_name_the_caller_action() {
  let dir = StateDir::new("cancel");
  let files = dir.files("bg_1");
  assert_eq!(read_cancel(&files.cancel), None);
  request_cancel(dir.path(), "bg_1", EndVia::Owner).unwrap();
  assert_eq!(
    fs::read_to_string(&files.cancel).unwrap(),
    "{\"via\":\"owner\"}"
  );
  assert_eq!(read_cancel(&files.cancel).unwrap().via, EndVia::Owner);
  fs::write(&files.cancel, "nonsense").unwrap();
  assert_eq!(read_cancel(&files.cancel).unwrap().via, EndVia::Cancel);
  assert!(request_cancel(dir.path(), "../x", EndVia::Cancel).is_err());
}

#[test]
fn identity_tells_the_task_from_strangers_and_the_dead() {
  let tag = new_task_tag();
  let env = crate::process::child_env(
    std::env::vars_os(),
    &crate::process::EnvOptions {
      remove: Vec::new(),
      term: "dumb",
      overrides: Vec::new(),
      task_tag: tag.clone(),
    },
  );
  let spawned = process::spawn(SpawnRequest {
    program: "/bin/bash".into(),
    args: vec!["-c".into(), "exec sleep 60".into()],
    cwd: "/".into(),
    env,
    task_tag: tag.clone(),
    terminal: None,
    limits: None,
  })
  .unwrap();
  let group = spawned.group.clone();
  let pid = spawned.pid;
  let start = proc_table::start_time(pid);
  assert!(start.is_some());
  // Prove it once bash has exec'd sleep: an exec in progress shows an empty
  // environment for a moment (prove looks again, for about 130 ms).
  assert!(wait_until(Duration::from_secs(30), || {
    proc_table::name(pid).is_some_and(|name| name == "sleep")
  }));
  // A stranger: alive, untagged, with its own start time.
  let mut stranger = Command::new("sleep").arg("60").spawn().unwrap();
  let stranger_pid = stranger.id();
  let stranger_start = proc_table::start_time(stranger_pid);
  let stranger_identity = (
    prove(stranger_pid, start, &tag),
    prove(stranger_pid, stranger_start, &tag),
    prove_with(stranger_pid, stranger_start, "TASKSTREAM_KEEPER_ID", &tag),
  );
  let task_identity = (
    prove(pid, start, &tag),
    prove(pid, None, &tag),
    prove(pid, start.map(|s| s + 1), &tag),
    prove(pid, start, "another-tag"),
  );
  kill_now(&group);
  let _ = stranger.kill();
  let _ = stranger.wait();
  let mut child = spawned.child;
  child.wait().unwrap();
  assert_eq!(
    stranger_identity,
    (Identity::Stranger, Identity::Stranger, Identity::Stranger)
  );
  assert_eq!(
    task_identity,
    (
      Identity::Same,
      Identity::Same,
      Identity::Stranger,
      Identity::Stranger
    )
  );
  // Exited and reaped: gone.
  assert!(wait_until(Duration::from_secs(10), || prove(
    pid, start, &tag
  ) == Identity::Gone));
  assert_eq!(prove(stranger_pid, stranger_start, &tag), Identity::Gone);
}

#[test]
fn forget_removes_the_task_files_and_the_lock_last() {
  let dir = StateDir::new("forget");
  let files = dir.files("bg_9");
  for path in [
    &files.task,
    &files.end,
    &files.cursor,
    &files.cancel,
    &files.log,
    &files.keeper_log,
    &files.lock,
  ] {
    fs::File::create(path).unwrap().write_all(b"x").unwrap();
  }
  let output = dir.path().join("shell-bg_9.output");
  fs::write(&output, "kept").unwrap();
  forget(dir.path(), "bg_9").unwrap();
  let names: Vec<String> = fs::read_dir(dir.path())
    .unwrap()
    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
    .collect();
  assert_eq!(names, ["shell-bg_9.output"]);
  forget(dir.path(), "bg_9").unwrap();
}

#[test]
fn the_addon_path_is_the_file_this_code_runs_from() {
  // In `cargo test` the code is linked into the test binary.
  let path = crate::persist::addon_path().unwrap();
  assert_eq!(
    path,
    fs::canonicalize(std::env::current_exe().unwrap()).unwrap()
  );
}

#[test]
fn the_keeper_is_the_executable_beside_the_addon_and_a_missing_one_is_named() {
  let scratch = StateDir::new("keeper-beside");
  let dir = scratch.path();
  let addon = dir.join("taskstream.linux-x64-gnu.node");
  fs::write(&addon, b"").unwrap();
  let error = crate::persist::keeper_beside(&addon).unwrap_err();
  assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
  let keeper = dir.join(crate::persist::KEEPER_FILE);
  let message = error.to_string();
  assert!(message.contains(&keeper.display().to_string()), "{message}");
  assert!(message.contains(&addon.display().to_string()), "{message}");
  fs::write(&keeper, b"").unwrap();
  let program = crate::persist::keeper_beside(&addon).unwrap();
  assert_eq!(program.program, keeper);
  assert!(program.args.is_empty());
}
