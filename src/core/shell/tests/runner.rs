//! The runner with real processes and files (CONTRACT.md §2.15 steps 8–12,
//! §4 items 10, 11 and 16).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::process::{kill_now, procfs, tree_alive, ProcessGroup};
use crate::shell::test_support::{serial, spawn_shell, wait_until, TempDir};
use crate::shell::*;

/// How long a test waits for a run to settle before it fails: a bound on a hang, never a
/// measure. Generous because the arm64 suite runs under qemu-user beside the Windows suite
/// under Wine on two cores, where moving five megabytes through the emulated runner took
/// longer than ten seconds.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// What `on_settle` saw: the outcome and the output file's size at that moment.
struct Settled {
  outcome: ShellOutcome,
  size_at_settle: u64,
}

struct Started {
  run: Arc<ShellRun>,
  settled: Receiver<Settled>,
  path: PathBuf,
  _dir: TempDir,
}

impl Started {
  fn wait(&self) -> Settled {
    self
      .settled
      .recv_timeout(SETTLE_TIMEOUT)
      .expect("the run settles")
  }

  fn output(&self) -> String {
    std::fs::read_to_string(&self.path).expect("output file")
  }
}

/// Kills a test's tree when the test ends, passed or failed.
struct KillOnDrop(ProcessGroup);

impl Drop for KillOnDrop {
  fn drop(&mut self) {
    kill_now(&self.0);
  }
}

fn start(script: &str) -> Started {
  let dir = TempDir::new("run");
  let path = dir.path().join("shell-x.output");
  let writer = OutputWriter::create(&path, DEFAULT_MAX_OUTPUT_BYTES).expect("open output file");
  let (tx, settled) = mpsc::channel();
  let size_path = path.clone();
  let run = ShellRun::start(
    spawn_shell(script),
    writer,
    Box::new(move |outcome| {
      let size_at_settle = file_size(&size_path);
      let _ = tx.send(Settled {
        outcome,
        size_at_settle,
      });
    }),
  )
  .expect("start");
  Started {
    run,
    settled,
    path,
    _dir: dir,
  }
}

fn file_size(path: &Path) -> u64 {
  std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Live (non-zombie) processes of the tree tagged `tag`.
fn tagged_alive(tag: &str) -> Vec<u32> {
  procfs::list_pids()
    .into_iter()
    .filter(|&pid| procfs::has_env_tag(pid, tag))
    .filter(|&pid| procfs::stat(pid).is_some_and(|s| !s.zombie))
    .collect()
}

#[test]
fn five_megabytes_are_on_disk_when_on_settle_runs() {
  let _serial = serial();
  let total = 5_000_000;
  let started = start(&format!("head -c {total} /dev/zero | tr '\\0' 'x'"));
  let settled = started.wait();
  assert_eq!(settled.size_at_settle, total);
  let c = &settled.outcome.counters;
  assert_eq!(
    (c.bytes_read, c.bytes_written, c.bytes_not_written),
    (total, total, 0)
  );
  assert_eq!(settled.outcome.exit.code, Some(0));
  assert_eq!(settled.outcome.spawn_or_io_error, None);
}

#[test]
fn exit_code_and_both_streams() {
  let _serial = serial();
  let started = start("echo out; echo err >&2; exit 3");
  let settled = started.wait();
  assert_eq!(settled.outcome.exit.code, Some(3));
  assert_eq!(settled.outcome.exit.signal, None);
  assert!(!settled.outcome.aborted);
  let output = started.output();
  assert!(
    output.contains("out\n") && output.contains("err\n"),
    "{output:?}"
  );
  assert_eq!(started.run.pid(), started.run.group().pgid);
}

#[test]
fn signal_exit_reports_the_number() {
  let _serial = serial();
  let started = start("kill -TERM $$");
  let outcome = started.wait().outcome;
  assert_eq!((outcome.exit.code, outcome.exit.signal), (None, Some(15)));
  assert!(!outcome.aborted);
}

#[test]
fn cancel_kills_the_tree_and_reports_aborted() {
  let _serial = serial();
  let started = start("sleep 30 & sleep 30");
  let _cleanup = KillOnDrop(started.run.group().clone());
  assert!(wait_until(Duration::from_secs(5), || {
    tagged_alive(&started.run.group().task_tag).len() >= 2
  }));
  started.run.cancel();
  let outcome = started.wait().outcome;
  assert!(outcome.aborted);
  assert!(outcome.exit.signal.is_some(), "{outcome:?}");
  assert!(wait_until(Duration::from_secs(10), || !tree_alive(
    started.run.group()
  )));
}

/// `timeoutMs` (API.md §6.8): the deadline stops the tree as a cancel does, a child that
/// ignores SIGTERM included, and the run fails with its end `timeout`.
#[test]
fn a_deadline_stops_the_tree_and_fails_the_run_with_a_timeout() {
  let _serial = serial();
  let started = start("trap '' TERM; sleep 30 & sleep 30; wait");
  let _cleanup = KillOnDrop(started.run.group().clone());
  assert!(wait_until(Duration::from_secs(5), || {
    tagged_alive(&started.run.group().task_tag).len() >= 3
  }));
  started.run.set_deadline(200);
  let outcome = started.wait().outcome;
  assert_eq!(outcome.stopped_by, Some(RunLimit::Timeout(200)));
  assert!(!outcome.aborted);
  assert_eq!(
    outcome.verdict(),
    ShellVerdict::Failed("timed out after 200 ms".into())
  );
  let end = outcome.end();
  assert_eq!(end.reason_str(), "timeout");
  assert_eq!(end.by_str(), "limit");
  assert_eq!(end.detail.as_deref(), Some("Timed out after 200 ms"));
  assert!(wait_until(Duration::from_secs(10), || !tree_alive(
    started.run.group()
  )));
  assert!(tagged_alive(&started.run.group().task_tag).is_empty());
}

/// `onOutputCap: 'stop'` (API.md §6.8): at the cap the tree is stopped and the run fails with
/// its end `limit` (`output`); the file holds no more than the cap.
#[test]
fn the_output_cap_stops_the_run_when_asked() {
  let _serial = serial();
  let dir = TempDir::new("cap");
  let path = dir.path().join("shell-cap.output");
  let writer = OutputWriter::create(&path, 10_000).expect("open output file");
  let (tx, settled) = mpsc::channel();
  let run = ShellRun::start(
    spawn_shell("yes 'a line of output'"),
    writer,
    Box::new(move |outcome| {
      let _ = tx.send(outcome);
    }),
  )
  .expect("start");
  let _cleanup = KillOnDrop(run.group().clone());
  run.stop_at_output_cap();
  let outcome = settled
    .recv_timeout(SETTLE_TIMEOUT)
    .expect("the run settles");
  assert_eq!(outcome.stopped_by, Some(RunLimit::OutputCap(10_000)));
  assert_eq!(
    outcome.verdict(),
    ShellVerdict::Failed("output limit of 10000 bytes reached".into())
  );
  let end = outcome.end();
  assert_eq!(
    (end.reason_str(), end.limit_str()),
    ("limit", Some("output"))
  );
  assert_eq!(outcome.counters.bytes_written, 10_000);
  assert!(outcome.counters.bytes_not_written > 0);
  assert!(wait_until(Duration::from_secs(10), || !tree_alive(
    run.group()
  )));
}

/// A run that ends before its deadline is not touched by it.
#[test]
fn a_deadline_after_the_end_changes_nothing() {
  let _serial = serial();
  let started = start("echo done");
  started.run.set_deadline(60_000);
  let outcome = started.wait().outcome;
  assert_eq!(outcome.stopped_by, None);
  assert_eq!(outcome.verdict(), ShellVerdict::Completed(0));
}

#[test]
fn a_descendant_holding_stdout_keeps_the_run_open_and_its_output_is_kept() {
  let _serial = serial();
  // The descendant writes its line only once the test says so (a file
  // appears), so the run cannot settle early however slow the machine is.
  let go = TempDir::new("go");
  let flag = go.path().join("go");
  let started = start(&format!(
    "echo early; (while [ ! -e '{}' ]; do sleep 0.01; done; echo late) &",
    flag.display()
  ));
  let _cleanup = KillOnDrop(started.run.group().clone());
  let pid = started.run.pid();
  let leader_gone = || procfs::stat(pid).is_none_or(|s| s.zombie);
  assert!(wait_until(Duration::from_secs(10), leader_gone));
  assert_eq!(
    started
      .settled
      .recv_timeout(Duration::from_millis(300))
      .err(),
    Some(RecvTimeoutError::Timeout),
    "settled while a descendant held stdout"
  );
  std::fs::write(&flag, b"").unwrap();
  let settled = started.wait();
  assert_eq!(settled.outcome.exit.code, Some(0));
  assert_eq!(started.output(), "early\nlate\n");
}

#[test]
fn a_natural_settle_kills_what_is_left_of_the_tree() {
  let _serial = serial();
  // A nohup'd child in the group, and a double-forked one in a session of its own.
  let started = start(
    "nohup sleep 30 >/dev/null 2>&1 & setsid bash -c 'sleep 31 & exit' >/dev/null 2>&1 </dev/null; echo started",
  );
  let group = started.run.group().clone();
  let _cleanup = KillOnDrop(group.clone());
  let settled = started.wait();
  assert_eq!(settled.outcome.exit.code, Some(0));
  assert_eq!(started.output(), "started\n");
  assert!(
    wait_until(Duration::from_secs(10), || tagged_alive(&group.task_tag)
      .is_empty()),
    "left alive after the settle: {:?}",
    tagged_alive(&group.task_tag)
  );
}

#[test]
fn a_pending_wait_timer_keeps_nothing_of_a_settled_run() {
  let _serial = serial();
  let started = start("echo done");
  // A wait whose timeout lies far beyond the run: its timer is still pending
  // on the reactor after the settle.
  started.run.add_wait(
    1,
    crate::wait::WaitSpec {
      matcher: None,
      quiet_ms: None,
      timeout_ms: Some(600_000),
      port: None,
    },
  );
  started.wait();
  // Only the run's own cell refers to it weakly: once the last `Arc` goes,
  // its allocation goes too, though the timer fires ten minutes from now.
  assert_eq!(Arc::weak_count(&started.run), 1);
}

#[test]
fn a_runs_waits_are_timed_on_its_injected_clock() {
  let _serial = serial();
  let dir = TempDir::new("run-clock");
  let path = dir.path().join("shell-x.output");
  let writer = OutputWriter::create(&path, DEFAULT_MAX_OUTPUT_BYTES).expect("open output file");
  let manual = crate::clock::ManualClock::new(1_000_000);
  let shared: Arc<dyn crate::clock::Clock + Send + Sync> = manual.clone();
  let run = ShellRun::start_on_clock(
    crate::clock::SharedClock::new(shared),
    spawn_shell("sleep 30"),
    writer,
    None,
    Box::new(|_| {}),
    Box::new(|_| {}),
  )
  .expect("start");
  let _cleanup = KillOnDrop(run.group().clone());
  let spec = crate::wait::WaitSpec {
    matcher: Some(regex::Regex::new("never").unwrap()),
    ..crate::wait::WaitSpec::default()
  };
  run.add_wait(1, spec);
  // 250 000 ms pass on the run's clock and none (to speak of) on the process's.
  manual.advance(250_000);
  let aborted = run.abort_wait(1).expect("the wait was pending");
  assert_eq!(aborted.reason, crate::wait::WaitReason::Aborted);
  assert_eq!(aborted.elapsed_ms, 250_000.0);
  run.cancel();
}

#[test]
fn a_shell_that_never_started_fails_with_its_error_and_no_status() {
  let outcome = ShellOutcome::failed_to_start("Cannot open output file /x: EISDIR");
  assert_eq!(
    outcome.verdict(),
    ShellVerdict::Failed("Cannot open output file /x: EISDIR".into())
  );
  assert_eq!((outcome.exit.code, outcome.exit.signal), (None, None));
  assert!(!outcome.aborted);
}
