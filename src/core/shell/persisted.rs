//! A persisted shell's options (docs/persistence.md "Records"): what a later host needs to
//! register it again, kept as its task record's `options`.

use serde::{Deserialize, Serialize};

use crate::persist::TaskRecord;

/// The record's `options` of a shell. A field the record lacks takes its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ShellTaskOptions {
  /// The `cwd` the caller gave (the record's own `cwd` is the directory the keeper ran it in).
  pub cwd: String,
  pub output_dir: String,
  pub settle_ms: Option<u64>,
}

impl ShellTaskOptions {
  /// The options `record` keeps (the defaults where they cannot be read).
  pub fn of_record(record: &TaskRecord) -> Self {
    serde_json::from_value(record.options.clone()).unwrap_or_default()
  }

  /// The shell's `cwd`: the caller's, else the record's.
  pub fn cwd<'a>(&'a self, record: &'a TaskRecord) -> &'a str {
    if self.cwd.is_empty() {
      &record.cwd
    } else {
      &self.cwd
    }
  }
}
