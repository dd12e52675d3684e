//! The process trees each Node environment (the main thread or a Worker) started: its cleanup
//! hook (`lifecycle.rs`) SIGKILLs them, so `worker.terminate()` or a Worker that ends takes its
//! tasks along while the rest of the process goes on.

#[cfg(any(unix, windows))]
use std::cell::RefCell;

#[cfg(any(unix, windows))]
thread_local! {
  /// The process trees started from this thread's Node environment (each
  /// environment has a thread of its own).
  static ENVIRONMENT_TASKS: RefCell<crate::core::process::OwnedTrees> = RefCell::default();
}

/// Records a tree started from the current environment.
#[cfg(any(unix, windows))]
pub(crate) fn adopt(group: &crate::core::process::ProcessGroup) {
  ENVIRONMENT_TASKS.with(|tasks| tasks.borrow_mut().adopt(group));
}

/// The environment is being torn down: SIGKILL every tree it started.
pub(crate) fn kill_all() {
  #[cfg(any(unix, windows))]
  ENVIRONMENT_TASKS.with(|tasks| tasks.borrow_mut().kill_all());
}
