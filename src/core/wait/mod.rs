//! Bounded waits (API.md §6.1) and the settle timer (§6.2), as pure state
//! with an injected monotonic clock (milliseconds).
//!
//! A task holds one [`WaitSet`]. Its reader side calls [`WaitSet::on_line`]
//! with every sanitised non-blank line (throttled-out ones included) and
//! [`WaitSet::on_activity`] for every read; a timer calls
//! [`WaitSet::take_due`] at [`WaitSet::next_deadline`]; the settle calls
//! [`WaitSet::finish`]. Each call returns the waits it resolved, each exactly
//! once: a resolved wait leaves the set.

mod settle;

pub use settle::{Settle, SettlePoll, MAX_SETTLE_MS, MIN_SETTLE_MS};

use std::sync::Arc;

/// The matcher of `match` (a Rust `regex`: linear time), compiled by [`compile_match`].
pub use regex::Regex;

use crate::task::TaskStatus;
use crate::text::PlainImportant;

/// The longest `quietMs` and `timeoutMs`: one day.
pub const MAX_WAIT_MS: u64 = 86_400_000;

/// Compiles a wait's `match` pattern; the error is the parser's message.
pub fn compile_match(pattern: &str) -> Result<Regex, String> {
  Regex::new(pattern).map_err(|error| error.to_string())
}

/// What a wait waits for; with no condition, only the settle ends it.
#[derive(Debug, Clone, Default)]
pub struct WaitSpec {
  pub matcher: Option<Regex>,
  pub quiet_ms: Option<u64>,
  pub timeout_ms: Option<u64>,
  /// `port` (API.md §6.8): the tree listens on a TCP port (any, or this one).
  pub port: Option<PortWanted>,
}

/// `waitFor`'s `port`: `true` (any port) or a port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortWanted {
  Any,
  Port(u16),
}

/// How often the ports of a task with a pending `port` wait are read.
pub const PORT_POLL_MS: i64 = 25;

/// `WaitReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
  Match,
  Quiet,
  Exit,
  Timeout,
  Aborted,
  /// The tree listens on the port (API.md §6.8).
  Port,
}

impl WaitReason {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::Match => "match",
      Self::Quiet => "quiet",
      Self::Exit => "exit",
      Self::Timeout => "timeout",
      Self::Aborted => "aborted",
      Self::Port => "port",
    }
  }
}

/// `WaitResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitOutcome {
  pub reason: WaitReason,
  /// The matching line, for [`WaitReason::Match`].
  pub line: Option<String>,
  /// The port, for [`WaitReason::Port`].
  pub port: Option<u16>,
  pub status: TaskStatus,
  pub elapsed_ms: f64,
}

/// A wait resolved, by its id.
pub type Resolved = (u64, WaitOutcome);

#[derive(Debug, Clone)]
struct Pending {
  id: u64,
  spec: WaitSpec,
  started_ms: i64,
}

impl Pending {
  fn outcome(&self, reason: WaitReason, status: TaskStatus, now_ms: i64) -> WaitOutcome {
    WaitOutcome {
      reason,
      line: None,
      port: None,
      status,
      elapsed_ms: now_ms.saturating_sub(self.started_ms).max(0) as f64,
    }
  }

  /// When `quietMs` is met: no activity since the later of the call and the last read.
  fn quiet_deadline(&self, last_activity_ms: Option<i64>) -> Option<i64> {
    let from = last_activity_ms.map_or(self.started_ms, |a| a.max(self.started_ms));
    self.spec.quiet_ms.map(|q| from.saturating_add(q as i64))
  }

  fn timeout_deadline(&self) -> Option<i64> {
    self
      .spec
      .timeout_ms
      .map(|t| self.started_ms.saturating_add(t as i64))
  }
}

/// The pending waits of one task.
#[derive(Debug, Clone, Default)]
pub struct WaitSet {
  pending: Vec<Pending>,
  last_activity_ms: Option<i64>,
  /// [`Self::line_matcher`]: rebuilt when a wait with a pattern leaves, and by
  /// [`Self::refresh_line_matcher`] after one was added.
  line_matcher: Option<Arc<PlainImportant>>,
  /// When the ports were last read for the `port` waits.
  ports_read_ms: Option<i64>,
  /// A wait with a pattern was added since [`Self::line_matcher`] was built.
  line_matcher_stale: bool,
}

impl WaitSet {
  pub fn is_empty(&self) -> bool {
    self.pending.is_empty()
  }

  pub fn len(&self) -> usize {
    self.pending.len()
  }

  /// Adds a wait started at `now_ms`.
  pub fn add(&mut self, id: u64, spec: WaitSpec, now_ms: i64) {
    let has_matcher = spec.matcher.is_some();
    self.pending.push(Pending {
      id,
      spec,
      started_ms: now_ms,
    });
    if has_matcher {
      // Built later (`refresh_line_matcher`), so that a new wait sees lines at once: until
      // then the reader builds every line.
      self.line_matcher = None;
      self.line_matcher_stale = true;
    }
  }

  /// Whether some wait needs lines (the reader must not only count them all).
  pub fn wants_lines(&self) -> bool {
    self.pending.iter().any(|p| p.spec.matcher.is_some())
  }

  /// Every pending `match` pattern at once, for runs of plain lines (see
  /// [`PlainImportant`]): a reader may leave unbuilt the lines of a run in which it finds
  /// nothing, since no pending pattern matches any of them. `None` when no wait has a
  /// pattern, when the patterns cannot be searched that way, or when a wait was added since
  /// the last [`Self::refresh_line_matcher`] (every line must then be built).
  pub fn line_matcher(&self) -> Option<Arc<PlainImportant>> {
    self.line_matcher.clone()
  }

  /// Builds [`Self::line_matcher`] if a wait with a pattern was added since it was built (a
  /// regex compilation: call it once the new wait is in place; until then the reader must build
  /// every line).
  pub fn refresh_line_matcher(&mut self) {
    if self.line_matcher_stale {
      self.rebuild_line_matcher();
    }
  }

  fn rebuild_line_matcher(&mut self) {
    self.line_matcher_stale = false;
    let patterns: Vec<String> = self
      .pending
      .iter()
      .filter_map(|p| p.spec.matcher.as_ref())
      .map(|m| format!("(?:{})", m.as_str()))
      .collect();
    self.line_matcher = if patterns.is_empty() {
      None
    } else {
      PlainImportant::new(&patterns.join("|")).map(Arc::new)
    };
  }

  /// Whether some wait waits for a port (the owner must read the ports at
  /// [`Self::next_deadline`] and call [`Self::on_ports`]).
  pub fn wants_ports(&self) -> bool {
    self.pending.iter().any(|p| p.spec.port.is_some())
  }

  /// When the ports should be read next, with `port` waits pending: at once for a new wait,
  /// then every [`PORT_POLL_MS`].
  fn next_port_read(&self) -> Option<i64> {
    let first = self
      .pending
      .iter()
      .filter(|p| p.spec.port.is_some())
      .map(|p| p.started_ms)
      .min()?;
    Some(match self.ports_read_ms {
      Some(read) if read >= first => read.saturating_add(PORT_POLL_MS),
      _ => first,
    })
  }

  /// Whether the ports are due to be read at `now_ms`.
  pub fn ports_due(&self, now_ms: i64) -> bool {
    self.next_port_read().is_some_and(|at| at <= now_ms)
  }

  /// The ports the tree listens on, read at `now_ms`: every `port` wait they satisfy resolves
  /// with its port (for `true`, the lowest).
  pub fn on_ports(&mut self, ports: &[u16], now_ms: i64) -> Vec<Resolved> {
    self.ports_read_ms = Some(now_ms);
    let found = |p: &Pending| match p.spec.port {
      Some(PortWanted::Any) => ports.first().copied(),
      Some(PortWanted::Port(n)) => ports.contains(&n).then_some(n),
      None => None,
    };
    self.resolve_where(
      |p| found(p).is_some(),
      |p| WaitOutcome {
        port: found(p),
        ..p.outcome(WaitReason::Port, TaskStatus::Running, now_ms)
      },
    )
  }

  /// Output arrived: quiet periods start again.
  pub fn on_activity(&mut self, now_ms: i64) {
    self.last_activity_ms = Some(now_ms);
  }

  /// A sanitised line: every wait whose regex matches it resolves with it.
  pub fn on_line(&mut self, line: &str, now_ms: i64) -> Vec<Resolved> {
    self.resolve_where(
      |p| p.spec.matcher.as_ref().is_some_and(|m| m.is_match(line)),
      |p| WaitOutcome {
        line: Some(line.to_owned()),
        ..p.outcome(WaitReason::Match, TaskStatus::Running, now_ms)
      },
    )
  }

  /// Waits whose quiet period or timeout has passed at `now_ms`. When both
  /// passed, the earlier deadline names the reason (a tie is `quiet`).
  pub fn take_due(&mut self, now_ms: i64) -> Vec<Resolved> {
    let last = self.last_activity_ms;
    let due = |p: &Pending| -> Option<WaitReason> {
      let quiet = p.quiet_deadline(last).filter(|d| *d <= now_ms);
      let timeout = p.timeout_deadline().filter(|d| *d <= now_ms);
      match (quiet, timeout) {
        (Some(q), Some(t)) if t < q => Some(WaitReason::Timeout),
        (Some(_), _) => Some(WaitReason::Quiet),
        (None, Some(_)) => Some(WaitReason::Timeout),
        (None, None) => None,
      }
    };
    self.resolve_where(
      |p| due(p).is_some(),
      |p| {
        let reason = due(p).unwrap_or(WaitReason::Timeout);
        p.outcome(reason, TaskStatus::Running, now_ms)
      },
    )
  }

  /// The earliest quiet or timeout deadline of any pending wait, or the next read of the
  /// ports for a `port` wait.
  pub fn next_deadline(&self) -> Option<i64> {
    self
      .pending
      .iter()
      .flat_map(|p| {
        [
          p.quiet_deadline(self.last_activity_ms),
          p.timeout_deadline(),
        ]
      })
      .flatten()
      .chain(self.next_port_read())
      .min()
  }

  /// The task settled with `status`: every wait resolves with `exit`.
  pub fn finish(&mut self, status: TaskStatus, now_ms: i64) -> Vec<Resolved> {
    self.resolve_where(|_| true, |p| p.outcome(WaitReason::Exit, status, now_ms))
  }

  /// The wait's signal fired: it resolves `aborted`, if it is still pending.
  pub fn abort(&mut self, id: u64, status: TaskStatus, now_ms: i64) -> Option<WaitOutcome> {
    let index = self.pending.iter().position(|p| p.id == id)?;
    let pending = self.pending.remove(index);
    if pending.spec.matcher.is_some() {
      self.rebuild_line_matcher();
    }
    Some(pending.outcome(WaitReason::Aborted, status, now_ms))
  }

  fn resolve_where(
    &mut self,
    hit: impl Fn(&Pending) -> bool,
    outcome: impl Fn(&Pending) -> WaitOutcome,
  ) -> Vec<Resolved> {
    if !self.pending.iter().any(&hit) {
      return Vec::new();
    }
    let mut resolved = Vec::new();
    let mut patterns_changed = false;
    self.pending.retain(|p| {
      if hit(p) {
        resolved.push((p.id, outcome(p)));
        patterns_changed |= p.spec.matcher.is_some();
        false
      } else {
        true
      }
    });
    if patterns_changed {
      self.rebuild_line_matcher();
    }
    resolved
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn spec(matcher: Option<&str>, quiet: Option<u64>, timeout: Option<u64>) -> WaitSpec {
    WaitSpec {
      matcher: matcher.map(|m| Regex::new(m).unwrap()),
      quiet_ms: quiet,
      timeout_ms: timeout,
      port: None,
    }
  }

  #[test]
  fn port_waits_poll_and_resolve_with_their_port() {
    let mut set = WaitSet::default();
    set.add(
      1,
      WaitSpec {
        port: Some(PortWanted::Any),
        ..spec(None, None, Some(5000))
      },
      100,
    );
    set.add(
      2,
      WaitSpec {
        port: Some(PortWanted::Port(8080)),
        ..spec(None, None, None)
      },
      100,
    );
    assert!(set.wants_ports());
    // Read at once, then every PORT_POLL_MS.
    assert_eq!(set.next_deadline(), Some(100));
    assert!(set.ports_due(100));
    assert!(set.on_ports(&[], 100).is_empty());
    assert!(!set.ports_due(100 + PORT_POLL_MS - 1));
    assert_eq!(set.next_deadline(), Some(100 + PORT_POLL_MS));
    let hit = set.on_ports(&[3000, 9229], 130);
    assert_eq!(hit.len(), 1);
    assert_eq!(
      (hit[0].0, hit[0].1.reason, hit[0].1.port),
      (1, WaitReason::Port, Some(3000))
    );
    assert_eq!(hit[0].1.elapsed_ms, 30.0);
    assert!(
      set.on_ports(&[3000], 160).is_empty(),
      "8080 is not listening"
    );
    let hit = set.on_ports(&[3000, 8080], 190);
    assert_eq!((hit[0].0, hit[0].1.port), (2, Some(8080)));
    assert!(!set.wants_ports());
    assert_eq!(set.next_deadline(), None);
    // A wait added later is read at once.
    set.add(
      3,
      WaitSpec {
        port: Some(PortWanted::Any),
        ..spec(None, None, None)
      },
      500,
    );
    assert!(set.ports_due(500));
  }

  #[test]
  fn the_line_matcher_follows_the_pending_patterns() {
    let found = |set: &WaitSet, lines: &str| {
      set
        .line_matcher()
        .map(|m| m.first_candidate(lines.as_bytes()))
    };
    let mut set = WaitSet::default();
    set.add(1, spec(None, Some(10), None), 0);
    set.refresh_line_matcher();
    assert!(set.line_matcher().is_none(), "no pattern, no matcher");
    set.add(2, spec(Some("ready"), None, None), 0);
    assert!(
      set.line_matcher().is_none(),
      "not built until refreshed: build every line"
    );
    set.refresh_line_matcher();
    assert_eq!(found(&set, "a\nb\nnow ready\n"), Some(Some(4)));
    set.add(3, spec(Some("^listening$"), None, None), 0);
    set.refresh_line_matcher();
    let matcher = set.line_matcher().unwrap();
    assert!(
      matcher.needs_tight_lines(),
      "an anchored pattern among them"
    );
    assert_eq!(found(&set, "x\nlistening\nready\n"), Some(Some(2)));
    assert_eq!(found(&set, "x\nnot listening\n"), Some(None));
    // A wait leaving rebuilds it from the others at once.
    assert_eq!(set.on_line("ready", 5).len(), 1);
    assert_eq!(found(&set, "ready\nlistening\n"), Some(Some(6)));
    assert!(set.abort(3, TaskStatus::Running, 6).is_some());
    assert!(set.line_matcher().is_none(), "no pattern left");
  }

  #[test]
  fn a_match_resolves_only_the_waits_it_matches_once() {
    let mut set = WaitSet::default();
    set.add(1, spec(Some("ready"), None, None), 0);
    set.add(2, spec(Some("^listening on \\d+$"), None, None), 5);
    assert!(set.wants_lines());
    assert!(set.on_line("starting", 10).is_empty());
    let hit = set.on_line("server ready", 20);
    assert_eq!(hit.len(), 1);
    assert_eq!(hit[0].0, 1);
    assert_eq!(hit[0].1.reason, WaitReason::Match);
    assert_eq!(hit[0].1.line.as_deref(), Some("server ready"));
    assert_eq!(hit[0].1.elapsed_ms, 20.0);
    assert!(set.on_line("server ready", 21).is_empty(), "resolved once");
    let hit = set.on_line("listening on 8080", 30);
    assert_eq!((hit[0].0, hit[0].1.elapsed_ms), (2, 25.0));
    assert!(set.is_empty() && !set.wants_lines());
  }

  #[test]
  fn quiet_counts_from_the_call_and_restarts_with_output() {
    let mut set = WaitSet::default();
    set.on_activity(0);
    set.add(1, spec(None, Some(100), None), 50);
    assert_eq!(
      set.next_deadline(),
      Some(150),
      "from the call, not the older read"
    );
    set.on_activity(120);
    assert!(set.take_due(150).is_empty());
    assert_eq!(set.next_deadline(), Some(220));
    let due = set.take_due(220);
    assert_eq!(due[0].1.reason, WaitReason::Quiet);
    assert_eq!(due[0].1.status, TaskStatus::Running);
    assert_eq!(due[0].1.elapsed_ms, 170.0);
    assert_eq!(set.next_deadline(), None);
  }

  #[test]
  fn timeout_and_quiet_race_by_deadline() {
    let mut set = WaitSet::default();
    set.add(1, spec(None, Some(100), Some(80)), 0);
    set.add(2, spec(None, Some(50), Some(80)), 0);
    set.add(3, spec(Some("x"), None, Some(1000)), 0);
    let due = set.take_due(200);
    assert_eq!(due.len(), 2);
    assert_eq!((due[0].0, due[0].1.reason), (1, WaitReason::Timeout));
    assert_eq!((due[1].0, due[1].1.reason), (2, WaitReason::Quiet));
    assert_eq!(set.next_deadline(), Some(1000));
  }

  #[test]
  fn finish_resolves_every_wait_with_exit_and_the_status() {
    let mut set = WaitSet::default();
    set.add(1, spec(Some("x"), None, None), 0);
    set.add(2, WaitSpec::default(), 10);
    let done = set.finish(TaskStatus::Failed, 30);
    assert_eq!(done.len(), 2);
    assert!(done
      .iter()
      .all(|(_, o)| o.reason == WaitReason::Exit && o.status == TaskStatus::Failed));
    assert_eq!(done[1].1.elapsed_ms, 20.0);
    assert!(set.finish(TaskStatus::Failed, 40).is_empty());
  }

  #[test]
  fn abort_removes_one_wait() {
    let mut set = WaitSet::default();
    set.add(1, WaitSpec::default(), 0);
    set.add(2, WaitSpec::default(), 0);
    let outcome = set.abort(1, TaskStatus::Running, 7).unwrap();
    assert_eq!(outcome.reason, WaitReason::Aborted);
    assert!(set.abort(1, TaskStatus::Running, 8).is_none());
    assert_eq!(set.len(), 1);
  }
}
