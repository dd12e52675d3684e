//! The per-monitor token bucket (CONTRACT.md §2.10 `throttledEmit`, step 2–3).
//!
//! Time is passed in by the caller as monotonic milliseconds, so tests can
//! inject a clock and native monitors use `Instant` (CONTRACT.md §4 item 14).

/// Burst size and refill interval of a token bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleConfig {
  pub burst: u32,
  pub refill_ms: u64,
}

impl Default for ThrottleConfig {
  /// `THROTTLE_BURST_SIZE` 5 and `THROTTLE_REFILL_INTERVAL_MS` 1000.
  fn default() -> Self {
    Self {
      burst: 5,
      refill_ms: 1000,
    }
  }
}

/// A token bucket that starts full at `start_ms`.
#[derive(Debug, Clone)]
pub struct TokenBucket {
  config: ThrottleConfig,
  tokens: u32,
  last_refill_ms: i64,
}

impl TokenBucket {
  pub fn new(config: ThrottleConfig, start_ms: i64) -> Self {
    Self {
      config,
      tokens: config.burst,
      last_refill_ms: start_ms,
    }
  }

  /// Refills for the time elapsed since the last refill, keeping the fractional
  /// remainder, then spends one token if there is one. A clock that went back
  /// (only possible with an injected clock) resets the refill point without refilling.
  pub fn try_take(&mut self, now_ms: i64) -> bool {
    let elapsed = now_ms - self.last_refill_ms;
    let refill_ms = self.config.refill_ms.max(1) as i64;
    if elapsed < 0 {
      self.last_refill_ms = now_ms;
    } else if elapsed >= refill_ms {
      // Checked first: the division is the costly step on a flood of dropped lines.
      let refills = elapsed / refill_ms;
      let refills_u32 = u32::try_from(refills).unwrap_or(u32::MAX);
      self.tokens = self
        .config
        .burst
        .min(self.tokens.saturating_add(refills_u32));
      self.last_refill_ms += refills * refill_ms;
    }
    if self.tokens > 0 {
      self.tokens -= 1;
      true
    } else {
      false
    }
  }

  /// The moment [`Self::try_take`] finds a token again: the refill point when tokens are
  /// left, else the next refill; `None` for a bucket that never holds one (burst 0).
  pub fn next_token_ms(&self) -> Option<i64> {
    if self.config.burst == 0 {
      None
    } else if self.tokens > 0 {
      Some(self.last_refill_ms)
    } else {
      Some(
        self
          .last_refill_ms
          .saturating_add(self.config.refill_ms.max(1) as i64),
      )
    }
  }

  /// True when the bucket holds its whole burst at `now_ms` (refills counted). Changes nothing.
  pub fn is_full(&self, now_ms: i64) -> bool {
    let elapsed = (now_ms - self.last_refill_ms).max(0);
    let refills = elapsed / self.config.refill_ms.max(1) as i64;
    i64::from(self.tokens).saturating_add(refills) >= i64::from(self.config.burst)
  }

  /// True when [`Self::try_take`] at `now_ms` would find a token. Changes nothing: a probe that
  /// is followed by no `try_take` (a read without a non-blank line) must leave the bucket as
  /// it was, refill point included when the clock went back.
  pub fn has_token(&self, now_ms: i64) -> bool {
    let elapsed = now_ms - self.last_refill_ms;
    self.tokens > 0 || (self.config.burst > 0 && elapsed >= self.config.refill_ms.max(1) as i64)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn bucket() -> TokenBucket {
    TokenBucket::new(ThrottleConfig::default(), 0)
  }

  fn take_n(b: &mut TokenBucket, n: usize, at: i64) -> usize {
    (0..n).filter(|_| b.try_take(at)).count()
  }

  #[test]
  fn full_counts_refills_and_changes_nothing() {
    let mut b = bucket();
    assert!(b.is_full(0));
    assert!(b.try_take(0));
    assert!(!b.is_full(999));
    assert!(b.is_full(1000));
    assert!(!b.is_full(999));
    assert_eq!(take_n(&mut b, 5, 0), 4);
    assert!(!b.is_full(4999));
    assert!(b.is_full(5000));
  }

  #[test]
  fn burst_of_five_then_drops() {
    let mut b = bucket();
    assert_eq!(take_n(&mut b, 7, 0), 5);
  }

  #[test]
  fn one_token_per_second() {
    // §3.10: burst at t=0, l6 dropped, l7 at 1000 delivered, l8 dropped, l9 at 2000 delivered.
    let mut b = bucket();
    assert_eq!(take_n(&mut b, 5, 0), 5);
    assert!(!b.try_take(0));
    assert!(b.try_take(1000));
    assert!(!b.try_take(1000));
    assert!(b.try_take(2000));
  }

  #[test]
  fn refill_is_capped_at_burst() {
    // §3.10: burst of 5 at t=0; at t=100000 six lines → five delivered.
    let mut b = bucket();
    assert_eq!(take_n(&mut b, 5, 0), 5);
    assert_eq!(take_n(&mut b, 6, 100_000), 5);
  }

  #[test]
  fn fractional_remainder_is_kept() {
    let mut b = bucket();
    take_n(&mut b, 5, 0);
    assert!(b.try_take(1500)); // one refill; last_refill = 1000
    assert!(!b.try_take(1999));
    assert!(b.try_take(2000));
  }

  #[test]
  fn injected_clock_going_back_resets_refill_point() {
    // §3.10 row "injected clock": 11 events in all.
    let mut b = bucket();
    let mut delivered = take_n(&mut b, 5, 0);
    delivered += take_n(&mut b, 5, 5000);
    assert!(!b.try_take(5000)); // l11 dropped
    assert!(!b.try_take(2000)); // clock set back: l12a dropped, lastRefill = 2000
    assert!(b.try_take(3000)); // l12b delivered
    delivered += 1;
    assert_eq!(delivered, 11);
  }

  #[test]
  fn has_token_does_not_spend() {
    let mut b = bucket();
    for _ in 0..10 {
      assert!(b.has_token(0));
    }
    assert_eq!(take_n(&mut b, 6, 0), 5);
    assert!(!b.has_token(0));
  }

  /// Found by fuzz/fuzz_targets/monitor_pipeline.rs: probing with a clock that went back moved
  /// the refill point, so a later token came early.
  #[test]
  fn has_token_leaves_the_refill_point_alone() {
    let mut b = bucket();
    take_n(&mut b, 5, 0);
    assert!(!b.has_token(-1000));
    assert!(!b.has_token(0));
    assert!(!b.try_take(0));
    assert!(b.has_token(1000));
    assert!(b.try_take(1000));
  }

  #[test]
  fn next_token_is_the_next_refill() {
    let mut b = bucket();
    assert_eq!(b.next_token_ms(), Some(0));
    take_n(&mut b, 5, 0);
    assert_eq!(b.next_token_ms(), Some(1000));
    assert!(!b.has_token(999));
    assert!(b.has_token(1000));
    assert!(b.try_take(1700));
    assert_eq!(b.next_token_ms(), Some(2000));
    let never = TokenBucket::new(
      ThrottleConfig {
        burst: 0,
        refill_ms: 1000,
      },
      0,
    );
    assert_eq!(never.next_token_ms(), None);
  }

  #[test]
  fn has_token_agrees_with_try_take() {
    for burst in [0, 1, 5] {
      for (spent, now) in [(0, 0), (5, 0), (5, 999), (5, 1000), (5, -1), (5, 250_000)] {
        let config = ThrottleConfig {
          burst,
          refill_ms: 1000,
        };
        let mut b = TokenBucket::new(config, 0);
        take_n(&mut b, spent, 0);
        let probe = b.has_token(now);
        assert_eq!(
          probe,
          b.clone().try_take(now),
          "burst {burst}, {spent} spent, at {now}"
        );
      }
    }
  }
}
