//! When the keeper's loop acts, decided from the times it reads off its clock (the real one in
//! a keeper; plain numbers in the tests below): how long a monitor's pipes are drained after
//! its leader exited, how often a stopped tree is killed again, when a stop gives up waiting,
//! and when the lease has expired.

/// How long a monitor's pipes are drained after its leader exited (ms).
pub const DRAIN_MS: i64 = 1000;
/// While a stop is under way, the tree is killed again this often (ms).
pub const KILL_AGAIN_MS: i64 = 1000;
/// While the tree is ended after the task, it is killed again this often (ms).
pub const END_TREE_KILL_AGAIN_MS: i64 = 500;
/// A stopped task that does not finish within this is recorded anyway (ms).
pub const STOP_DEADLINE_MS: i64 = 10_000;

/// The moments the loop has seen, in its clock's monotonic milliseconds.
#[derive(Debug, Default)]
pub struct Pace {
  exited_at: Option<i64>,
  stopped_at: Option<i64>,
  killed_at: Option<i64>,
  /// How often a stop kills again (set with the stop).
  kill_every: i64,
}

/// What a loop turn under a stop does.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterStop {
  /// Keep waiting for the tree to finish.
  Wait,
  /// Kill the tree again (its last kill was [`KILL_AGAIN_MS`] ago).
  KillAgain,
  /// The stop has waited [`STOP_DEADLINE_MS`]: record the end anyway.
  GiveUp,
}

impl Pace {
  /// The task's leader exited at `now`.
  pub fn exited(&mut self, now: i64) {
    self.exited_at = Some(now);
  }

  /// Whether a monitor has finished: its leader exited and its pipes closed, or were drained
  /// for [`DRAIN_MS`].
  pub fn monitor_finished(&self, now: i64, pipes_open: u8) -> bool {
    self
      .exited_at
      .is_some_and(|at| pipes_open == 0 || now - at >= DRAIN_MS)
  }

  /// A stop began at `now` (and killed the tree).
  pub fn stopped(&mut self, now: i64) {
    self.stopped_every(now, KILL_AGAIN_MS);
  }

  /// [`Self::stopped`], killing again every `kill_every` ms (the end of a tree after its task:
  /// [`END_TREE_KILL_AGAIN_MS`]).
  pub fn stopped_every(&mut self, now: i64, kill_every: i64) {
    self.stopped_at = Some(now);
    self.killed_at = Some(now);
    self.kill_every = kill_every;
  }

  /// A turn of the loop at `now` while a stop is under way.
  pub fn after_stop(&mut self, now: i64) -> AfterStop {
    if self
      .stopped_at
      .is_some_and(|at| now - at >= STOP_DEADLINE_MS)
    {
      return AfterStop::GiveUp;
    }
    if self.killed_at.is_some_and(|at| now - at >= self.kill_every) {
      self.killed_at = Some(now);
      return AfterStop::KillAgain;
    }
    AfterStop::Wait
  }
}

/// Whether a lease last seen renewed at `seen_ms` (wall-clock ms; the latest of the keeper's
/// start and the lease file's renewals) has expired at `now_ms`: more than `lease_ms` passed.
pub fn lease_expired(now_ms: f64, seen_ms: f64, lease_ms: u64) -> bool {
  now_ms - seen_ms > lease_ms as f64
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_monitor_finishes_when_its_pipes_close_or_a_drain_after_its_exit() {
    let mut pace = Pace::default();
    assert!(!pace.monitor_finished(0, 0), "not before its leader exited");
    pace.exited(5_000);
    assert!(pace.monitor_finished(5_000, 0));
    assert!(!pace.monitor_finished(5_999, 1));
    assert!(pace.monitor_finished(6_000, 1));
    assert!(pace.monitor_finished(6_000, 2));
  }

  #[test]
  fn a_stop_kills_again_every_second_and_gives_up_after_ten() {
    let mut pace = Pace::default();
    pace.stopped(100);
    assert_eq!(pace.after_stop(100), AfterStop::Wait);
    assert_eq!(pace.after_stop(1_099), AfterStop::Wait);
    assert_eq!(pace.after_stop(1_100), AfterStop::KillAgain);
    // The next kill is a second after this one, not after the stop.
    assert_eq!(pace.after_stop(1_500), AfterStop::Wait);
    assert_eq!(pace.after_stop(2_099), AfterStop::Wait);
    assert_eq!(pace.after_stop(2_150), AfterStop::KillAgain);
    assert_eq!(pace.after_stop(10_099), AfterStop::KillAgain);
    assert_eq!(pace.after_stop(10_100), AfterStop::GiveUp);
  }

  #[test]
  fn the_end_of_a_tree_kills_again_every_half_second_and_gives_up_after_ten() {
    let mut pace = Pace::default();
    pace.stopped_every(0, END_TREE_KILL_AGAIN_MS);
    assert_eq!(pace.after_stop(499), AfterStop::Wait);
    assert_eq!(pace.after_stop(500), AfterStop::KillAgain);
    assert_eq!(pace.after_stop(999), AfterStop::Wait);
    assert_eq!(pace.after_stop(1_000), AfterStop::KillAgain);
    assert_eq!(pace.after_stop(9_999), AfterStop::KillAgain);
    assert_eq!(pace.after_stop(10_000), AfterStop::GiveUp);
  }

  #[test]
  fn a_lease_expires_once_more_than_its_length_passed_since_it_was_seen() {
    assert!(!lease_expired(10_000.0, 5_000.0, 5_000));
    assert!(lease_expired(10_001.0, 5_000.0, 5_000));
    // A renewal stamped ahead of the clock (a file system's coarse or skewed times) never
    // expires it early.
    assert!(!lease_expired(10_000.0, 12_000.0, 5_000));
  }
}
