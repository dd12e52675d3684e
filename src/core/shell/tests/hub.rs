//! The shell hub (`shell/hub.rs`): the registry with its runs, waits and last screens, and the
//! rules that tie them (API.md §4, §6.1, §6.5). Runs are real processes.

use std::path::PathBuf;
use std::sync::Arc;

use crate::clock::{ManualClock, SharedClock};

use crate::shell::hub::{ShellHub, ShellOutgoing, WaitPlan};
use crate::shell::test_support::TempDir;
use crate::shell::*;
use crate::terminal::{InputError, TerminalInput, TerminalRefusal, TerminalTasks};
use crate::wait::{WaitOutcome, WaitReason, WaitSpec};

fn hub_with(dir: &TempDir, ids: &[&str]) -> ShellHub {
  hub_on(dir, ids, ManualClock::new(1_000_000))
}

/// A hub whose waits are timed on `clock`.
fn hub_on(dir: &TempDir, ids: &[&str], clock: Arc<ManualClock>) -> ShellHub {
  let registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, 4242);
  let mut hub = ShellHub::with_clock(registry, SharedClock::new(clock));
  for id in ids {
    let reg = ShellRegistration {
      shell_id: (*id).to_owned(),
      command: "npm run dev".to_owned(),
      cwd: "/repo".to_owned(),
      start_time: 1000.0,
      output_path: output_path(dir, id).to_string_lossy().into_owned(),
      pid: None,
      todo_work_chain_id: None,
    };
    let effects = hub.registry_mut().register(reg).expect("register");
    hub.outgoing(effects);
  }
  hub
}

fn output_path(dir: &TempDir, id: &str) -> PathBuf {
  dir.path().join(format!("shell-{id}.output"))
}

fn spec(quiet_ms: Option<u64>, timeout_ms: Option<u64>) -> WaitSpec {
  WaitSpec {
    quiet_ms,
    timeout_ms,
    ..WaitSpec::default()
  }
}

fn exit(status: ShellStatus) -> WaitOutcome {
  WaitOutcome {
    reason: WaitReason::Exit,
    line: None,
    port: None,
    status,
    elapsed_ms: 0.0,
  }
}

#[test]
fn a_wait_with_no_run_is_judged_by_the_earlier_of_its_clocks() {
  let dir = TempDir::new("hub-plan");
  let mut hub = hub_with(&dir, &["a"]);
  let cases = [
    (
      spec(Some(500), Some(200)),
      WaitPlan::Timer(200, WaitReason::Timeout),
    ),
    (
      spec(Some(500), Some(900)),
      WaitPlan::Timer(500, WaitReason::Quiet),
    ),
    (
      spec(Some(500), Some(500)),
      WaitPlan::Timer(500, WaitReason::Quiet),
    ),
    (
      spec(Some(300), None),
      WaitPlan::Timer(300, WaitReason::Quiet),
    ),
    (
      spec(None, Some(700)),
      WaitPlan::Timer(700, WaitReason::Timeout),
    ),
    (spec(None, None), WaitPlan::Settle),
  ];
  for (wait, (spec, plan)) in cases.into_iter().enumerate() {
    assert_eq!(hub.add_wait("a", wait as u64, spec), plan);
    assert!(hub.is_waiting("a", wait as u64));
  }
}

#[test]
fn waits_end_with_the_settle_once_and_after_its_effects() {
  let dir = TempDir::new("hub-settle");
  let mut hub = hub_with(&dir, &["a", "b"]);
  hub.add_wait("a", 1, spec(None, None));
  hub.add_wait("a", 2, spec(None, None));
  hub.add_wait("a", 3, spec(None, None));
  hub.add_wait("b", 4, spec(None, None));
  // Wait 2 ended on its own (its timer): the settle does not resolve it again.
  hub.forget_wait("a", 2);
  let effects = hub.registry_mut().complete("a", 0, 2000.0);
  let out = hub.outgoing(effects);
  assert_eq!(
    out,
    [
      ShellOutgoing::Notify("a".into()),
      ShellOutgoing::StatusChanged(Some("a".into())),
      ShellOutgoing::ResolveWait(1, exit(ShellStatus::Completed)),
      ShellOutgoing::ResolveWait(3, exit(ShellStatus::Completed)),
    ]
  );
  assert!(!hub.is_waiting("a", 1) && hub.is_waiting("b", 4));
  // A second settle attempt has no wait left to end.
  let effects = hub.registry_mut().complete("a", 1, 3000.0);
  assert!(hub.outgoing(effects).is_empty());
}

#[test]
fn a_reset_ends_the_waits_of_shells_without_a_run_cancelled_and_forgets_last() {
  let dir = TempDir::new("hub-reset");
  let mut hub = hub_with(&dir, &["a", "b"]);
  hub.add_wait("a", 1, spec(Some(100), None));
  hub.add_wait("b", 2, spec(None, None));
  let effects = hub.registry_mut().reset();
  let out = hub.outgoing(effects);
  let (last, before) = out.split_last().expect("items");
  assert_eq!(*last, ShellOutgoing::Forget(vec!["a".into(), "b".into()]));
  assert!(before.contains(&ShellOutgoing::ResolveWait(1, exit(ShellStatus::Cancelled))));
  assert!(before.contains(&ShellOutgoing::ResolveWait(2, exit(ShellStatus::Cancelled))));
  assert!(!before.iter().any(|o| matches!(o, ShellOutgoing::Forget(_))));
  assert!(hub.entry("a").is_none());
}

#[test]
fn an_aborted_wait_without_a_run_says_aborted_running() {
  let dir = TempDir::new("hub-abort");
  let mut hub = hub_with(&dir, &["a"]);
  hub.add_wait("a", 7, spec(None, None));
  let outcome = hub.abort_wait("a", 7).expect("pending");
  assert_eq!(outcome.reason, WaitReason::Aborted);
  assert_eq!(outcome.status, ShellStatus::Running);
  assert!(!hub.is_waiting("a", 7));
  let effects = hub.registry_mut().complete("a", 0, 2000.0);
  assert!(!hub
    .outgoing(effects)
    .iter()
    .any(|o| matches!(o, ShellOutgoing::ResolveWait(..))));
}

#[test]
fn each_wait_is_timed_from_its_start_on_the_hubs_clock() {
  let dir = TempDir::new("hub-clock");
  let clock = ManualClock::new(1_000_000);
  let mut hub = hub_on(&dir, &["a"], Arc::clone(&clock));
  hub.add_wait("a", 1, spec(None, None));
  clock.advance(100);
  hub.add_wait("a", 2, spec(Some(300), None));
  hub.add_wait("a", 3, spec(None, None));
  hub.add_wait("a", 4, spec(None, None));
  clock.advance(300);
  // The timer of wait 2 fired: 300 ms after its start; a second firing finds it ended.
  let timed_out = hub
    .wait_timer_fired("a", 2, WaitReason::Quiet)
    .expect("pending");
  assert_eq!(
    (timed_out.reason, timed_out.elapsed_ms),
    (WaitReason::Quiet, 300.0)
  );
  assert_eq!(hub.wait_timer_fired("a", 2, WaitReason::Quiet), None);
  clock.advance(50);
  let aborted = hub.abort_wait("a", 3).expect("pending");
  assert_eq!(
    (aborted.reason, aborted.elapsed_ms),
    (WaitReason::Aborted, 350.0)
  );
  assert_eq!(hub.abort_wait("a", 3), None);
  clock.advance(50);
  let effects = hub.registry_mut().complete("a", 0, 2000.0);
  let elapsed: Vec<(u64, f64)> = hub
    .outgoing(effects)
    .into_iter()
    .filter_map(|o| match o {
      ShellOutgoing::ResolveWait(wait, outcome) => Some((wait, outcome.elapsed_ms)),
      _ => None,
    })
    .collect();
  assert_eq!(elapsed, [(1, 500.0), (4, 400.0)]);
}

#[test]
fn terminal_calls_are_refused_by_one_rule() {
  let dir = TempDir::new("hub-terminal");
  let hub = hub_with(&dir, &["a"]);
  assert_eq!(hub.screen("nope"), Err(TerminalRefusal::Unknown));
  assert_eq!(
    hub.live_terminal("nope").err(),
    Some(TerminalRefusal::Unknown)
  );
  // Registered from JavaScript: no run, no terminal.
  assert_eq!(hub.screen("a"), Ok(None));
  assert_eq!(
    hub.live_terminal("a").err(),
    Some(TerminalRefusal::NoTerminal)
  );
  let write = || TerminalInput::Write(b"x".to_vec());
  assert!(matches!(
    hub.send_input("nope", write()),
    Err(InputError::Refused(TerminalRefusal::Unknown))
  ));
  assert!(matches!(
    hub.send_input("a", write()),
    Err(InputError::Refused(TerminalRefusal::NoTerminal))
  ));
}

#[cfg(target_os = "linux")]
mod with_runs {
  use std::sync::mpsc;
  use std::sync::Arc;
  use std::time::Duration;

  use super::*;
  use crate::shell::test_support::{serial, spawn_shell};
  use crate::terminal::TerminalSize;

  const SETTLE: Duration = Duration::from_secs(10);

  fn run(
    dir: &TempDir,
    id: &str,
    script: &str,
    terminal: bool,
  ) -> (Arc<ShellRun>, mpsc::Receiver<ShellOutcome>) {
    let writer =
      OutputWriter::create(&output_path(dir, id), DEFAULT_MAX_OUTPUT_BYTES).expect("output");
    let process = if terminal {
      let remove_env = crate::launch::default_remove_env();
      let cwd = std::env::temp_dir();
      crate::launch::spawn_shell(&crate::launch::ShellCommand {
        command: script,
        cwd: &cwd,
        env: &[],
        remove_env: &remove_env,
        term: crate::launch::Term::Shell,
        terminal: Some(TerminalSize { cols: 40, rows: 5 }),
        limits: None,
      })
      .expect("spawn")
    } else {
      spawn_shell(script)
    };
    let (tx, rx) = mpsc::channel();
    let run = ShellRun::start(
      process,
      writer,
      Box::new(move |outcome| {
        let _ = tx.send(outcome);
      }),
    )
    .expect("start");
    (run, rx)
  }

  #[test]
  fn a_run_settled_from_javascript_is_stopped() {
    let _serial = serial();
    let dir = TempDir::new("hub-stop");
    let mut hub = hub_with(&dir, &["a"]);
    let token = hub.begin_run("a");
    let (run, settled) = run(&dir, "a", "sleep 30", false);
    assert!(
      !hub.attach_run("a", token, 1, Arc::clone(&run), false),
      "a running entry keeps its run"
    );
    assert_eq!(hub.add_wait("a", 1, spec(Some(50), None)), WaitPlan::OnRun);
    hub.stop_run_if_settled("a");
    assert!(settled.try_recv().is_err(), "a running entry's run goes on");
    let effects = hub.registry_mut().complete("a", 0, 2000.0);
    hub.outgoing(effects);
    hub.stop_run_if_settled("a");
    let outcome = settled.recv_timeout(SETTLE).expect("the run is stopped");
    assert!(outcome.aborted);
    let (_, done) = hub.finish_run("a", token, outcome.verdict(), outcome.end(), 2100.0);
    assert_eq!(
      done.status,
      ShellStatus::Completed,
      "done reports the settle from JavaScript"
    );
    assert!(hub.run_of("a").is_none());
    assert_eq!(
      hub.add_wait("a", 2, spec(None, Some(10))),
      WaitPlan::Timer(10, WaitReason::Timeout)
    );
  }

  #[test]
  fn a_run_attached_to_a_settled_entry_is_cancelled() {
    let _serial = serial();
    let dir = TempDir::new("hub-late");
    let mut hub = hub_with(&dir, &["a"]);
    let effects = hub.registry_mut().cancel("a", 1500.0);
    hub.outgoing(effects);
    let token = hub.begin_run("a");
    let (run, settled) = run(&dir, "a", "sleep 30", false);
    assert!(hub.attach_run("a", token, 1, Arc::clone(&run), false));
    let outcome = settled.recv_timeout(SETTLE).expect("the run is cancelled");
    assert!(outcome.aborted);
  }

  #[test]
  fn a_run_whose_controller_was_aborted_before_it_attached_is_cancelled() {
    let _serial = serial();
    let dir = TempDir::new("hub-aborted");
    let mut hub = hub_with(&dir, &["a"]);
    let token = hub.begin_run("a");
    let (run, settled) = run(&dir, "a", "sleep 30", false);
    assert!(hub.attach_run("a", token, 1, Arc::clone(&run), true));
    let outcome = settled.recv_timeout(SETTLE).expect("the run is cancelled");
    assert!(outcome.aborted);
  }

  #[test]
  fn each_objects_controller_cancels_its_own_run_and_an_old_runs_end_keeps_the_new_one() {
    let _serial = serial();
    let dir = TempDir::new("hub-cancel");
    let mut hub = hub_with(&dir, &["a"]);
    let old = hub.begin_run("a");
    let (first, first_settled) = run(&dir, "a", "sleep 30", false);
    hub.attach_run("a", old, 1, Arc::clone(&first), false);
    assert_eq!(hub.ports("a").is_some(), crate::process::PORTS_SUPPORTED);
    // Reset, and a second shell takes the id: each object's controller stops its own run.
    let effects = hub.registry_mut().reset();
    hub.outgoing(effects);
    let reg = ShellRegistration {
      shell_id: "a".into(),
      command: "sleep 30".into(),
      cwd: "/repo".into(),
      start_time: 3000.0,
      output_path: output_path(&dir, "a2").to_string_lossy().into_owned(),
      pid: None,
      todo_work_chain_id: None,
    };
    let effects = hub.registry_mut().register(reg).expect("register");
    hub.outgoing(effects);
    let new = hub.begin_run("a");
    let (second, second_settled) = run(&dir, "a2", "sleep 30", false);
    hub.attach_run("a", new, 2, Arc::clone(&second), false);
    hub.cancel_run(1);
    let outcome = first_settled.recv_timeout(SETTLE).expect("cancelled");
    assert!(outcome.aborted);
    assert!(second_settled.try_recv().is_err(), "the new run goes on");
    hub.finish_run("a", old, outcome.verdict(), outcome.end(), 3100.0);
    assert!(
      hub
        .run_of("a")
        .is_some_and(|run| Arc::ptr_eq(&run, &second)),
      "the new run stays linked"
    );
    hub.cancel_run(2);
    let outcome = second_settled.recv_timeout(SETTLE).expect("cancelled");
    let (out, done) = hub.finish_run("a", new, outcome.verdict(), outcome.end(), 3200.0);
    assert_eq!(done.status, ShellStatus::Cancelled);
    assert!(out.contains(&ShellOutgoing::StatusChanged(Some("a".into()))));
    assert!(hub.run_of("a").is_none() && hub.ports("a").is_none());
  }

  #[test]
  fn a_terminal_shell_keeps_its_last_screen_until_it_leaves() {
    let _serial = serial();
    let dir = TempDir::new("hub-screen");
    let mut hub = hub_with(&dir, &["a"]);
    let token = hub.begin_run("a");
    let (run, settled) = run(&dir, "a", "printf 'last words'; sleep 30", true);
    hub.attach_run("a", token, 1, Arc::clone(&run), false);
    assert!(hub.live_terminal("a").is_ok());
    let shown = crate::shell::test_support::wait_until(SETTLE, || {
      hub
        .screen("a")
        .ok()
        .flatten()
        .is_some_and(|s| s.text.contains("last words"))
    });
    assert!(shown, "the live screen shows the output");
    let size = TerminalSize { cols: 30, rows: 4 };
    hub
      .send_input("a", TerminalInput::Resize(size))
      .expect("resized");
    let screen = hub.screen("a").expect("known").expect("a screen");
    assert_eq!(
      (screen.cols, screen.rows),
      (30, 4),
      "the screen takes the new size"
    );
    hub
      .send_input("a", TerminalInput::Write(b"typed".to_vec()))
      .expect("written");
    let effects = hub.registry_mut().request_cancel("a");
    hub.outgoing(effects);
    run.cancel();
    let outcome = settled.recv_timeout(SETTLE).expect("the run settles");
    let effects = hub.registry_mut().cancel("a", 2000.0);
    hub.outgoing(effects);
    assert_eq!(hub.live_terminal("a").err(), Some(TerminalRefusal::Ended));
    assert!(matches!(
      hub.send_input("a", TerminalInput::Resize(size)),
      Err(InputError::Refused(TerminalRefusal::Ended))
    ));
    hub.finish_run("a", token, outcome.verdict(), outcome.end(), 2100.0);
    let screen = hub.screen("a").expect("known").expect("the last screen");
    assert!(screen.text.contains("last words"), "{:?}", screen.text);
    assert_eq!(hub.live_terminal("a").err(), Some(TerminalRefusal::Ended));
    let effects = hub.registry_mut().reset();
    hub.outgoing(effects);
    assert_eq!(hub.screen("a"), Err(TerminalRefusal::Unknown));
  }
}
