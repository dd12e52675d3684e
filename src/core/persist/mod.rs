//! Tasks that outlive their host, on a lease (docs/persistence.md).
//!
//! A persisted task is not the host's child: the host starts a **keeper**
//! (launch.rs; the keeper's own life is `core::keeper`), a detached process in a session of its own that spawns the
//! task with the standard containment, writes its output file, records how
//! it ended, and ends its whole tree when no host renewed the state
//! directory's lease (lease.rs) in time. Hosts follow the task through files
//! in the state directory (records.rs), own it through a lock (lock.rs), and
//! tell a recorded process from a reused pid by its start time and tag
//! (identity.rs). scan.rs sorts what a state directory holds. The host's
//! side: renewer.rs renews the leases of the state directories this process
//! uses, follow.rs follows a task's files on reactor timers, link.rs is a
//! host's handle on one keeper (cancel requests, cursor, keeper liveness),
//! end_view.rs reads a recorded end as the registries settle it.
//!
//! Unix (Linux and macOS) only. On Windows every entry point fails with an
//! `Unsupported` error ([`UNSUPPORTED_MESSAGE`]).

#[cfg(unix)]
pub mod end_view;
#[cfg(unix)]
pub mod follow;
pub mod identity;
pub mod launch;
pub mod lease;
#[cfg(unix)]
pub mod link;
pub mod lock;
pub mod records;
#[cfg(unix)]
pub mod renewer;
pub mod scan;
pub mod state_dir;

#[cfg(unix)]
pub use end_view::EndView;
#[cfg(unix)]
pub use follow::{FollowSink, Follower};
pub use identity::{prove, Identity};
pub use launch::{
  addon_path, keeper_beside, launch_keeper, native_keeper_program, KeeperProgram, KeeperStarted,
  KEEPER_FILE, KEEPER_TAG_VAR,
};
pub use lease::{last_renewal, renew, renew_existing};
#[cfg(unix)]
pub use link::KeeperLink;
pub use lock::{AdoptionLock, TryLock};
pub use records::{
  request_cancel, CancelRequest, CursorRecord, EndRecord, KeeperConfig, ProcessIdentity,
  ReadRecord, TaskFiles, TaskKind, TaskProcess, TaskRecord, RECORD_VERSION,
};
pub use scan::{forget, scan, Found};
pub use state_dir::ensure_state_dir;

/// Why `persist` fails on Windows.
pub const UNSUPPORTED_MESSAGE: &str = "persist is not supported on Windows: a task's Job Object \
  ends with its last handle, and no holder process that could keep it open after the host exits \
  is shipped yet";

/// The `Unsupported` error of every entry point on platforms without persistence.
#[allow(dead_code)]
pub(crate) fn unsupported() -> std::io::Error {
  std::io::Error::new(std::io::ErrorKind::Unsupported, UNSUPPORTED_MESSAGE)
}

#[cfg(all(test, unix))]
mod tests;
