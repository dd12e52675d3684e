//! Who ended a task (API.md §6.3): a structured record on every settled
//! monitor and shell, in terminal notifications' meta, in `done`'s result and
//! in the shell's status sidecar, so a killed task never reads like one that
//! finished by itself.

use serde::{Deserialize, Serialize};

/// `EndReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
  Exited,
  Signaled,
  IdleTimeout,
  MaxEvents,
  Cancelled,
  SpawnFailed,
  IoError,
  HostExit,
  /// `timeoutMs` (API.md §6.8): the wall-clock deadline passed.
  Timeout,
  /// A limit of the task stopped it (API.md §6.8); [`TaskEnd::limit`] says which.
  Limit,
  /// `restart(id)` (API.md §6.8) stopped this run to start the next one.
  Restarted,
}

/// Which limit ended a task (`end.limit`, API.md §6.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndLimit {
  /// `maxOutputBytes` with `onOutputCap: 'stop'`.
  Output,
  /// `limits.memoryBytes`: the kernel (or the Job Object) stopped an allocation past it.
  Memory,
}

/// Who ended the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndBy {
  Process,
  Caller,
  Limit,
  Host,
}

/// Which caller action ended it (for [`EndBy::Caller`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EndVia {
  Cancel,
  AbortAll,
  Reset,
  Owner,
  Signal,
  /// `restart(id)` (API.md §6.8).
  Restart,
}

/// `TaskEnd`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskEnd {
  pub reason: EndReason,
  pub by: EndBy,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub via: Option<EndVia>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub exit_code: Option<i32>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub signal: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub detail: Option<String>,
  /// For `reason: 'limit'`: which one.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub limit: Option<EndLimit>,
}

impl TaskEnd {
  fn new(reason: EndReason, by: EndBy) -> Self {
    Self {
      reason,
      by,
      via: None,
      exit_code: None,
      signal: None,
      detail: None,
      limit: None,
    }
  }

  /// The process exited by itself (`code` when it had one).
  pub fn exited(code: Option<i32>) -> Self {
    Self {
      exit_code: code,
      ..Self::new(EndReason::Exited, EndBy::Process)
    }
  }

  /// The process ended itself with an error the caller reported (fed `fail()`).
  pub fn failed(detail: &str) -> Self {
    Self {
      detail: Some(detail.to_owned()),
      ..Self::new(EndReason::Exited, EndBy::Process)
    }
  }

  /// The process died of a signal nobody here sent (`SIGSEGV`, an outside `kill`).
  pub fn signaled(signal: &str) -> Self {
    Self {
      signal: Some(signal.to_owned()),
      ..Self::new(EndReason::Signaled, EndBy::Process)
    }
  }

  /// A caller stopped it; a `restart(id)` is the reason `restarted`.
  pub fn cancelled(via: EndVia) -> Self {
    let reason = match via {
      EndVia::Restart => EndReason::Restarted,
      _ => EndReason::Cancelled,
    };
    Self {
      via: Some(via),
      ..Self::new(reason, EndBy::Caller)
    }
  }

  pub fn idle_timeout() -> Self {
    Self::new(EndReason::IdleTimeout, EndBy::Limit)
  }

  pub fn max_events() -> Self {
    Self::new(EndReason::MaxEvents, EndBy::Limit)
  }

  pub fn spawn_failed(detail: &str) -> Self {
    Self {
      detail: Some(detail.to_owned()),
      ..Self::new(EndReason::SpawnFailed, EndBy::Process)
    }
  }

  pub fn io_error(detail: &str) -> Self {
    Self {
      detail: Some(detail.to_owned()),
      ..Self::new(EndReason::IoError, EndBy::Process)
    }
  }

  /// `timeoutMs` passed (API.md §6.8); `detail` says after how long.
  pub fn timeout(timeout_ms: u64) -> Self {
    Self {
      detail: Some(format!("Timed out after {timeout_ms} ms")),
      ..Self::new(EndReason::Timeout, EndBy::Limit)
    }
  }

  /// `maxOutputBytes` with `onOutputCap: 'stop'` (API.md §6.8): the output reached the cap.
  pub fn output_limit(max_output_bytes: u64) -> Self {
    Self {
      detail: Some(format!("Output limit of {max_output_bytes} bytes reached")),
      limit: Some(EndLimit::Output),
      ..Self::new(EndReason::Limit, EndBy::Limit)
    }
  }

  /// `limits.memoryBytes` (API.md §6.8): the tree hit its memory limit.
  pub fn memory_limit(memory_bytes: u64) -> Self {
    Self {
      detail: Some(format!("Memory limit of {memory_bytes} bytes reached")),
      limit: Some(EndLimit::Memory),
      ..Self::new(EndReason::Limit, EndBy::Limit)
    }
  }

  /// The host (Node) exited while the task ran; its exit hook stopped it.
  pub fn host_exit() -> Self {
    Self::new(EndReason::HostExit, EndBy::Host)
  }

  /// The JavaScript names of the enum fields.
  pub fn reason_str(&self) -> &'static str {
    match self.reason {
      EndReason::Exited => "exited",
      EndReason::Signaled => "signaled",
      EndReason::IdleTimeout => "idle-timeout",
      EndReason::MaxEvents => "max-events",
      EndReason::Cancelled => "cancelled",
      EndReason::SpawnFailed => "spawn-failed",
      EndReason::IoError => "io-error",
      EndReason::HostExit => "host-exit",
      EndReason::Timeout => "timeout",
      EndReason::Limit => "limit",
      EndReason::Restarted => "restarted",
    }
  }

  /// `end.limit`'s JavaScript name.
  pub fn limit_str(&self) -> Option<&'static str> {
    self.limit.map(|limit| match limit {
      EndLimit::Output => "output",
      EndLimit::Memory => "memory",
    })
  }

  pub fn by_str(&self) -> &'static str {
    match self.by {
      EndBy::Process => "process",
      EndBy::Caller => "caller",
      EndBy::Limit => "limit",
      EndBy::Host => "host",
    }
  }

  pub fn via_str(&self) -> Option<&'static str> {
    self.via.map(|via| match via {
      EndVia::Cancel => "cancel",
      EndVia::AbortAll => "abortAll",
      EndVia::Reset => "reset",
      EndVia::Owner => "owner",
      EndVia::Signal => "signal",
      EndVia::Restart => "restart",
    })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_restart_is_a_caller_end_with_its_own_reason() {
    let end = TaskEnd::cancelled(EndVia::Restart);
    assert_eq!(
      serde_json::to_string(&end).unwrap(),
      r#"{"reason":"restarted","by":"caller","via":"restart"}"#
    );
    assert_eq!(
      (end.reason_str(), end.via_str()),
      ("restarted", Some("restart"))
    );
  }

  #[test]
  fn serialises_with_the_api_names_and_omits_absent_fields() {
    let end = TaskEnd::cancelled(EndVia::AbortAll);
    assert_eq!(
      serde_json::to_string(&end).unwrap(),
      r#"{"reason":"cancelled","by":"caller","via":"abortAll"}"#
    );
    let end = TaskEnd::exited(Some(3));
    assert_eq!(
      serde_json::to_string(&end).unwrap(),
      r#"{"reason":"exited","by":"process","exitCode":3}"#
    );
    assert_eq!(
      serde_json::to_string(&TaskEnd::idle_timeout()).unwrap(),
      r#"{"reason":"idle-timeout","by":"limit"}"#
    );
    assert_eq!(
      serde_json::to_string(&TaskEnd::host_exit()).unwrap(),
      r#"{"reason":"host-exit","by":"host"}"#
    );
    assert_eq!(
      serde_json::to_string(&TaskEnd::output_limit(64)).unwrap(),
      r#"{"reason":"limit","by":"limit","detail":"Output limit of 64 bytes reached","limit":"output"}"#
    );
    assert_eq!(
      serde_json::to_string(&TaskEnd::timeout(1500)).unwrap(),
      r#"{"reason":"timeout","by":"limit","detail":"Timed out after 1500 ms"}"#
    );
  }

  #[test]
  fn string_forms_match_serde() {
    for end in [
      TaskEnd::exited(None),
      TaskEnd::signaled("SIGKILL"),
      TaskEnd::idle_timeout(),
      TaskEnd::max_events(),
      TaskEnd::cancelled(EndVia::Owner),
      TaskEnd::spawn_failed("spawn x ENOENT"),
      TaskEnd::io_error("EIO"),
      TaskEnd::host_exit(),
      TaskEnd::timeout(500),
      TaskEnd::output_limit(10),
    ] {
      let value = serde_json::to_value(&end).unwrap();
      assert_eq!(value["reason"], end.reason_str());
      assert_eq!(value["by"], end.by_str());
      assert_eq!(value.get("via").and_then(|v| v.as_str()), end.via_str());
    }
  }
}
