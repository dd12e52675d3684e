//! The keeper with real processes: leases, cancels, ends while no host runs,
//! a launcher that dies, a keeper that dies, output caps and `scan`.

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use super::support::{
  config, group_of, keeper_identity, keeper_program, launch, launch_through_a_host, record,
  reported_pids, scan_when_free, task_alive, text, wait_end, wait_until, Cleanup, Renewer,
  StateDir,
};
use crate::end::{EndBy, EndReason, EndVia};
use crate::persist::records::{read_record, ReadRecord};
use crate::persist::{
  forget, launch_keeper, renew, request_cancel, scan, AdoptionLock, Found, Identity, TaskKind,
  TaskRecord, TryLock,
};
use crate::process::{proc_table, tree_alive};
use crate::shell::{OutputWriter, Stream};

/// The issue's bound for a lease that expired with no host: `leaseMs` + 10 s.
const LEASE_SLACK: Duration = Duration::from_secs(10);

/// Waits until the task's log shows `ready` and `pids` lines of `pid <n>`;
/// returns those processes.
fn wait_ready(dir: &StateDir, id: &str, pids: usize) -> Vec<(u32, u64)> {
  let log = dir.files(id).log;
  let ready = wait_until(Duration::from_secs(20), || {
    let text = text(&log);
    text.contains("ready") && reported_pids(&text).len() == pids
  });
  assert!(ready, "task not ready: {:?}", text(&log));
  reported_pids(&text(&log))
}

/// Asserts that the lease ended the whole tree by `deadline`.
fn assert_lease_ended(
  dir: &StateDir,
  id: &str,
  cleanup: &Cleanup,
  extra: &[(u32, u64)],
  deadline: Instant,
) {
  let record = record(cleanup);
  let group = group_of(record);
  let gone = wait_until(deadline.saturating_duration_since(Instant::now()), || {
    !tree_alive(&group)
      && !task_alive(record)
      && extra
        .iter()
        .all(|&(pid, start)| !proc_table::is_running(pid, start))
  });
  let survivors: Vec<_> = extra
    .iter()
    .filter(|&&(pid, start)| proc_table::is_running(pid, start))
    .collect();
  assert!(
    gone,
    "the tree outlived its lease; survivors {survivors:?}; keeper log: {}",
    text(&dir.files(id).keeper_log)
  );
  let end = wait_end(&dir.files(id), Duration::from_secs(10)).expect("end record");
  assert_eq!(end.end.reason, EndReason::HostExit, "{end:?}");
  assert_eq!(end.end.by, EndBy::Host);
  assert_eq!(
    end.end.detail.as_deref(),
    Some(format!("lease of {} ms expired", record.lease_ms).as_str())
  );
  assert!(wait_until(Duration::from_secs(10), || keeper_identity(
    record
  ) == Identity::Gone));
}

#[test]
fn an_expired_lease_ends_a_tree_that_ignores_sigterm() {
  let dir = StateDir::new("lease-term");
  let lease_ms = 1500;
  let launched_at = Instant::now();
  let cleanup = launch(
    &dir,
    TaskKind::Monitor,
    "mon_term",
    r#"trap "" TERM; sleep 1000 & echo "pid $!"; echo ready; sleep 1000"#,
    lease_ms,
  );
  let extra = wait_ready(&dir, "mon_term", 1);
  let deadline = launched_at + Duration::from_millis(lease_ms) + LEASE_SLACK;
  assert_lease_ended(&dir, "mon_term", &cleanup, &extra, deadline);
}

#[test]
fn a_monitor_whose_leader_exits_leaves_no_double_forked_survivors() {
  let dir = StateDir::new("lease-fork");
  // The end must be the leader's exit, not the lease: the leader exits about 0.5 s in and the
  // keeper drains the pipes the double-forked processes hold for 1 s more. With a lease of 1.5 s
  // the two raced (a loaded CI run recorded `lease of 1500 ms expired`, twice).
  let lease_ms = 6000;
  let launched_at = Instant::now();
  let cleanup = launch(
    &dir,
    TaskKind::Monitor,
    "mon_fork",
    concat!(
      r#"setsid sh -c 'trap "" TERM; echo "pid $$"; exec sleep 1000' & "#,
      r#"( sleep 1000 & echo "pid $!" ) & "#,
      r#"sh -c '( trap "" TERM; sleep 1000 & echo "pid $!" ) &' ; "#,
      r#"sleep 0.5; echo ready; exit 0"#
    ),
    lease_ms,
  );
  let extra = wait_ready(&dir, "mon_fork", 3);
  // The leader exits at once: the keeper drains the pipes for a second and
  // then kills what the task left behind, as a host does for its own.
  let record = record(&cleanup);
  let group = group_of(record);
  let deadline = launched_at + Duration::from_millis(lease_ms) + LEASE_SLACK;
  let gone = wait_until(deadline.saturating_duration_since(Instant::now()), || {
    !tree_alive(&group)
      && extra
        .iter()
        .all(|&(pid, start)| !proc_table::is_running(pid, start))
  });
  assert!(gone, "survivors of {extra:?}");
  let end = wait_end(&dir.files("mon_fork"), Duration::from_secs(10)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Exited, "{end:?}");
  assert_eq!(end.exit_code, Some(0));
}

#[test]
fn an_expired_lease_ends_double_forked_processes_of_a_running_task() {
  let dir = StateDir::new("lease-fork-running");
  let lease_ms = 1500;
  let launched_at = Instant::now();
  let cleanup = launch(
    &dir,
    TaskKind::Shell,
    "bg_fork",
    concat!(
      r#"setsid sh -c 'trap "" TERM; echo "pid $$"; exec sleep 1000' & "#,
      r#"( sleep 1000 & echo "pid $!" ) & "#,
      r#"sh -c '( trap "" TERM; sleep 1000 & echo "pid $!" ) &' ; "#,
      r#"echo ready; sleep 1000"#
    ),
    lease_ms,
  );
  let output = dir.path().join("shell-bg_fork.output");
  assert!(
    wait_until(Duration::from_secs(20), || {
      let t = text(&output);
      t.contains("ready") && reported_pids(&t).len() == 3
    }),
    "{:?}",
    text(&output)
  );
  let extra = reported_pids(&text(&output));
  let deadline = launched_at + Duration::from_millis(lease_ms) + LEASE_SLACK;
  let record = record(&cleanup);
  let group = group_of(record);
  let gone = wait_until(deadline.saturating_duration_since(Instant::now()), || {
    !tree_alive(&group)
      && !task_alive(record)
      && extra
        .iter()
        .all(|&(pid, start)| !proc_table::is_running(pid, start))
  });
  assert!(gone, "survivors of {extra:?}");
  let end = wait_end(&dir.files("bg_fork"), Duration::from_secs(10)).expect("end record");
  assert_eq!(end.end.reason, EndReason::HostExit, "{end:?}");
  assert_eq!(end.end.by, EndBy::Host);
  assert_eq!(end.end.detail.as_deref(), Some("lease of 1500 ms expired"));
  // The shell's sidecar says so too.
  let sidecar: serde_json::Value =
    serde_json::from_str(&text(&dir.path().join("shell-bg_fork.status"))).unwrap();
  assert_eq!(sidecar["status"], "cancelled");
  assert_eq!(sidecar["end"]["reason"], "host-exit");
  assert_eq!(sidecar["end"]["detail"], "lease of 1500 ms expired");
}

/// Kills the launcher if the test fails midway.
struct Launcher(std::process::Child);

impl Drop for Launcher {
  fn drop(&mut self) {
    let _ = self.0.kill();
    let _ = self.0.wait();
  }
}

#[test]
fn the_keeper_outlives_the_host_that_launched_it() {
  let dir = StateDir::new("outlives");
  let id = "mon_outlives";
  let _renewer = Renewer::start(dir.path());
  let config = config(
    &dir,
    TaskKind::Monitor,
    id,
    "i=0; while :; do echo \"tick $i\"; i=$((i+1)); sleep 0.05; done",
    3000,
  );
  let (host, keeper_pid) = launch_through_a_host(&dir, &config);
  let mut launcher = Launcher(host);
  let ReadRecord::Valid(record) = read_record::<TaskRecord>(&dir.files(id).task) else {
    panic!("no task record");
  };
  let cleanup = Cleanup(Some(record.clone()));
  assert_eq!(record.keeper.pid, keeper_pid);
  // The host dies the hard way.
  launcher.0.kill().unwrap();
  launcher.0.wait().unwrap();
  let log = dir.files(id).log;
  let size_after_kill = fs::metadata(&log).unwrap().len();
  // The task keeps running and its output keeps reaching the file.
  assert!(
    wait_until(Duration::from_secs(20), || fs::metadata(&log)
      .map_or(0, |m| m.len())
      > size_after_kill + 200),
    "no output after the launcher died"
  );
  assert_eq!(keeper_identity(&record), Identity::Same);
  assert!(task_alive(&record));
  // The keeper is in a session of its own, outside the launcher's group.
  let keeper_stat = proc_table::stat(keeper_pid).unwrap();
  assert_eq!(keeper_stat.pgid, keeper_pid);
  // The next host stops it through the cancel file.
  request_cancel(dir.path(), id, EndVia::Cancel).unwrap();
  let end = wait_end(&dir.files(id), Duration::from_secs(20)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Cancelled, "{end:?}");
  assert_eq!(end.end.via, Some(EndVia::Cancel));
  assert!(wait_until(Duration::from_secs(10), || !tree_alive(
    &group_of(&record)
  )));
  assert!(text(&log).starts_with("tick 0\ntick 1\n"));
  assert_eq!(end.output_bytes, fs::metadata(&log).unwrap().len());
  drop(cleanup);
}

#[test]
fn a_task_that_ends_while_no_host_runs_records_its_exit_code() {
  let dir = StateDir::new("exit-code");
  // A cancel request left by an earlier task of the same id is not this one's.
  request_cancel(dir.path(), "bg_exit", EndVia::Cancel).unwrap();
  let cleanup = launch(
    &dir,
    TaskKind::Shell,
    "bg_exit",
    "echo out; echo err >&2; exit 7",
    60_000,
  );
  let end = wait_end(&dir.files("bg_exit"), Duration::from_secs(20)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Exited, "{end:?}");
  assert_eq!(end.end.by, EndBy::Process);
  assert_eq!(end.end.exit_code, Some(7));
  assert_eq!(end.exit_code, Some(7));
  let output = text(&dir.path().join("shell-bg_exit.output"));
  assert!(
    output.contains("out\n") && output.contains("err\n"),
    "{output:?}"
  );
  assert_eq!(end.output_bytes, output.len() as u64);
  let sidecar: serde_json::Value =
    serde_json::from_str(&text(&dir.path().join("shell-bg_exit.status"))).unwrap();
  assert_eq!(sidecar["status"], "failed");
  assert_eq!(sidecar["exitCode"], serde_json::Value::Null);
  assert_eq!(sidecar["error"], "exited with code 7");
  assert_eq!(sidecar["end"]["reason"], "exited");
  assert_eq!(sidecar["end"]["exitCode"], 7);
  assert!(wait_until(Duration::from_secs(10), || keeper_identity(
    record(&cleanup)
  ) == Identity::Gone));
  // A later host finds it ended, with its lock, and forgets it.
  let found = scan(dir.path(), TaskKind::Shell).unwrap();
  match found.as_slice() {
    [Found::Ended {
      record: r, end: e, ..
    }] => {
      assert_eq!(r.id, "bg_exit");
      assert_eq!(e, &end);
    }
    other => panic!("{other:?}"),
  }
  assert!(scan(dir.path(), TaskKind::Monitor).unwrap().is_empty());
  drop(found);
  forget(dir.path(), "bg_exit").unwrap();
  assert!(scan(dir.path(), TaskKind::Shell).unwrap().is_empty());
  assert!(dir.path().join("shell-bg_exit.output").exists());
}

#[test]
fn a_task_killed_by_a_signal_while_no_host_runs_records_the_signal() {
  let dir = StateDir::new("signal");
  let _cleanup = launch(
    &dir,
    TaskKind::Monitor,
    "mon_sig",
    "echo before; kill -USR1 $$; echo after",
    60_000,
  );
  let end = wait_end(&dir.files("mon_sig"), Duration::from_secs(20)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Signaled, "{end:?}");
  assert_eq!(end.end.signal.as_deref(), Some("SIGUSR1"));
  assert_eq!(end.exit_code, None);
  assert_eq!(text(&dir.files("mon_sig").log), "before\n");
}

#[test]
fn a_cancel_request_ends_the_tree_and_records_the_caller() {
  let dir = StateDir::new("cancel-keeper");
  let _renewer = Renewer::start(dir.path());
  let cleanup = launch(
    &dir,
    TaskKind::Monitor,
    "mon_cancel",
    r#"trap "" TERM; setsid sleep 1000 & echo "pid $!"; echo ready; sleep 1000"#,
    5_000,
  );
  let extra = wait_ready(&dir, "mon_cancel", 1);
  request_cancel(dir.path(), "mon_cancel", EndVia::AbortAll).unwrap();
  let end = wait_end(&dir.files("mon_cancel"), Duration::from_secs(20)).expect("end record");
  assert_eq!(end.end.reason, EndReason::Cancelled, "{end:?}");
  assert_eq!(end.end.by, EndBy::Caller);
  assert_eq!(end.end.via, Some(EndVia::AbortAll));
  let record = record(&cleanup);
  assert!(!tree_alive(&group_of(record)));
  assert!(extra
    .iter()
    .all(|&(pid, start)| !proc_table::is_running(pid, start)));
}

#[test]
fn a_keeper_stopped_by_sigterm_ends_its_tree_and_records_it() {
  let dir = StateDir::new("keeper-term");
  let _renewer = Renewer::start(dir.path());
  let cleanup = launch(
    &dir,
    TaskKind::Monitor,
    "mon_kterm",
    r#"echo ready; sleep 1000"#,
    5_000,
  );
  wait_ready(&dir, "mon_kterm", 0);
  let record = record(&cleanup);
  assert_eq!(keeper_identity(record), Identity::Same);
  // SAFETY: kill with integer arguments, to the proved keeper.
  unsafe {
    libc::kill(record.keeper.pid as libc::pid_t, libc::SIGTERM);
  }
  let end = wait_end(&dir.files("mon_kterm"), Duration::from_secs(20)).expect("end record");
  assert_eq!(end.end.reason, EndReason::HostExit, "{end:?}");
  assert_eq!(end.end.detail.as_deref(), Some("keeper received SIGTERM"));
  assert!(!tree_alive(&group_of(record)));
}

#[test]
fn a_killed_keeper_takes_its_task_with_it_and_scan_reports_it_lost() {
  let dir = StateDir::new("keeper-killed");
  let _renewer = Renewer::start(dir.path());
  let cleanup = launch(
    &dir,
    TaskKind::Monitor,
    "mon_orphan",
    r#"setsid sleep 1000 & echo "pid $!"; echo ready; sleep 1000"#,
    5_000,
  );
  let extra = wait_ready(&dir, "mon_orphan", 1);
  let record = record(&cleanup).clone();
  // While the keeper runs, another host sees it running (and locked by us
  // while we scan).
  let found = scan(dir.path(), TaskKind::Monitor).unwrap();
  assert!(
    matches!(found.as_slice(), [Found::Running { record: r, .. }] if r == &record),
    "{found:?}"
  );
  let TryLock::Busy = AdoptionLock::try_acquire(dir.path(), "mon_orphan").unwrap() else {
    panic!("the scan holds the lock of what it found");
  };
  drop(found);
  assert_eq!(keeper_identity(&record), Identity::Same);
  // SAFETY: kill with integer arguments, to the proved keeper.
  unsafe {
    libc::kill(record.keeper.pid as libc::pid_t, libc::SIGKILL);
  }
  let gone = wait_until(Duration::from_secs(15), || {
    !task_alive(&record)
      && !tree_alive(&group_of(&record))
      && extra
        .iter()
        .all(|&(pid, start)| !proc_table::is_running(pid, start))
  });
  assert!(gone, "the task outlived its keeper");
  assert!(wait_until(Duration::from_secs(10), || keeper_identity(
    &record
  ) == Identity::Gone));
  let found = scan_when_free(dir.path(), TaskKind::Monitor);
  match found.as_slice() {
    [Found::Lost {
      record: r, reason, ..
    }] => {
      assert_eq!(r, &record);
      assert!(reason.contains("gone"), "{reason}");
    }
    other => panic!("{other:?}"),
  }
  drop(found);
  assert!(dir.files("mon_orphan").lost.exists());
  assert!(scan_when_free(dir.path(), TaskKind::Monitor).is_empty());
}

#[test]
fn a_shell_output_file_is_the_one_output_writer_makes_and_the_monitor_log_is_capped() {
  let dir = StateDir::new("caps");
  // Text with colour codes and a split multi-byte character, past a cap.
  let script = r#"for i in $(seq 1 40); do printf '\033[31mline %02d\033[0m é\n' $i; done"#;
  let mut shell = config(&dir, TaskKind::Shell, "bg_cap", script, 60_000);
  shell.max_output_bytes = 200;
  let started = launch_keeper(&keeper_program(), &shell).unwrap();
  let _shell_cleanup = Cleanup(Some(started.record));
  let end = wait_end(&dir.files("bg_cap"), Duration::from_secs(20)).expect("end record");
  let raw = Command::new("/bin/bash")
    .args(["-c", script])
    .output()
    .unwrap()
    .stdout;
  let expected_path = dir.path().join("expected.output");
  let mut writer = OutputWriter::create(&expected_path, 200).unwrap();
  writer.write(Stream::Stdout, &raw);
  writer.finish();
  let counters = writer.counters();
  assert_eq!(
    text(&dir.path().join("shell-bg_cap.output")),
    text(&expected_path)
  );
  assert!(text(&expected_path).contains("output limit of 200 bytes reached"));
  assert_eq!(end.output_bytes, counters.bytes_written);
  // What is counted past the cap depends on how the pipe was read (raw
  // bytes of whole reads, decoded text of a read cut at the cap), as for a
  // host's own shells; it is counted either way.
  assert!(end.dropped_bytes > 0 && counters.bytes_not_written > 0);

  let mut monitor = config(&dir, TaskKind::Monitor, "mon_cap", script, 60_000);
  monitor.max_output_bytes = 100;
  let started = launch_keeper(&keeper_program(), &monitor).unwrap();
  let _monitor_cleanup = Cleanup(Some(started.record));
  let end = wait_end(&dir.files("mon_cap"), Duration::from_secs(20)).expect("end record");
  let log = fs::read(dir.files("mon_cap").log).unwrap();
  assert_eq!(log, raw[..100]);
  assert_eq!(end.output_bytes, 100);
  assert_eq!(end.dropped_bytes, raw.len() as u64 - 100);
}

#[test]
fn a_keeper_that_cannot_start_its_task_answers_err() {
  let dir = StateDir::new("launch-err");
  let mut bad = config(&dir, TaskKind::Monitor, "mon_bad", "true", 60_000);
  bad.cwd = "/nonexistent/taskstream-persist".to_owned();
  let error = launch_keeper(&keeper_program(), &bad).unwrap_err();
  assert!(error.to_string().contains("No such file"), "{error}");
  assert!(!dir.files("mon_bad").task.exists());
  let mut bad_id = config(&dir, TaskKind::Monitor, "mon_x", "true", 60_000);
  bad_id.id = "../escape".to_owned();
  assert!(launch_keeper(&keeper_program(), &bad_id).is_err());
}

#[test]
fn a_renewed_lease_keeps_the_task_past_lease_ms_and_an_abandoned_one_ends_it() {
  let dir = StateDir::new("renewed");
  let id = "mon_renewed";
  let lease_ms = 2000;
  // A lease left an hour ago by an earlier host: never counts against a new keeper.
  renew(dir.path()).unwrap();
  let stale = std::time::SystemTime::now() - Duration::from_secs(3600);
  fs::File::options()
    .write(true)
    .open(dir.path().join("lease"))
    .unwrap()
    .set_modified(stale)
    .unwrap();
  let cleanup = launch(
    &dir,
    TaskKind::Monitor,
    id,
    "i=0; while :; do echo \"tick $i\"; i=$((i+1)); sleep 0.05; done",
    lease_ms,
  );
  let renewer = Renewer::start(dir.path());
  let record = record(&cleanup).clone();
  let log = dir.files(id).log;
  // Ticks for well over a lease (each tick takes at least 50 ms).
  assert!(
    wait_until(Duration::from_secs(30), || text(&log).contains("tick 80\n")),
    "the task stopped early: {:?}",
    wait_end(&dir.files(id), Duration::ZERO)
  );
  assert!(!dir.files(id).end.exists());
  assert!(task_alive(&record));
  // Nobody renews any more.
  let abandoned = Instant::now();
  drop(renewer);
  let end = wait_end(
    &dir.files(id),
    Duration::from_millis(lease_ms) + LEASE_SLACK,
  )
  .expect("end record");
  assert!(abandoned.elapsed() < Duration::from_millis(lease_ms) + LEASE_SLACK);
  assert_eq!(end.end.detail.as_deref(), Some("lease of 2000 ms expired"));
  assert!(wait_until(Duration::from_secs(10), || !tree_alive(
    &group_of(&record)
  )));
}

#[cfg(target_os = "linux")]
#[test]
fn the_keeper_inherits_neither_the_hosts_lock_nor_its_descriptors() {
  let dir = StateDir::new("no-inherit");
  let id = "mon_inherit";
  let TryLock::Acquired(lock) = AdoptionLock::try_acquire(dir.path(), id).unwrap() else {
    panic!("lock");
  };
  let _renewer = Renewer::start(dir.path());
  let cleanup = launch(&dir, TaskKind::Monitor, id, "echo ready; sleep 1000", 5_000);
  wait_ready(&dir, id, 0);
  let record = record(&cleanup).clone();
  let keeper_fds: Vec<String> = fs::read_dir(format!("/proc/{}/fd", record.keeper.pid))
    .unwrap()
    .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
    .map(|p| p.to_string_lossy().into_owned())
    .collect();
  assert!(
    !keeper_fds.iter().any(|p| p.ends_with(".lock")),
    "{keeper_fds:?}"
  );
  // The host gives the task up: another host can take it while it runs.
  drop(lock);
  assert!(wait_until(Duration::from_secs(10), || matches!(
    AdoptionLock::try_acquire(dir.path(), id).unwrap(),
    TryLock::Acquired(_)
  )));
  assert_eq!(keeper_identity(&record), Identity::Same);
  request_cancel(dir.path(), id, EndVia::Owner).unwrap();
  let end = wait_end(&dir.files(id), Duration::from_secs(20)).expect("end record");
  assert_eq!(end.end.via, Some(EndVia::Owner));
}
