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

/// The clock a state machine or runner holds: the real one ([`SharedClock::default`]) unless a
/// test hands it another ([`SharedClock::new`], typically a [`ManualClock`]), so that every
/// reading of time inside it comes from one place.
#[derive(Clone)]
pub struct SharedClock(std::sync::Arc<dyn Clock + Send + Sync>);

impl SharedClock {
  pub fn new(clock: std::sync::Arc<dyn Clock + Send + Sync>) -> Self {
    Self(clock)
  }
}

impl Default for SharedClock {
  fn default() -> Self {
    Self(std::sync::Arc::new(RealClock))
  }
}

impl std::fmt::Debug for SharedClock {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("SharedClock")
      .field("wall_ms", &self.wall_ms())
      .field("mono_ms", &self.mono_ms())
      .finish()
  }
}

impl Clock for SharedClock {
  fn wall_ms(&self) -> f64 {
    self.0.wall_ms()
  }
  fn mono_ms(&self) -> i64 {
    self.0.mono_ms()
  }
}

/// A clock that moves only when told ([`ManualClock::advance`]), shareable across threads: what
/// timing tests inject.
#[derive(Debug)]
pub struct ManualClock {
  wall_ms: std::sync::atomic::AtomicU64,
  mono_ms: std::sync::atomic::AtomicI64,
}

impl ManualClock {
  /// Starts at `wall_ms` (milliseconds since the epoch) and monotonic 0.
  pub fn new(wall_ms: u64) -> std::sync::Arc<Self> {
    std::sync::Arc::new(Self {
      wall_ms: wall_ms.into(),
      mono_ms: 0.into(),
    })
  }

  /// Moves both clocks forward by `ms`.
  pub fn advance(&self, ms: u64) {
    use std::sync::atomic::Ordering::SeqCst;
    self.wall_ms.fetch_add(ms, SeqCst);
    self.mono_ms.fetch_add(ms as i64, SeqCst);
  }
}

impl Clock for ManualClock {
  fn wall_ms(&self) -> f64 {
    self.wall_ms.load(std::sync::atomic::Ordering::SeqCst) as f64
  }
  fn mono_ms(&self) -> i64 {
    self.mono_ms.load(std::sync::atomic::Ordering::SeqCst)
  }
}
