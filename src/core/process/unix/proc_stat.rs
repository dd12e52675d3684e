//! What a process-table backend returns, shared by `proc_table.rs` and its backends
//! (`procfs.rs`, `proc_darwin.rs`, `proc_darwin_parse.rs`): a leaf, so the table uses its
//! backends and the backends use only this.

use super::tag::TASK_TAG_VAR;

/// What the tree code needs to know about one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
  pub pid: u32,
  pub ppid: u32,
  pub pgid: u32,
  /// When the process started, in a unit of the platform: clock ticks after
  /// boot on Linux (field 22 of `/proc/<pid>/stat`), microseconds since the
  /// epoch on macOS (`pbi_start_tvsec * 10^6 + pbi_start_tvusec`). Only
  /// compared with values of the same platform: equal means the same process
  /// (a pid reused later has a later start), and larger means started later.
  pub start_time: u64,
  /// The process has exited and cannot run or fork again (a zombie).
  pub zombie: bool,
}

/// The values of the `TASKSTREAM_TASK_ID=` entries among `entries`
/// (`NAME=value` byte strings); values that are not UTF-8 are skipped.
pub(super) fn tag_values<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Vec<String> {
  named_values(entries, TASK_TAG_VAR)
}

/// The values of the `<name>=` entries among `entries`; values that are not
/// UTF-8 are skipped.
pub(super) fn named_values<'a>(
  entries: impl IntoIterator<Item = &'a [u8]>,
  name: &str,
) -> Vec<String> {
  entries
    .into_iter()
    .filter_map(|entry| entry.strip_prefix(name.as_bytes())?.strip_prefix(b"="))
    .filter_map(|value| String::from_utf8(value.to_vec()).ok())
    .collect()
}
