//! The registry's behaviour through the driver, with a recording host that can
//! re-enter like JavaScript abort listeners do (CONTRACT.md §2.1–2.9, §3.11).

use super::hub::{Clock, MonitorHost, MonitorHub};
use super::*;
use std::cell::Cell;

struct TestClock {
  wall: Cell<f64>,
  mono: Cell<i64>,
}

impl TestClock {
  fn new() -> Self {
    Self {
      wall: Cell::new(1_000_000.0),
      mono: Cell::new(0),
    }
  }
  fn advance(&self, ms: i64) {
    self.wall.set(self.wall.get() + ms as f64);
    self.mono.set(self.mono.get() + ms);
  }
}

impl Clock for TestClock {
  fn wall_ms(&self) -> f64 {
    self.wall.get()
  }
  fn mono_ms(&self) -> i64 {
    self.mono.get()
  }
}

#[derive(Debug, Clone, PartialEq)]
enum Log {
  Registered(String),
  StatusChanged(Option<String>),
  Notified(Box<Notification>),
  Aborted(String, AbortKind),
  Woke(String),
  Removed(Vec<String>),
  WaitResolved(String, u64, crate::wait::WaitOutcome),
}

struct Host<'a> {
  registry: &'a MonitorHub,
  clock: &'a TestClock,
  log: Vec<Log>,
  /// Lines an abort listener pushes back through emitEvent (like the TS flush).
  flush_on_abort: Vec<String>,
  /// A value the "caller" writes on its entry object before the terminal notification.
  caller_dropped_lines: Option<u64>,
}

impl<'a> Host<'a> {
  fn new(registry: &'a MonitorHub, clock: &'a TestClock) -> Self {
    Self {
      registry,
      clock,
      log: Vec::new(),
      flush_on_abort: Vec::new(),
      caller_dropped_lines: None,
    }
  }

  fn emit(&mut self, id: &str, line: &str) {
    let (wall, mono) = (self.clock.wall_ms(), self.clock.mono_ms());
    self.registry.apply(|r| r.emit_event(id, line, wall, mono));
    self.registry.drain(self);
  }

  fn register(&mut self, reg: Registration) -> Result<(), RegisterError> {
    self.registry.register(reg, self.clock.mono_ms())?;
    self.registry.drain(self);
    Ok(())
  }

  fn complete(&mut self, id: &str, code: Option<i32>) {
    let wall = self.clock.wall_ms();
    self.registry.apply(|r| r.complete(id, code, wall));
    self.registry.drain(self);
  }

  fn fail(&mut self, id: &str, error: &str) {
    let wall = self.clock.wall_ms();
    self.registry.apply(|r| r.fail(id, error, wall));
    self.registry.drain(self);
  }

  fn notifications(&self) -> Vec<&Notification> {
    self
      .log
      .iter()
      .filter_map(|l| match l {
        Log::Notified(n) => Some(&**n),
        _ => None,
      })
      .collect()
  }

  fn terminal_count(&self) -> usize {
    self
      .notifications()
      .iter()
      .filter(|n| n.meta.status != MonitorStatus::Running)
      .count()
  }
}

impl MonitorHost for Host<'_> {
  fn registered(&mut self, id: &str) {
    self.log.push(Log::Registered(id.to_owned()));
  }
  fn status_changed(&mut self, id: Option<&str>) {
    self.log.push(Log::StatusChanged(id.map(str::to_owned)));
  }
  fn notify(&mut self, n: Notification) {
    self.log.push(Log::Notified(Box::new(n)));
  }
  fn abort(&mut self, id: &str, kind: AbortKind) {
    self.log.push(Log::Aborted(id.to_owned(), kind));
    for line in std::mem::take(&mut self.flush_on_abort) {
      self.emit(id, &line);
    }
  }
  fn wake(&mut self, agent_id: &str) {
    self.log.push(Log::Woke(agent_id.to_owned()));
  }
  fn removed(&mut self, ids: &[String]) {
    self.log.push(Log::Removed(ids.to_vec()));
  }
  fn wait_resolved(&mut self, id: &str, wait: u64, outcome: crate::wait::WaitOutcome) {
    self
      .log
      .push(Log::WaitResolved(id.to_owned(), wait, outcome));
  }
  fn before_terminal(&mut self, hub: &MonitorHub, id: &str) {
    if let Some(d) = self.caller_dropped_lines {
      hub.registry().set_caller_fields(id, None, d);
    }
  }
}

fn registration(id: &str) -> Registration {
  Registration {
    monitor_id: id.to_owned(),
    command: "tail -f /var/log/app.log".to_owned(),
    description: "watch app logs".to_owned(),
    start_time: 1_000_000.0,
    last_event_time: 1_000_000.0,
    event_count: 0,
    max_events: 1000,
    idle_timeout_ms: 300_000,
    dropped_lines: 0,
    output_file: String::new(),
    pid: None,
    tool_use_id: None,
    owner_agent_id: None,
    todo_work_chain_id: None,
    mode: EntryMode::Fed,
    settle_ms: None,
  }
}

fn setup() -> (MonitorHub, TestClock) {
  (MonitorHub::new(RegistryConfig::default()), TestClock::new())
}

fn lock(hub: &MonitorHub) -> std::sync::MutexGuard<'_, MonitorRegistry> {
  hub.registry()
}

mod signals;

mod lane;
mod persisted;

#[test]
fn golden_event_and_completion_texts() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("mon-1")).unwrap();
  host.emit("mon-1", "hello world");
  host.complete("mon-1", Some(0));
  let n = host.notifications();
  assert_eq!(
    n[0].display_text,
    "Monitor \"watch app logs\" event #1: hello world"
  );
  assert_eq!(
    n[0].model_text,
    "<task-notification>\n<task-id>mon-1</task-id>\n<kind>monitor</kind>\n<status>running</status>\n<event-count>1</event-count>\n<summary>Monitor \"watch app logs\" emitted event #1.</summary>\n<result>hello world</result>\n</task-notification>"
  );
  assert_eq!(n[0].meta.event_count, 1);
  assert_eq!(
    n[1].display_text,
    "Monitor \"watch app logs\" completed. (1 events)"
  );
  assert_eq!(
    n[1].model_text,
    "<task-notification>\n<task-id>mon-1</task-id>\n<kind>monitor</kind>\n<status>completed</status>\n<event-count>1</event-count>\n<summary>Monitor \"watch app logs\" completed. Total events: 1.</summary>\n<command>tail -f /var/log/app.log</command>\n<result>Exited with code 0</result>\n</task-notification>"
  );
  let entry = lock(&reg).get("mon-1").cloned().unwrap();
  assert_eq!(entry.status, MonitorStatus::Completed);
  assert!(entry.end_time.is_some());
  assert!(entry.notified);
}

#[test]
fn register_fires_register_then_status_change_and_owned_entries_skip_register() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("a")).unwrap();
  let mut owned = registration("b");
  owned.owner_agent_id = Some("agent-1".into());
  host.register(owned).unwrap();
  assert_eq!(
    host.log,
    vec![
      Log::Registered("a".into()),
      Log::StatusChanged(Some("a".into())),
      Log::StatusChanged(Some("b".into())),
    ]
  );
}

#[test]
fn complete_null_has_no_result_and_status_change_precedes_notification() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("mon-1")).unwrap();
  host.log.clear();
  host.complete("mon-1", None);
  assert!(matches!(host.log[0], Log::StatusChanged(Some(_))));
  let n = host.notifications();
  assert!(n[0].model_text.contains("<status>completed</status>"));
  assert!(!n[0].model_text.contains("<result>"));
}

#[test]
fn fail_strips_controls_from_the_detail() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("mon-1")).unwrap();
  host.fail("mon-1", "before\u{0}mid\u{1b}[31mafter\u{85}end");
  let model = &host.notifications()[0].model_text;
  assert!(model.contains("<status>failed</status>"));
  assert!(model.contains("<result>beforemid[31mafterend</result>"));
}

#[test]
fn max_events_orders_event_settle_abort_terminal_and_never_exceeds() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("m");
  r.max_events = 3;
  host.register(r).unwrap();
  host.log.clear();
  host.flush_on_abort = vec!["flushed partial".into()];
  for i in 1..=3 {
    host.emit("m", &format!("line {i}"));
  }
  host.emit("m", "line 4");
  let kinds: Vec<&str> = host
    .log
    .iter()
    .map(|l| match l {
      Log::Notified(n) if n.meta.status == MonitorStatus::Running => "event",
      Log::Notified(_) => "terminal",
      Log::StatusChanged(_) => "status",
      Log::Aborted(..) => "abort",
      _ => "other",
    })
    .collect();
  assert_eq!(
    kinds,
    ["event", "event", "event", "status", "abort", "terminal"]
  );
  let terminal = host.notifications()[3];
  assert_eq!(terminal.meta.event_count, 3);
  assert!(terminal
    .model_text
    .contains("<result>Max events reached</result>"));
  let entry = lock(&reg).get("m").cloned().unwrap();
  assert_eq!(entry.event_count, 3);
  assert_eq!(entry.error.as_deref(), Some("Max events reached"));
  assert_eq!(entry.status, MonitorStatus::Completed);
}

#[test]
fn user_cancel_delivers_flushed_lines_then_cancelled() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("m")).unwrap();
  host.flush_on_abort = vec!["last partial line".into()];
  reg.cancel(&mut host, &clock, "m", true, crate::end::EndVia::Cancel);
  let n = host.notifications();
  assert_eq!(n.len(), 2);
  assert!(n[0].display_text.ends_with("event #1: last partial line"));
  assert_eq!(
    n[1].display_text,
    "Monitor \"watch app logs\" was cancelled. (1 events)"
  );
  assert!(n[1].model_text.contains("<status>cancelled</status>"));
  assert!(!n[1].model_text.contains("<result>"));
}

#[test]
fn user_cancel_keeps_a_status_reached_during_the_abort() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("m");
  r.max_events = 1;
  host.register(r).unwrap();
  host.flush_on_abort = vec!["flushed".into()];
  reg.cancel(&mut host, &clock, "m", true, crate::end::EndVia::Cancel);
  let entry = lock(&reg).get("m").cloned().unwrap();
  assert_eq!(entry.status, MonitorStatus::Completed);
  assert_eq!(host.terminal_count(), 1);
}

#[test]
fn silent_cancel_settles_before_abort_and_wakes_the_owner() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("m");
  r.owner_agent_id = Some("agent-7".into());
  host.register(r).unwrap();
  host.log.clear();
  host.flush_on_abort = vec!["ignored".into()];
  reg.cancel(&mut host, &clock, "m", false, crate::end::EndVia::Cancel);
  assert_eq!(
    host.log,
    vec![
      Log::StatusChanged(Some("m".into())),
      Log::Aborted("m".into(), AbortKind::Flush),
      Log::Woke("agent-7".into()),
    ]
  );
  let entry = lock(&reg).get("m").cloned().unwrap();
  assert_eq!(entry.event_count, 0);
  assert!(entry.notified);
  host.complete("m", Some(0));
  assert!(host.notifications().is_empty());
}

#[test]
fn terminal_transitions_are_one_shot() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("m")).unwrap();
  host.complete("m", Some(0));
  reg.cancel(&mut host, &clock, "m", true, crate::end::EndVia::Cancel);
  host.fail("m", "late");
  host.emit("m", "late event");
  assert_eq!(host.notifications().len(), 1);
  // Unknown ids never throw.
  host.complete("nope", Some(1));
  reg.cancel(&mut host, &clock, "nope", true, crate::end::EndVia::Cancel);
}

#[test]
fn duplicate_and_cap_are_refused_without_changes() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("mon-1")).unwrap();
  host.log.clear();
  let err = host.register(registration("mon-1")).unwrap_err();
  assert_eq!(err.to_string(), "Monitor \"mon-1\" is already registered.");
  host.complete("mon-1", Some(0));
  let err = host.register(registration("mon-1")).unwrap_err();
  assert_eq!(err, RegisterError::Duplicate("mon-1".into()));
  for i in 0..16 {
    host.register(registration(&format!("r{i}"))).unwrap();
  }
  let err = host.register(registration("r16")).unwrap_err();
  assert_eq!(
    err.to_string(),
    "Cannot start monitor: maximum concurrent monitors (16) reached. Stop an existing monitor first."
  );
  host.complete("r0", Some(0));
  host.register(registration("r16")).unwrap();
}

#[test]
fn pruning_keeps_the_newest_128_terminal_entries() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  for i in 0..130 {
    host.register(registration(&format!("mon-{i}"))).unwrap();
    clock.advance(1);
    host.complete(&format!("mon-{i}"), Some(0));
  }
  let ids = lock(&reg).ids();
  assert_eq!(ids.len(), 128);
  assert!(!ids.contains(&"mon-0".to_owned()));
  assert!(!ids.contains(&"mon-1".to_owned()));
  assert!(ids.contains(&"mon-129".to_owned()));
  assert!(host.log.contains(&Log::Removed(vec!["mon-0".into()])));
}

#[test]
fn cancel_running_for_owner_collects_first() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  for i in 0..128 {
    host.register(registration(&format!("t{i}"))).unwrap();
    clock.advance(1);
    host.complete(&format!("t{i}"), Some(0));
  }
  for id in ["o1", "o2"] {
    let mut r = registration(id);
    r.owner_agent_id = Some("agent".into());
    host.register(r).unwrap();
  }
  assert!(lock(&reg).has_running_for_owner("agent"));
  reg.cancel_running_for_owner(&mut host, &clock, "agent", false);
  assert!(!lock(&reg).has_running_for_owner("agent"));
  assert_eq!(lock(&reg).ids().len(), 128);
  let aborted = host
    .log
    .iter()
    .filter(|l| matches!(l, Log::Aborted(..)))
    .count();
  assert_eq!(aborted, 2);
}

#[test]
fn abort_all_notifies_every_running_monitor_by_default() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("a")).unwrap();
  host.register(registration("b")).unwrap();
  host.complete("a", Some(0));
  host.log.clear();
  reg.abort_all(&mut host, &clock, true);
  assert_eq!(host.terminal_count(), 1);
  assert!(host.notifications()[0]
    .model_text
    .contains("<task-id>b</task-id>"));
}

#[test]
fn reset_aborts_removes_and_fires_one_status_change() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  reg.reset(&mut host);
  assert!(host.log.is_empty());
  host.register(registration("a")).unwrap();
  let mut native = registration("n");
  native.mode = EntryMode::Native;
  host.register(native).unwrap();
  host.complete("a", Some(0));
  host.log.clear();
  reg.reset(&mut host);
  assert_eq!(
    host.log,
    vec![
      Log::Aborted("n".into(), AbortKind::Discard),
      Log::Removed(vec!["a".into(), "n".into()]),
      Log::StatusChanged(None),
    ]
  );
  assert!(lock(&reg).is_empty());
}

#[test]
fn reset_accepts_events_from_fed_abort_listeners() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("a")).unwrap();
  host.flush_on_abort = vec!["during reset".into()];
  host.log.clear();
  reg.reset(&mut host);
  assert_eq!(host.notifications().len(), 1);
}

#[test]
fn idle_timeout_flushes_then_settles_completed() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("m");
  r.idle_timeout_ms = 5000;
  host.register(r).unwrap();
  clock.advance(4000);
  host.emit("m", "keeps it alive");
  clock.advance(4000);
  assert!(lock(&reg).expired_idle(clock.mono_ms()).is_empty());
  // A fed entry's deadline is a JavaScript timer, never the Rust watcher's.
  assert_eq!(lock(&reg).next_idle_deadline(), None);
  clock.advance(1000);
  assert_eq!(lock(&reg).expired_idle(clock.mono_ms()), ["m"]);
  host.flush_on_abort = vec!["pending partial".into()];
  reg.fed_idle_timeout(&mut host, &clock, "m");
  let n = host.notifications();
  assert_eq!(n.len(), 3);
  assert!(n[1].display_text.ends_with("event #2: pending partial"));
  assert!(n[2].model_text.contains("<result>Idle timeout</result>"));
  assert_eq!(
    lock(&reg).get("m").unwrap().error.as_deref(),
    Some("Idle timeout")
  );
  assert_eq!(lock(&reg).next_idle_deadline(), None);
}

#[test]
fn native_idle_deadline_follows_bytes_not_events() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("n");
  r.mode = EntryMode::Native;
  r.idle_timeout_ms = 5000;
  host.register(r).unwrap();
  clock.advance(3000);
  host.emit("n", "event does not move it");
  assert_eq!(lock(&reg).next_idle_deadline(), Some(5000));
  lock(&reg).record_bytes("n", 10, clock.mono_ms());
  assert_eq!(lock(&reg).next_idle_deadline(), Some(8000));
  assert_eq!(lock(&reg).get("n").unwrap().bytes_read, 10);
}

/// `timeoutMs` (API.md §6.8): the deadline is watched with the idle deadline, fires once, and
/// fails the entry with the timeout's end and text.
#[test]
fn a_native_deadline_fails_the_entry_with_a_timeout() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("n");
  r.mode = EntryMode::Native;
  host.register(r).unwrap();
  lock(&reg).set_deadline("n", 500, clock.mono_ms());
  assert_eq!(lock(&reg).next_idle_deadline(), Some(500));
  clock.advance(499);
  assert!(lock(&reg).take_due_deadlines(clock.mono_ms()).is_empty());
  // Not due: nothing happens.
  reg.native_timeout(&clock, "n");
  assert!(lock(&reg).is_running("n"));
  clock.advance(1);
  assert_eq!(lock(&reg).take_due_deadlines(clock.mono_ms()), ["n"]);
  assert!(
    lock(&reg).take_due_deadlines(clock.mono_ms()).is_empty(),
    "handed out once"
  );
  assert_eq!(lock(&reg).next_idle_deadline(), Some(300_000));
  reg.native_timeout(&clock, "n");
  reg.drain(&mut host);
  let entry = lock(&reg).get("n").unwrap().clone();
  assert_eq!(entry.status, MonitorStatus::Failed);
  assert_eq!(entry.error.as_deref(), Some("Timed out after 500 ms"));
  let end = entry.end.unwrap();
  assert_eq!((end.reason_str(), end.by_str()), ("timeout", "limit"));
  let n = host.notifications();
  assert_eq!(n.len(), 1);
  assert!(
    n[0].model_text.contains("<status>failed</status>"),
    "{}",
    n[0].model_text
  );
  assert!(
    n[0]
      .model_text
      .contains("<result>Timed out after 500 ms</result>"),
    "{}",
    n[0].model_text
  );
  // A second call changes nothing.
  reg.native_timeout(&clock, "n");
  reg.drain(&mut host);
  assert_eq!(host.notifications().len(), 1);
}

#[test]
fn caller_written_dropped_lines_reach_the_terminal_notification() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("mon-1")).unwrap();
  host.caller_dropped_lines = Some(5);
  host.complete("mon-1", Some(0));
  let n = host.notifications()[0];
  assert_eq!(
    n.display_text,
    "Monitor \"watch app logs\" completed. (0 events, 5 lines dropped due to throttling)"
  );
  assert!(n
    .model_text
    .contains("Total events: 0. 5 lines dropped due to throttling.</summary>"));
}

#[test]
fn settle_from_exit_maps_codes_and_signals() {
  let cases = [
    (
      ExitInfo {
        code: Some(0),
        signal: None,
      },
      false,
      "completed",
      Some("Exited with code 0"),
    ),
    (
      ExitInfo {
        code: Some(3),
        signal: None,
      },
      false,
      "failed",
      Some("Exit code 3"),
    ),
    (
      ExitInfo {
        code: None,
        signal: Some("SIGTERM".into()),
      },
      false,
      "failed",
      Some("Killed by signal SIGTERM"),
    ),
    (
      ExitInfo {
        code: None,
        signal: None,
      },
      false,
      "completed",
      None,
    ),
    (
      ExitInfo {
        code: Some(1),
        signal: None,
      },
      true,
      "cancelled",
      None,
    ),
  ];
  for (exit, aborted, status, detail) in cases {
    let (reg, clock) = setup();
    let mut host = Host::new(&reg, &clock);
    host.register(registration("n")).unwrap();
    let wall = clock.wall_ms();
    reg.apply(|r| r.settle_from_exit("n", &exit, aborted, wall));
    reg.drain(&mut host);
    let n = host.notifications()[0];
    assert_eq!(n.meta.status.as_str(), status, "{exit:?}");
    match detail {
      Some(d) => assert!(
        n.model_text.contains(&format!("<result>{d}</result>")),
        "{exit:?}"
      ),
      None => assert!(!n.model_text.contains("<result>"), "{exit:?}"),
    }
  }
}

#[test]
fn notification_texts_escape_and_strip() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("mon-1");
  r.description = "A".repeat(200);
  r.command = "grep \"a&b\" < /dev/null".into();
  r.tool_use_id = Some("call-xyz".into());
  host.register(r).unwrap();
  host.emit("mon-1", "<script>alert(\"xss\")</script>");
  host.emit("mon-1", &"x".repeat(3000));
  host.emit("mon-1", "/var/a\u{202E}evil\u{2069}/out.log");
  host.complete("mon-1", Some(0));
  let n = host.notifications();
  let label = format!("{}...", "A".repeat(77));
  assert!(n[0]
    .display_text
    .starts_with(&format!("Monitor \"{label}\" event #1")));
  assert!(n[0].model_text.contains(&format!(
    "<summary>Monitor \"{label}\" emitted event #1.</summary>"
  )));
  assert!(n[0].model_text.contains("&lt;script&gt;"));
  assert!(!n[0].model_text.contains("<script>"));
  assert_eq!(n[0].model_text.matches("</task-notification>").count(), 1);
  assert!(n[0]
    .model_text
    .contains("<tool-use-id>call-xyz</tool-use-id>"));
  assert_eq!(n[0].meta.tool_use_id.as_deref(), Some("call-xyz"));
  assert!(n[1]
    .model_text
    .contains(&format!("{}...[truncated]</result>", "x".repeat(2000))));
  assert!(!n[1].model_text.contains(&"x".repeat(2001)));
  assert!(n[2]
    .model_text
    .contains("<result>/var/aevil/out.log</result>"));
  assert!(!n[2].display_text.contains('\u{202E}'));
  assert!(n[3]
    .model_text
    .contains("<command>grep &quot;a&amp;b&quot; &lt; /dev/null</command>"));
}

#[test]
fn event_truncation_never_splits_a_surrogate_pair() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  host.register(registration("m")).unwrap();
  host.emit(
    "m",
    &format!("{}😀tail{}", "x".repeat(1999), "y".repeat(100)),
  );
  let model = &host.notifications()[0].model_text;
  assert!(model.contains(&format!(
    "<result>{}...[truncated]</result>",
    "x".repeat(1999)
  )));
}

#[test]
fn routing_sends_owned_entries_to_their_agent() {
  let (reg, clock) = setup();
  let mut host = Host::new(&reg, &clock);
  let mut r = registration("m");
  r.owner_agent_id = Some("agent-1".into());
  r.todo_work_chain_id = Some("chain-9".into());
  host.register(r).unwrap();
  host.emit("m", "x");
  let n = host.notifications()[0];
  assert_eq!(n.route, Route::Agent("agent-1".into()));
  assert_eq!(n.meta.todo_work_chain_id.as_deref(), Some("chain-9"));
}

/// A host whose notification callback re-enters `emitEvent` from every event,
/// like a caller that logs through the registry it listens to.
struct ReentrantHost<'a> {
  hub: &'a MonitorHub,
  depth: usize,
  max_depth: usize,
  events: Vec<String>,
  remaining: usize,
}

impl MonitorHost for ReentrantHost<'_> {
  fn registered(&mut self, _id: &str) {}
  fn status_changed(&mut self, _id: Option<&str>) {}
  fn notify(&mut self, n: Notification) {
    if n.meta.status != MonitorStatus::Running {
      return;
    }
    self.events.push(n.model_text);
    if self.remaining == 0 {
      return;
    }
    self.remaining -= 1;
    self.depth += 1;
    self.max_depth = self.max_depth.max(self.depth);
    let line = format!("line {}", self.remaining);
    self.hub.apply(|r| r.emit_event("mon-r", &line, 0.0, 0));
    self.hub.drain_for(self, "mon-r");
    self.depth -= 1;
  }
  fn abort(&mut self, _id: &str, _kind: AbortKind) {}
  fn wake(&mut self, _agent_id: &str) {}
  fn removed(&mut self, _ids: &[String]) {}
  fn wait_resolved(&mut self, _id: &str, _wait: u64, _outcome: crate::wait::WaitOutcome) {}
}

#[test]
fn reentrant_delivery_is_bounded_and_the_rest_follows_on_later_wakeups() {
  use super::hub::MAX_NESTED_DELIVERIES;
  use std::sync::atomic::{AtomicUsize, Ordering};
  use std::sync::Arc;
  let (hub, clock) = setup();
  let wakes = Arc::new(AtomicUsize::new(0));
  let counter = Arc::clone(&wakes);
  hub.set_waker(Box::new(move || {
    counter.fetch_add(1, Ordering::SeqCst);
  }));
  let mut reg = registration("mon-r");
  reg.max_events = 10_000;
  hub.register(reg, clock.mono_ms()).unwrap();
  let mut host = ReentrantHost {
    hub: &hub,
    depth: 0,
    max_depth: 0,
    events: Vec::new(),
    remaining: 5_000,
  };
  hub.apply(|r| r.emit_event("mon-r", "first", 0.0, 0));
  hub.drain_for(&mut host, "mon-r");
  // What the waker asks for: the JavaScript thread drains when it is free.
  let mut turns = 0;
  while hub.has_pending() {
    hub.drain_some(&mut host, 256);
    turns += 1;
    assert!(turns < 100_000, "delivery never finished");
  }
  assert!(
    host.max_depth <= MAX_NESTED_DELIVERIES,
    "depth {}",
    host.max_depth
  );
  assert!(
    wakes.load(Ordering::SeqCst) > 0,
    "deferred deliveries asked for a wake-up"
  );
  assert_eq!(host.events.len(), 5_001);
  assert!(host.events[0].contains("first"));
  for (i, text) in host.events[1..].iter().enumerate() {
    assert!(text.contains(&format!("line {}", 4_999 - i)), "{i}: {text}");
  }
  assert_eq!(hub.registry().get("mon-r").unwrap().event_count, 5_001);
}

#[test]
fn a_restart_stops_a_running_monitor_as_a_cancel_then_takes_its_entry_and_counters() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  host.register(registration("mon-r")).unwrap();
  host.emit("mon-r", "one");
  host.emit("mon-r", "two");
  let counters = hub
    .stop_for_restart(&mut host, &clock, "mon-r")
    .expect("stopped");
  assert_eq!(counters.event_count, 2);
  let last = *host
    .notifications()
    .last()
    .expect("a terminal notification");
  assert_eq!(last.meta.status, MonitorStatus::Cancelled);
  assert_eq!(
    last.meta.end.as_ref().map(|e| e.reason_str()),
    Some("restarted")
  );
  assert!(host
    .log
    .iter()
    .any(|l| matches!(l, Log::Removed(ids) if ids == &["mon-r".to_owned()])));
  assert!(
    lock(&hub).get("mon-r").is_none(),
    "its id is free for the next run"
  );
  // Nothing of that id is left to stop.
  assert!(hub.stop_for_restart(&mut host, &clock, "mon-r").is_none());
}
