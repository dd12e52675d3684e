//! Locking that survives a poisoned mutex: a panic on one thread (caught at
//! the napi boundary) must not wedge every later call.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking the data even if a panicking thread poisoned it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
  mutex
    .lock()
    .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How an object reaches itself from the timers it arms on a reactor.
///
/// A pending timer that held a `Weak<T>` would keep the object's whole
/// allocation (its contents are dropped, its memory is not) until the timer
/// fires, which for a `waitFor` timeout is long after the task ended: a
/// background shell with a two-minute wait kept about 3 KB for two minutes.
/// The object owns this small cell instead, and its timers hold the cell
/// weakly, so a pending timer keeps only the cell's few bytes.
pub struct SelfRef<T>(std::sync::Arc<std::sync::Weak<T>>);

/// What a timer holds: [`TimerRef::upgrade`] reaches the object while it lives.
pub struct TimerRef<T>(std::sync::Weak<std::sync::Weak<T>>);

impl<T> SelfRef<T> {
  /// From the `Weak` that `Arc::new_cyclic` hands to the object being built.
  pub fn new(me: &std::sync::Weak<T>) -> Self {
    Self(std::sync::Arc::new(me.clone()))
  }

  pub fn for_timer(&self) -> TimerRef<T> {
    TimerRef(std::sync::Arc::downgrade(&self.0))
  }
}

impl<T> TimerRef<T> {
  pub fn upgrade(&self) -> Option<std::sync::Arc<T>> {
    self.0.upgrade()?.upgrade()
  }
}

#[cfg(test)]
mod tests {
  use std::sync::Arc;

  use super::*;

  struct Task {
    me: SelfRef<Task>,
  }

  #[test]
  fn pending_timers_hold_no_reference_to_the_object() {
    let task = Arc::new_cyclic(|me| Task {
      me: SelfRef::new(me),
    });
    let timers: Vec<TimerRef<Task>> = (0..3).map(|_| task.me.for_timer()).collect();
    // Only the object's own cell refers to it weakly: its allocation is freed
    // with it, whatever timers are still pending.
    assert_eq!(Arc::weak_count(&task), 1);
    assert!(timers.iter().all(|t| t.upgrade().is_some()));
    drop(task);
    assert!(timers.iter().all(|t| t.upgrade().is_none()));
  }
}
