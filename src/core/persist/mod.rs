//! Tasks that outlive their host, on a lease (docs/persistence.md).
//!
//! A persisted task is not the host's child: the host starts a **keeper**
//! (`launch/`; the keeper's own life is `core::keeper`), a detached process in a session of its own that spawns the
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
//! The same on every platform; what differs (the lock, identity, the state
//! directory's protection, how a keeper is started and detaches) is in the
//! files named, each with a Unix and a Windows half.

pub mod end_view;
pub mod follow;
pub mod identity;
pub mod launch;
pub mod lease;
pub mod link;
pub mod lock;
pub mod records;
pub mod renewer;
pub mod scan;
pub mod state_dir;
pub mod take_over;

pub use end_view::EndView;
pub use follow::{FollowSink, Follower};
pub use identity::{prove, Identity};
pub use launch::{
  addon_path, keeper_beside, launch_keeper, native_keeper_program, KeeperProgram, KeeperStarted,
  KEEPER_FILE, KEEPER_TAG_VAR,
};
pub use lease::{last_renewal, renew, renew_existing};
pub use link::KeeperLink;
pub use lock::{AdoptionLock, TryLock};
pub use records::{
  request_cancel, CancelRequest, CursorRecord, EndRecord, KeeperConfig, ProcessIdentity,
  ReadRecord, TaskFiles, TaskKind, TaskProcess, TaskRecord, RECORD_VERSION,
};
pub use scan::{forget, scan, Found};
pub use state_dir::ensure_state_dir;
pub use take_over::{take_over, TakeOver};

#[cfg(test)]
mod tests;
