//! What a process table says of a pid (`proc_table::liveness` on both families): gone, or a
//! live process and its start time, which tells it from a later process that reused the pid.

/// What `proc_table::liveness` found at a pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
  /// No live process has the pid (it exited; a zombie counts as gone).
  Gone,
  /// A live process; its start time when it could be read (the unit is the platform's: clock
  /// ticks since boot on Linux, microseconds on macOS, 100 ns units since 1601 on Windows).
  Live { start_time: Option<u64> },
}
