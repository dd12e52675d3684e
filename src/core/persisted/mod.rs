//! The host side of persisted tasks (docs/persistence.md): what a host does
//! for a task a keeper runs — renew the stateDir's lease, follow the task's
//! files, ask the keeper to stop it. The keeper, the state files and their
//! records live in `core::persist`.

pub mod end_view;
pub mod follow;
pub mod renewer;

pub use end_view::EndView;
pub use follow::{FollowSink, Follower};
pub mod link;
pub mod program;

pub use link::KeeperLink;

#[cfg(test)]
mod tests;
