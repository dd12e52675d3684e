//! The settle judgement of API.md §6.2: after output activity, once nothing
//! moved for `settle_ms`, fire once; the next activity re-arms it. A task that
//! never moved never fires.

/// The shortest and longest `settleMs`.
pub const MIN_SETTLE_MS: u64 = 100;
pub const MAX_SETTLE_MS: u64 = 3_600_000;

#[derive(Debug, Clone)]
pub struct SettleTimer {
  settle_ms: u64,
  last_activity_ms: i64,
  armed: bool,
}

impl SettleTimer {
  pub fn new(settle_ms: u64) -> Self {
    Self {
      settle_ms,
      last_activity_ms: 0,
      armed: false,
    }
  }

  pub fn settle_ms(&self) -> u64 {
    self.settle_ms
  }

  /// Something moved at `now_ms` (a byte; for a terminal, a visible change).
  pub fn on_activity(&mut self, now_ms: i64) {
    self.last_activity_ms = now_ms;
    self.armed = true;
  }

  /// When it fires, if armed.
  pub fn deadline(&self) -> Option<i64> {
    self
      .armed
      .then(|| self.last_activity_ms.saturating_add(self.settle_ms as i64))
  }

  /// True once per quiet period: when armed and `settle_ms` passed since the
  /// last activity. Disarms until the next activity.
  pub fn take_fired(&mut self, now_ms: i64) -> bool {
    if self.deadline().is_some_and(|d| d <= now_ms) {
      self.armed = false;
      true
    } else {
      false
    }
  }

  /// No more notifications (the task settled).
  pub fn disarm(&mut self) {
    self.armed = false;
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn fires_once_per_quiet_period_and_rearms_on_activity() {
    let mut timer = SettleTimer::new(100);
    assert_eq!(timer.deadline(), None, "nothing moved yet");
    assert!(!timer.take_fired(1000));
    timer.on_activity(10);
    timer.on_activity(60);
    assert_eq!(timer.deadline(), Some(160));
    assert!(!timer.take_fired(159));
    assert!(timer.take_fired(160));
    assert!(!timer.take_fired(500), "once");
    timer.on_activity(600);
    assert!(timer.take_fired(700));
    timer.on_activity(800);
    timer.disarm();
    assert!(!timer.take_fired(10_000));
  }
}
