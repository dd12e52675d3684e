//! Locking that survives a poisoned mutex: a panic on one thread (caught at
//! the napi boundary) must not wedge every later call.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking the data even if a panicking thread poisoned it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
  mutex
    .lock()
    .unwrap_or_else(|poisoned| poisoned.into_inner())
}
