//! Waits, settled notifications and who ended a monitor (API.md §6.1–6.3),
//! through the hub with the recording host of `tests/mod.rs`.

use super::*;
use crate::end::{EndBy, EndReason, EndVia, TaskEnd};
use crate::monitor::hub::NativeTask;
use crate::monitor::notification::NotificationKind;
use crate::wait::{WaitReason, WaitSpec};
use regex::Regex;

fn waits(host: &Host) -> Vec<(u64, WaitReason, Option<String>, MonitorStatus)> {
  host
    .log
    .iter()
    .filter_map(|l| match l {
      Log::WaitResolved(_, wait, o) => Some((*wait, o.reason, o.line.clone(), o.status)),
      _ => None,
    })
    .collect()
}

fn matching(pattern: &str) -> WaitSpec {
  WaitSpec {
    matcher: Some(Regex::new(pattern).unwrap()),
    ..WaitSpec::default()
  }
}

fn end_of(hub: &MonitorHub, id: &str) -> TaskEnd {
  lock(hub)
    .get(id)
    .and_then(|e| e.end.clone())
    .expect("an end")
}

#[test]
fn fed_waits_match_sanitised_emitted_lines_then_resolve_exit_after_the_terminal() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  host.register(registration("m")).unwrap();
  assert_eq!(
    hub.add_wait("m", 1, matching("^ready on \\d+$"), 0),
    Ok(None)
  );
  assert_eq!(hub.add_wait("m", 2, WaitSpec::default(), 0), Ok(None));
  host.emit("m", "starting");
  host.emit("m", "ready on 8080\u{7}");
  assert_eq!(
    waits(&host),
    [(
      1,
      WaitReason::Match,
      Some("ready on 8080".into()),
      MonitorStatus::Running
    )]
  );
  host.complete("m", Some(0));
  assert_eq!(
    waits(&host)[1],
    (2, WaitReason::Exit, None, MonitorStatus::Completed)
  );
  // The exit resolution follows the terminal notification.
  let terminal = host
    .log
    .iter()
    .position(|l| matches!(l, Log::Notified(n) if n.meta.kind == NotificationKind::Terminal))
    .unwrap();
  let exit = host
    .log
    .iter()
    .position(|l| matches!(l, Log::WaitResolved(_, 2, _)))
    .unwrap();
  assert!(terminal < exit);
  // A wait on a settled entry resolves at once; an unknown id is refused.
  let now = hub.add_wait("m", 3, matching("x"), 5).unwrap().unwrap();
  assert_eq!(
    (now.reason, now.status),
    (WaitReason::Exit, MonitorStatus::Completed)
  );
  assert!(hub.add_wait("nope", 4, WaitSpec::default(), 0).is_err());
}

#[test]
fn quiet_and_timeout_waits_fire_from_the_timer_pass() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  host.register(registration("m")).unwrap();
  let quiet = WaitSpec {
    quiet_ms: Some(100),
    ..WaitSpec::default()
  };
  let timeout = WaitSpec {
    timeout_ms: Some(250),
    ..matching("never")
  };
  hub.add_wait("m", 1, quiet, 0).unwrap();
  hub.add_wait("m", 2, timeout, 0).unwrap();
  clock.advance(60);
  host.emit("m", "still going");
  assert_eq!(lock(&hub).next_timer_deadline(), Some(160));
  hub.apply(|r| r.take_due_timers(159));
  hub.drain(&mut host);
  assert!(waits(&host).is_empty());
  hub.apply(|r| r.take_due_timers(160));
  hub.apply(|r| r.take_due_timers(250));
  hub.drain(&mut host);
  let got = waits(&host);
  assert_eq!(got[0].0, 1);
  assert_eq!(got[0].1, WaitReason::Quiet);
  assert_eq!(got[1].0, 2);
  assert_eq!(got[1].1, WaitReason::Timeout);
  assert_eq!(lock(&hub).next_timer_deadline(), None);
}

#[test]
fn an_aborted_wait_resolves_once_and_reset_resolves_the_rest_cancelled() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  host.register(registration("m")).unwrap();
  hub.add_wait("m", 1, WaitSpec::default(), 0).unwrap();
  hub.add_wait("m", 2, WaitSpec::default(), 0).unwrap();
  hub.abort_wait("m", 1, 10);
  hub.abort_wait("m", 1, 11);
  hub.drain(&mut host);
  assert_eq!(
    waits(&host),
    [(1, WaitReason::Aborted, None, MonitorStatus::Running)]
  );
  hub.reset(&mut host);
  assert_eq!(
    waits(&host)[1],
    (2, WaitReason::Exit, None, MonitorStatus::Cancelled)
  );
}

#[test]
fn every_end_names_its_cause() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  for id in [
    "done", "bad", "fail", "cancel", "quiet", "all", "owned", "max", "idle",
  ] {
    let mut reg = registration(id);
    if id == "owned" {
      reg.owner_agent_id = Some("agent".into());
    }
    if id == "max" {
      reg.max_events = 2;
    }
    host.register(reg).unwrap();
  }
  host.complete("done", Some(0));
  assert_eq!(end_of(&hub, "done"), TaskEnd::exited(Some(0)));
  let wall = clock.wall_ms();
  hub.apply(|r| {
    let exit = ExitInfo {
      code: None,
      signal: Some("SIGSEGV".into()),
    };
    r.settle_from_exit("bad", &exit, false, wall)
  });
  assert_eq!(end_of(&hub, "bad"), TaskEnd::signaled("SIGSEGV"));
  host.fail("fail", "boom");
  assert_eq!(end_of(&hub, "fail").detail.as_deref(), Some("boom"));
  hub.cancel(&mut host, &clock, "cancel", true, EndVia::Cancel);
  assert_eq!(end_of(&hub, "cancel"), TaskEnd::cancelled(EndVia::Cancel));
  hub.cancel(&mut host, &clock, "quiet", false, EndVia::Cancel);
  assert_eq!(end_of(&hub, "quiet").via, Some(EndVia::Cancel));
  hub.cancel_running_for_owner(&mut host, &clock, "agent", true);
  assert_eq!(end_of(&hub, "owned"), TaskEnd::cancelled(EndVia::Owner));
  host.emit("max", "one");
  host.emit("max", "two");
  assert_eq!(end_of(&hub, "max"), TaskEnd::max_events());
  clock.advance(300_001);
  hub.fed_idle_timeout(&mut host, &clock, "idle");
  let idle = end_of(&hub, "idle");
  assert_eq!(
    (idle.reason, idle.by),
    (EndReason::IdleTimeout, EndBy::Limit)
  );
  hub.abort_all(&mut host, &clock, true);
  assert_eq!(end_of(&hub, "all"), TaskEnd::cancelled(EndVia::AbortAll));
  // Terminal notifications carry the end; events carry none.
  for n in host.notifications() {
    match n.meta.kind {
      NotificationKind::Terminal => assert!(n.meta.end.is_some(), "{}", n.display_text),
      _ => assert!(n.meta.end.is_none()),
    }
  }
}

#[test]
fn a_listener_that_completes_during_a_cancel_keeps_the_first_cause() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  host.register(registration("m")).unwrap();
  hub.apply(|r| r.cancel_begin("m", EndVia::Cancel));
  host.complete("m", Some(0));
  hub.apply(|r| r.cancel_finish("m", EndVia::Cancel, 0.0));
  let entry = lock(&hub).get("m").cloned().unwrap();
  assert_eq!(entry.status, MonitorStatus::Completed);
  assert_eq!(entry.end, Some(TaskEnd::cancelled(EndVia::Cancel)));
}

#[test]
fn settled_notifications_fire_after_output_stops_and_rearm_on_the_next_byte() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut reg = registration("n");
  reg.mode = EntryMode::Native;
  reg.settle_ms = Some(500);
  host.register(reg).unwrap();
  hub.apply(|r| r.take_due_timers(10_000));
  hub.drain(&mut host);
  assert!(host.notifications().is_empty(), "no output, no settle");
  assert!(lock(&hub).observes_lines("n"));
  let armed = lock(&hub).record_bytes("n", 12, 100);
  assert!(armed);
  assert!(!lock(&hub).record_bytes("n", 3, 150), "already armed");
  hub.apply(|r| r.observe_lines("n", &["compiling <a> & b".to_owned()], 150));
  assert_eq!(lock(&hub).next_timer_deadline(), Some(650));
  hub.apply(|r| r.take_due_timers(649));
  hub.apply(|r| r.take_due_timers(650));
  hub.apply(|r| r.take_due_timers(5_000));
  hub.drain(&mut host);
  let settled: Vec<_> = host.notifications().into_iter().cloned().collect();
  assert_eq!(settled.len(), 1, "once per quiet period");
  let n = &settled[0];
  assert_eq!(n.meta.kind, NotificationKind::Settled);
  assert_eq!(n.meta.status, MonitorStatus::Running);
  assert_eq!(n.meta.event_count, 0, "not an event");
  assert_eq!(
    n.display_text,
    "Monitor \"watch app logs\" output settled: no output for 500 ms."
  );
  assert_eq!(
    n.model_text,
    "<task-notification>\n<task-id>n</task-id>\n<kind>monitor</kind>\n<status>running</status>\n<event-count>0</event-count>\n<summary>Monitor \"watch app logs\" output settled: no output for 500 ms.</summary>\n<result>compiling &lt;a&gt; &amp; b</result>\n</task-notification>"
  );
  assert!(
    lock(&hub).record_bytes("n", 1, 6_000),
    "re-armed by the next byte"
  );
  hub.apply(|r| r.take_due_timers(6_500));
  hub.drain(&mut host);
  assert_eq!(host.notifications().len(), 2);
  assert_eq!(lock(&hub).get("n").unwrap().event_count, 0);
}

/// A native task that records, at each `observe_lines`, whether the registry was locked
/// (by the caller, since nothing else runs here).
struct ObservationProbe {
  hub: std::sync::Weak<MonitorHub>,
  calls: std::sync::Mutex<Vec<(crate::monitor::pipeline::Observe, bool)>>,
}

impl NativeTask for ObservationProbe {
  fn stop_reading(&self, _hub: &MonitorHub, _kind: AbortKind) {}
  fn kill(&self) {}
  fn observe_lines(&self, observe: crate::monitor::pipeline::Observe) {
    let hub = self.hub.upgrade().expect("the hub");
    let locked = hub.try_registry().is_none();
    self.calls.lock().unwrap().push((observe, locked));
  }
}

#[test]
fn a_new_wait_changes_the_readers_observation_under_the_registry_lock() {
  // A read sets the observation from the registry under its lock. Were add_wait to tell the
  // reader after releasing that lock, a read in between would count (not build) the lines the
  // wait needs and then set the observation back to what it was without the wait: a line
  // printed after waitFor() was called could be missed (seen as a rare vitest timeout).
  let hub = std::sync::Arc::new(MonitorHub::new(RegistryConfig::default()));
  let clock = TestClock::new();
  let mut host = Host::new(&hub, &clock);
  host.register(registration("m")).unwrap();
  let probe = std::sync::Arc::new(ObservationProbe {
    hub: std::sync::Arc::downgrade(&hub),
    calls: std::sync::Mutex::new(Vec::new()),
  });
  hub.add_native("m", probe.clone());
  assert_eq!(hub.add_wait("m", 1, matching("^BUILD OK$"), 0), Ok(None));
  let calls = probe.calls.lock().unwrap().clone();
  assert!(!calls.is_empty());
  assert!(
    calls.iter().all(|(_, locked)| *locked),
    "every observation change is made under the registry lock: {calls:?}"
  );
  assert!(
    calls
      .iter()
      .all(|(observe, _)| !matches!(observe, crate::monitor::pipeline::Observe::Off)),
    "{calls:?}"
  );
}

#[test]
fn a_wait_resolved_by_the_settle_counts_its_time_on_the_registrys_clock() {
  // The registry reads the injected clock, not the process's: a wait added at 0 and resolved by
  // a settle 250 000 ms of (manual) time later reports exactly that, after no real time at all.
  let manual = crate::clock::ManualClock::new(1_000_000);
  let shared: std::sync::Arc<dyn Clock + Send + Sync> = manual.clone();
  let hub = MonitorHub::with_clock(
    RegistryConfig::default(),
    crate::clock::SharedClock::new(shared),
  );
  let clock = TestClock::new();
  let mut host = Host::new(&hub, &clock);
  host.register(registration("m")).unwrap();
  assert_eq!(
    hub.add_wait("m", 1, WaitSpec::default(), manual.mono_ms()),
    Ok(None)
  );
  manual.advance(250_000);
  host.complete("m", Some(0));
  let elapsed: Vec<f64> = host
    .log
    .iter()
    .filter_map(|l| match l {
      Log::WaitResolved(_, 1, o) => Some(o.elapsed_ms),
      _ => None,
    })
    .collect();
  assert_eq!(elapsed, [250_000.0]);
}
