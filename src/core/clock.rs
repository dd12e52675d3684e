//! The clocks every task runs on: wall time as JavaScript's `Date.now()`, and
//! monotonic milliseconds for deadlines (idle, waits, settle, throttle).
//! Pieces that must be tested with an injected clock take a [`Clock`].

use std::sync::LazyLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Wall-clock milliseconds since the epoch and monotonic milliseconds.
pub trait Clock {
  fn wall_ms(&self) -> f64;
  fn mono_ms(&self) -> i64;
}

static MONO_BASE: LazyLock<Instant> = LazyLock::new(Instant::now);

/// `Date.now()`: integral milliseconds since the epoch.
pub fn wall_ms() -> f64 {
  SystemTime::now()
    .duration_since(UNIX_EPOCH)
    .map(|d| d.as_millis() as f64)
    .unwrap_or(0.0)
}

/// Monotonic milliseconds since the addon was loaded.
pub fn mono_ms() -> i64 {
  MONO_BASE.elapsed().as_millis() as i64
}

/// The real clocks.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealClock;

impl Clock for RealClock {
  fn wall_ms(&self) -> f64 {
    wall_ms()
  }
  fn mono_ms(&self) -> i64 {
    mono_ms()
  }
}
