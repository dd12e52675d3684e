//! Monitors: the registry state machine, its notification texts, and the
//! native line pipeline pieces (throttle, signal lane); the line splitter is
//! `text::LineSplitter`.

pub mod entry;
mod event_line;
pub mod hub;
#[cfg(any(unix, windows))]
pub mod native;
pub mod notification;
pub mod persisted;
pub mod pipeline;
mod plan;
pub mod reader;
pub mod registry;
pub mod signal;
pub mod throttle;

#[cfg(test)]
mod tests;

pub use entry::{EntryMode, MonitorEntry, MonitorStatus, Registration};
pub use notification::{Notification, NotificationMeta, Route};
pub use plan::{plan_monitor, CommandRefusal, MonitorPlan};
pub use registry::{
  AbortKind, Effect, ExitInfo, MonitorRegistry, RegisterError, RegistryConfig, RunCounters,
};
