//! Signal per token (API.md §6.7) end to end without processes: a native
//! monitor's [`Reader`] (pipeline + signal lane) feeding the registry through
//! the hub, with an injected clock, and the notifications the host receives.

use super::*;
use crate::monitor::notification::NotificationKind;
use crate::monitor::pipeline::{Observe, Stream};
use crate::monitor::reader::{ReadOutcome, Reader};
use crate::monitor::signal::{SignalConfig, SignalOptions};
use crate::monitor::throttle::ThrottleConfig;
use crate::sync::lock;
use std::sync::Mutex;

const RECOMMENDED: &str = "(?i)error|fail|exception|panic|listening|ready";

fn config(
  batch_ms: Option<f64>,
  max_lines: Option<f64>,
  important: Option<&str>,
  digest: bool,
) -> SignalConfig {
  SignalConfig::new(SignalOptions {
    batch_ms,
    max_batch_lines: max_lines,
    important,
    digest,
    ..Default::default()
  })
  .unwrap()
}

/// A registered native entry and its reader on the injected clock.
struct Native<'a> {
  hub: &'a MonitorHub,
  clock: &'a TestClock,
  reader: Reader,
  observing: Mutex<Observe>,
  id: &'static str,
}

impl<'a> Native<'a> {
  fn start(
    host: &mut Host<'a>,
    signal: SignalConfig,
    max_events: u64,
    settle_ms: Option<u64>,
  ) -> Self {
    let mut reg = registration("n");
    reg.mode = EntryMode::Native;
    reg.max_events = max_events;
    reg.settle_ms = settle_ms;
    host.register(reg).unwrap();
    host.log.clear();
    let hub = host.registry;
    let reader = Reader::new("n", Some(ThrottleConfig::default()), signal, max_events, 0);
    if reader.has_lane() {
      hub.registry().set_signal_lane("n");
    }
    Self {
      hub,
      clock: host.clock,
      observing: Mutex::new(hub.registry().observation("n")),
      reader,
      id: "n",
    }
  }

  fn now(&self) -> i64 {
    self.clock.mono_ms()
  }

  /// One read at the clock's time; delivered at once.
  fn read(&mut self, host: &mut Host, text: &str) -> ReadOutcome {
    let (now, wall) = (self.now(), self.clock.wall_ms());
    let out = self
      .reader
      .read(
        self.hub,
        Stream::Stdout,
        text.as_bytes(),
        &self.observing,
        now,
        wall,
      )
      .expect("open");
    self.hub.drain(host);
    out
  }

  fn timer(&mut self, host: &mut Host) -> ReadOutcome {
    let now = self.now();
    let armed = self.reader.armed_timer().unwrap_or(now);
    let out = self
      .reader
      .on_timer(self.hub, armed, now, self.clock.wall_ms());
    self.hub.drain(host);
    out
  }

  fn settle_due(&mut self, host: &mut Host) {
    self
      .reader
      .settle_due(self.hub, self.now(), self.clock.wall_ms());
    self.hub.drain(host);
  }

  /// What the process exit does: flush, close, settle from the exit.
  fn exit(&mut self, host: &mut Host, code: i32) {
    let (now, wall) = (self.now(), self.clock.wall_ms());
    self.reader.flush(self.hub, Observe::Off, now, wall);
    self.reader.close();
    let exit = ExitInfo {
      code: Some(code),
      signal: None,
    };
    self
      .hub
      .apply(|r| r.settle_from_exit("n", &exit, false, wall));
    self.hub.drain(host);
  }

  fn entry(&self) -> MonitorEntry {
    self.hub.registry().get(self.id).cloned().unwrap()
  }
}

fn lines(n: std::ops::RangeInclusive<u32>, prefix: &str) -> String {
  n.map(|i| format!("{prefix}{i}\n")).collect()
}

fn events(host: &Host) -> Vec<Notification> {
  host
    .notifications()
    .into_iter()
    .filter(|n| n.meta.kind == NotificationKind::Event)
    .cloned()
    .collect()
}

fn result_of(n: &Notification) -> &str {
  let start = n.model_text.find("<result>").expect("a result") + "<result>".len();
  let end = n.model_text.find("</result>").unwrap();
  &n.model_text[start..end]
}

#[test]
fn default_options_keep_the_token_bucket_and_its_texts() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(&mut host, SignalConfig::default(), 1000, None);
  assert!(!native.reader.has_lane());
  assert_eq!(native.read(&mut host, &lines(1..=7, "l")).timer, None);
  let events = events(&host);
  assert_eq!(events.len(), 5);
  assert_eq!(
    events[0].model_text,
    "<task-notification>\n<task-id>n</task-id>\n<kind>monitor</kind>\n<status>running</status>\n<event-count>1</event-count>\n<summary>Monitor \"watch app logs\" emitted event #1.</summary>\n<result>l1</result>\n</task-notification>"
  );
  assert_eq!(events[0].meta.lines, None);
  assert_eq!(events[0].meta.dropped_since, None);
  native.exit(&mut host, 0);
  let terminal = host.notifications().last().cloned().cloned().unwrap();
  assert!(terminal
    .model_text
    .ends_with("2 lines dropped due to throttling.</summary>\n<command>tail -f /var/log/app.log</command>\n<result>Exited with code 0</result>\n</task-notification>"));
  assert_eq!(terminal.meta.dropped_since, None);
}

#[test]
fn a_window_leaves_when_batch_ms_passed_as_one_notification() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(200.0), None, None, false),
    1000,
    None,
  );
  let out = native.read(&mut host, "a <1>\nb\n\nc\n");
  assert_eq!(out.timer, Some(200), "the window opened at 0");
  clock.advance(50);
  assert_eq!(
    native.read(&mut host, "d\n").timer,
    None,
    "one timer at a time"
  );
  assert!(
    events(&host).is_empty(),
    "nothing leaves before the window closes"
  );
  clock.advance(149);
  assert_eq!(
    native.timer(&mut host).timer,
    Some(200),
    "not due yet: re-armed"
  );
  assert!(events(&host).is_empty());
  clock.advance(1);
  native.timer(&mut host);
  let events = events(&host);
  assert_eq!(events.len(), 1);
  let n = &events[0];
  assert_eq!(
    n.model_text,
    "<task-notification>\n<task-id>n</task-id>\n<kind>monitor</kind>\n<status>running</status>\n<event-count>4</event-count>\n<summary>Monitor \"watch app logs\" emitted events #1\u{2013}4.</summary>\n<result>a &lt;1&gt;\nb\nc\nd</result>\n</task-notification>"
  );
  assert_eq!(
    n.display_text,
    "Monitor \"watch app logs\" events #1\u{2013}4 (+3 more): a <1>"
  );
  assert_eq!(
    n.meta.lines.as_deref(),
    Some(&["a <1>", "b", "c", "d"].map(String::from)[..])
  );
  assert_eq!(n.meta.event_count, 4);
  assert_eq!(n.meta.kind, NotificationKind::Event);
  assert_eq!(native.entry().event_count, 4);
}

#[test]
fn a_window_leaves_at_max_batch_lines_and_the_rest_at_stop_before_the_terminal() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(10_000.0), Some(2.0), None, false),
    1000,
    None,
  );
  native.read(&mut host, &lines(1..=5, "l"));
  let summaries: Vec<String> = events(&host)
    .iter()
    .map(|n| n.display_text.clone())
    .collect();
  assert_eq!(
    summaries,
    [
      "Monitor \"watch app logs\" events #1\u{2013}2 (+1 more): l1",
      "Monitor \"watch app logs\" events #3\u{2013}4 (+1 more): l3"
    ]
  );
  // A partial line joins the open window at stop; both ride in the terminal notification.
  native.read(&mut host, "partial");
  native.exit(&mut host, 0);
  let kinds: Vec<String> = host
    .log
    .iter()
    .filter_map(|l| match l {
      Log::Notified(n) => Some(format!("{}:{}", n.meta.kind.as_str(), n.meta.event_count)),
      Log::StatusChanged(_) => Some("status".into()),
      _ => None,
    })
    .collect();
  assert_eq!(kinds, ["event:2", "event:4", "status", "terminal:6"]);
  let terminal = host.notifications().pop().unwrap();
  assert!(
    terminal
      .model_text
      .contains("<summary>Monitor \"watch app logs\" completed. Total events: 6.</summary>"),
    "{}",
    terminal.model_text
  );
  assert!(
    terminal
      .model_text
      .contains("<result>Exited with code 0\nl5\npartial</result>"),
    "{}",
    terminal.model_text
  );
  assert_eq!(
    terminal.meta.lines.as_deref(),
    Some(&["l5", "partial"].map(String::from)[..])
  );
  // No important line among them: the display is the summary alone.
  assert_eq!(
    terminal.display_text,
    "Monitor \"watch app logs\" completed. (6 events)"
  );
}

#[test]
fn a_batch_of_one_reads_as_the_event() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(100.0), None, None, false),
    1000,
    None,
  );
  native.read(&mut host, "only\n");
  clock.advance(100);
  native.timer(&mut host);
  let n = &events(&host)[0];
  assert!(n.model_text.contains(
    "<summary>Monitor \"watch app logs\" emitted event #1.</summary>\n<result>only</result>"
  ));
  assert_eq!(n.display_text, "Monitor \"watch app logs\" event #1: only");
  assert_eq!(n.meta.lines.as_deref(), Some(&["only".to_owned()][..]));
}

#[test]
fn batches_spend_one_token_per_notification_and_drop_windows_opened_on_an_empty_bucket() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(100.0), None, None, false),
    10_000,
    None,
  );
  // 100 lines at once: five windows of 20, one token each (burst 5).
  native.read(&mut host, &lines(1..=100, "x"));
  assert_eq!(events(&host).len(), 5);
  assert_eq!(native.entry().event_count, 100);
  // The bucket is empty: the next window is dropped whole, and every line that joins it.
  native.read(&mut host, &lines(101..=130, "x"));
  clock.advance(50);
  native.read(&mut host, &lines(131..=135, "x"));
  assert_eq!(events(&host).len(), 5);
  assert_eq!(native.entry().dropped_lines, 35);
  // A second later one token came back: one more window.
  clock.advance(950);
  native.read(&mut host, "y1\ny2\n");
  clock.advance(100);
  native.timer(&mut host);
  let events = events(&host);
  assert_eq!(events.len(), 6);
  assert_eq!(
    events[5].meta.lines.as_deref().map(<[String]>::len),
    Some(2)
  );
  assert_eq!(events[5].meta.event_count, 102);
}

#[test]
fn max_events_counts_lines_and_cuts_the_window() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(&mut host, config(Some(100.0), None, None, false), 5, None);
  let out = native.read(&mut host, &lines(1..=8, "l"));
  assert!(out.settled, "the reader must stop the task now");
  let n = host.notifications();
  assert_eq!(n.len(), 2);
  assert_eq!(n[0].meta.lines.as_deref().map(<[String]>::len), Some(5));
  assert!(n[0].model_text.contains("emitted events #1\u{2013}5."));
  assert_eq!(n[1].meta.kind, NotificationKind::Terminal);
  assert!(n[1]
    .model_text
    .contains("<result>Max events reached</result>"));
  assert_eq!(native.entry().event_count, 5);
}

/// §6.7 important without `batchMs`: lines that find the bucket empty are held
/// (at most `maxBatchLines`, the rest dropped) and leave together, as one batch
/// notification, when the bucket refills: the timer armed for the refill sends
/// them with no further read.
#[test]
fn important_lines_are_held_and_leave_together_at_the_refill() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(None, None, Some(RECOMMENDED), false),
    1000,
    None,
  );
  native.read(&mut host, &lines(1..=5, "INFO "));
  assert_eq!(events(&host).len(), 5);
  let out = native.read(&mut host, "INFO dropped\nERROR request 1 failed\n");
  assert_eq!(out.timer, Some(1000), "armed for the refill");
  assert_eq!(events(&host).len(), 5, "held, not sent");
  assert_eq!(native.entry().dropped_lines, 1);
  // 25 more: 19 fit (20 held in all), 6 are dropped.
  native.read(&mut host, &lines(2..=26, "panic "));
  assert_eq!(native.entry().dropped_lines, 7);
  assert_eq!(events(&host).len(), 5);
  clock.advance(999);
  native.timer(&mut host);
  assert_eq!(events(&host).len(), 5);
  clock.advance(1);
  native.timer(&mut host);
  let events = events(&host);
  assert_eq!(events.len(), 6);
  let n = &events[5];
  let mut want = vec!["ERROR request 1 failed".to_owned()];
  want.extend((2..=20).map(|i| format!("panic {i}")));
  assert_eq!(n.meta.lines.as_deref(), Some(&want[..]));
  assert!(n.model_text.contains("emitted events #6\u{2013}25."));
  assert_eq!(result_of(n), want.join("\n"));
  assert_eq!(native.entry().event_count, 25);
  // The token went to them: the next lines find the bucket empty.
  native.read(&mut host, "INFO a\nServer listening on :3000\n");
  assert_eq!(host.notifications().len(), 6);
  assert_eq!(native.entry().dropped_lines, 8);
}

/// With `batchMs`, an important line that meets a dropped window is held; the
/// refill's token delivers a window that starts with it (dated from when it was
/// held) and takes the lines that come until it closes; its notification
/// carries the digest of what was dropped before.
#[test]
fn held_lines_open_a_window_at_the_refill() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(200.0), None, Some("ERROR"), true),
    1000,
    None,
  );
  native.read(&mut host, &lines(1..=100, "INFO "));
  assert_eq!(events(&host).len(), 5);
  clock.advance(900);
  let out = native.read(
    &mut host,
    "INFO 101\nINFO 102\nERROR request 7 failed\nINFO 103\n",
  );
  assert_eq!(out.timer, Some(1000), "the refill, for the held line");
  clock.advance(100);
  // The window is delivered at the refill; held at 900, it is due at 1100.
  assert_eq!(native.timer(&mut host).timer, Some(1100));
  assert_eq!(events(&host).len(), 5);
  clock.advance(50);
  native.read(&mut host, "INFO 104\n");
  clock.advance(50);
  native.timer(&mut host);
  let events = events(&host);
  assert_eq!(events.len(), 6);
  let n = &events[5];
  assert_eq!(
    n.meta.lines.as_deref(),
    Some(&["ERROR request 7 failed", "INFO 104"].map(String::from)[..])
  );
  assert_eq!(n.meta.dropped_since, Some(3));
  assert_eq!(
    result_of(n),
    "ERROR request 7 failed\nINFO 104\n[3 lines dropped since the last notification; first: INFO 101; last: INFO 103]"
  );
}

/// Held lines ride in the terminal notification, before the digest of what was
/// dropped since the last notification, and leave before a settled notification.
#[test]
fn held_lines_leave_before_the_terminal_and_the_settled_notification() {
  for batch in [None, Some(200.0)] {
    let (hub, clock) = setup();
    let mut host = Host::new(&hub, &clock);
    let mut native = Native::start(
      &mut host,
      config(batch, None, Some("ERROR"), true),
      1000,
      None,
    );
    // The burst: five lines, or five full windows.
    let burst = if batch.is_some() { 100 } else { 5 };
    native.read(&mut host, &lines(1..=burst, "INFO "));
    host.log.clear();
    native.read(&mut host, "INFO x\nERROR a\nERROR b\n");
    native.exit(&mut host, 1);
    let n = host.notifications();
    assert_eq!(n.len(), 1, "{batch:?}");
    assert_eq!(n[0].meta.kind, NotificationKind::Terminal);
    assert_eq!(
      n[0].meta.lines.as_deref(),
      Some(&["ERROR a", "ERROR b"].map(String::from)[..])
    );
    assert_eq!(n[0].meta.dropped_since, Some(1));
    assert_eq!(
      result_of(n[0]),
      "Exit code 1\nERROR a\nERROR b\n[1 line dropped since the last notification: INFO x]"
    );
    assert!(
      n[0].display_text.ends_with("\nERROR a\nERROR b"),
      "{}",
      n[0].display_text
    );
  }

  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(None, None, Some("ERROR"), false),
    1000,
    Some(100),
  );
  native.read(&mut host, &lines(1..=5, "INFO "));
  native.read(&mut host, "ERROR held\nINFO last\n");
  host.log.clear();
  clock.advance(100);
  native.settle_due(&mut host);
  let n = host.notifications();
  assert_eq!(n.len(), 2);
  assert_eq!(n[0].meta.kind, NotificationKind::Event);
  assert_eq!(result_of(n[0]), "ERROR held");
  assert_eq!(n[1].meta.kind, NotificationKind::Settled);
  // Nothing is left for the refill.
  clock.advance(1000);
  native.timer(&mut host);
  assert_eq!(host.notifications().len(), 2);
}

/// The timer for held lines is armed even while a later window timer is armed.
#[test]
fn an_earlier_deadline_arms_an_earlier_timer() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(5000.0), Some(20.0), Some("ERROR"), false),
    1000,
    None,
  );
  // Four full windows at 0 and a fifth left open (due at 5000), which fills
  // up at 10: the bucket is empty and the timer for 5000 stays armed.
  assert_eq!(
    native.read(&mut host, &lines(1..=90, "INFO ")).timer,
    Some(5000)
  );
  clock.advance(10);
  native.read(&mut host, &lines(91..=100, "INFO "));
  assert_eq!(events(&host).len(), 5);
  assert_eq!(native.reader.armed_timer(), Some(5000));
  // A line held at 960 needs the refill at 1000, before 5000.
  clock.advance(950);
  let out = native.read(&mut host, "ERROR late\n");
  assert_eq!(out.timer, Some(1000));
  assert_eq!(native.reader.armed_timer(), Some(1000));
  clock.advance(50);
  native.timer(&mut host);
  clock.advance(5000);
  native.timer(&mut host);
  assert!(events(&host)
    .iter()
    .any(|n| n.meta.lines.as_deref() == Some(&["ERROR late".to_owned()][..])));
}

#[test]
fn digests_go_to_the_next_event_and_to_the_terminal_notification() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(&mut host, config(None, None, None, true), 1000, None);
  native.read(&mut host, &lines(1..=5, "ok "));
  native.read(&mut host, "d1 <a>\nd2\nd3 & 'q'\n");
  assert_eq!(events(&host).len(), 5);
  clock.advance(1000);
  native.read(&mut host, "next\n");
  let n = events(&host)[5].clone();
  assert_eq!(n.meta.dropped_since, Some(3));
  assert_eq!(
    result_of(&n),
    "next\n[3 lines dropped since the last notification; first: d1 &lt;a&gt;; last: d3 &amp; &apos;q&apos;]"
  );
  assert_eq!(
    n.display_text,
    "Monitor \"watch app logs\" event #6: next\n[3 lines dropped since the last notification; first: d1 <a>; last: d3 & 'q']"
  );
  // No drop since: no digest on the next one.
  clock.advance(1000);
  native.read(&mut host, "again\n");
  assert_eq!(events(&host)[6].meta.dropped_since, None);
  // One line dropped, then the end: the terminal notification says so.
  native.read(&mut host, &format!("{}\n", "y".repeat(300)));
  native.exit(&mut host, 0);
  let terminal = host.notifications().last().cloned().cloned().unwrap();
  assert_eq!(terminal.meta.kind, NotificationKind::Terminal);
  assert_eq!(terminal.meta.dropped_since, Some(1));
  assert_eq!(
    result_of(&terminal),
    format!(
      "Exited with code 0\n[1 line dropped since the last notification: {}]",
      "y".repeat(200)
    )
  );
}

#[test]
fn a_terminal_notification_without_detail_gets_the_digest_as_its_result() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(&mut host, config(None, None, None, true), 1000, None);
  native.read(&mut host, &lines(1..=7, "l"));
  // A user-visible cancel: the abort flushes the reader (as NativeMonitor::stop_reading
  // does), then the cancelled notification, whose only result is the digest.
  hub.apply(|r| r.cancel_begin("n", crate::end::EndVia::Cancel));
  let (now, wall) = (native.now(), clock.wall_ms());
  native.reader.flush(&hub, Observe::Off, now, wall);
  native.reader.close();
  hub.apply(|r| r.cancel_finish("n", crate::end::EndVia::Cancel, wall));
  hub.drain(&mut host);
  let terminal = host.notifications().last().cloned().cloned().unwrap();
  assert_eq!(terminal.meta.kind, NotificationKind::Terminal);
  assert_eq!(terminal.meta.status, MonitorStatus::Cancelled);
  assert_eq!(terminal.meta.dropped_since, Some(2));
  assert!(terminal.model_text.ends_with(
    "<command>tail -f /var/log/app.log</command>\n<result>[2 lines dropped since the last notification; first: l6; last: l7]</result>\n</task-notification>"
  ));
}

#[test]
fn the_window_is_flushed_before_the_settled_notification_which_carries_the_digest() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(5000.0), None, None, true),
    1000,
    Some(100),
  );
  assert!(lock(&native.observing).sees_lines(), "settleMs observes");
  native.read(&mut host, &lines(1..=90, "l"));
  assert_eq!(
    events(&host).len(),
    4,
    "four full windows; the fifth is open"
  );
  clock.advance(99);
  assert!(hub.registry().lane_settles_due(native.now()).is_empty());
  assert!(hub.registry().take_due_timers(native.now()).is_empty());
  clock.advance(1);
  assert_eq!(hub.registry().lane_settles_due(native.now()), ["n"]);
  // The idle watcher's generic pass leaves lane entries to their reader.
  assert!(hub.registry().take_due_timers(native.now()).is_empty());
  native.settle_due(&mut host);
  let n = host.notifications();
  assert_eq!(n.len(), 6);
  assert_eq!(n[4].meta.kind, NotificationKind::Event);
  assert!(n[4].model_text.contains("emitted events #81\u{2013}90."));
  assert_eq!(n[5].meta.kind, NotificationKind::Settled);
  assert_eq!(n[5].meta.dropped_since, None, "nothing was dropped");
  assert_eq!(result_of(n[5]), "l90");
  // Once per quiet period.
  native.settle_due(&mut host);
  assert_eq!(host.notifications().len(), 6);
  // The bucket is empty: 30 more lines are dropped (windows opened on it send
  // nothing); the next settled notification says so.
  native.read(&mut host, &lines(1..=30, "late "));
  clock.advance(100);
  native.settle_due(&mut host);
  let n = host.notifications();
  assert_eq!(n.len(), 7);
  assert_eq!(n[6].meta.kind, NotificationKind::Settled);
  assert_eq!(n[6].meta.dropped_since, Some(30));
  assert_eq!(
    result_of(n[6]),
    "late 30\n[30 lines dropped since the last notification; first: late 1; last: late 30]"
  );
  assert_eq!(native.entry().dropped_lines, 30);
}

#[test]
fn a_stopped_reader_disarms_the_settled_notification() {
  let (hub, clock) = setup();
  let mut host = Host::new(&hub, &clock);
  let mut native = Native::start(
    &mut host,
    config(Some(200.0), None, None, false),
    1000,
    Some(100),
  );
  native.read(&mut host, "a\n");
  native.reader.close();
  clock.advance(100);
  assert_eq!(hub.registry().lane_settles_due(native.now()), ["n"]);
  native.settle_due(&mut host);
  assert!(hub.registry().lane_settles_due(native.now()).is_empty());
  assert!(host.notifications().is_empty());
}

/// A chatty server: 2000 INFO lines over 4 s with 10 ERROR lines
/// spread through them, read 50 lines at a time (`total` lines in all).
fn chatty_server(native: &mut Native, host: &mut Host, clock: &TestClock, total: u32) {
  let mut text = String::new();
  for i in 1..=total {
    if i % 200 == 100 {
      text.push_str(&format!("ERROR request {} failed\n", i / 200 + 1));
    } else {
      text.push_str(&format!("INFO GET /api/items/{i} 200 3ms\n"));
    }
    if i % 50 == 0 {
      native.read(host, &text);
      text.clear();
      clock.advance(100);
      if native.reader.has_lane() {
        native.timer(host);
      }
    }
  }
  native.exit(host, 0);
}

#[test]
fn the_chatty_server_loses_every_error_by_default_and_none_with_the_recommended_setting() {
  let errors_in = |host: &Host| {
    host
      .notifications()
      .iter()
      .map(|n| n.model_text.matches("ERROR request").count())
      .sum::<usize>()
  };
  let run = |signal: SignalConfig, total: u32| {
    let (hub, clock) = setup();
    let mut host = Host::new(&hub, &clock);
    let mut native = Native::start(&mut host, signal, 1000, None);
    chatty_server(&mut native, &mut host, &clock, total);
    let most_lines = events(&host)
      .iter()
      .map(|n| n.meta.lines.as_ref().map_or(1, Vec::len))
      .max();
    (host.notifications().len(), errors_in(&host), most_lines)
  };
  let recommended = || config(Some(200.0), None, Some(RECOMMENDED), true);
  // 4 s: the default sends 8 events (5, then at 1000, 2000 and 3000) and the
  // terminal notification; the errors held after 3000 take the refill at 4000,
  // a token the default's stream no longer meets (its last line came at 3900).
  let (default_n, default_errors, _) = run(SignalConfig::default(), 2000);
  assert_eq!((default_n, default_errors), (9, 0));
  let (n, errors, most) = run(recommended(), 2000);
  // Each error once in a result (digest lines quote INFO lines only: the errors passed).
  assert_eq!(errors, 10);
  assert_eq!(n, default_n + 1);
  assert_eq!(most, Some(20));
  // One tick more, and the default meets that token too: the same count.
  let (default_n, _, _) = run(SignalConfig::default(), 2050);
  let (n, errors, most) = run(recommended(), 2050);
  assert_eq!((n, errors, most), (default_n, 10, Some(20)));
  assert_eq!(n, 10);
}
