//! A task's recorded end (`<id>.end.json`, written by its keeper) as the
//! host settles it.

use crate::end::{EndBy, EndReason, EndVia, TaskEnd};

/// What a host needs of an end record.
#[derive(Clone, Debug, PartialEq)]
pub struct EndView {
  pub end_time: f64,
  pub end: TaskEnd,
  pub exit_code: Option<i32>,
  pub output_bytes: u64,
  pub dropped_bytes: u64,
}

fn reason(s: &str) -> Option<EndReason> {
  Some(match s {
    "exited" => EndReason::Exited,
    "signaled" => EndReason::Signaled,
    "idle-timeout" => EndReason::IdleTimeout,
    "max-events" => EndReason::MaxEvents,
    "cancelled" => EndReason::Cancelled,
    "spawn-failed" => EndReason::SpawnFailed,
    "io-error" => EndReason::IoError,
    "host-exit" => EndReason::HostExit,
    "timeout" => EndReason::Timeout,
    "limit" => EndReason::Limit,
    "restarted" => EndReason::Restarted,
    _ => return None,
  })
}

fn by(s: &str) -> Option<EndBy> {
  Some(match s {
    "process" => EndBy::Process,
    "caller" => EndBy::Caller,
    "limit" => EndBy::Limit,
    "host" => EndBy::Host,
    _ => return None,
  })
}

/// `cancel`, `abortAll`, `reset`, `owner`, `signal`.
pub fn via(s: &str) -> Option<EndVia> {
  Some(match s {
    "cancel" => EndVia::Cancel,
    "abortAll" => EndVia::AbortAll,
    "reset" => EndVia::Reset,
    "owner" => EndVia::Owner,
    "signal" => EndVia::Signal,
    "restart" => EndVia::Restart,
    _ => return None,
  })
}

/// The JavaScript name of a via (the content of a `<id>.cancel` request).
pub fn via_name(via: EndVia) -> &'static str {
  TaskEnd::cancelled(via).via_str().unwrap_or("cancel")
}

impl EndView {
  /// From a checked end record.
  pub fn from_record(r: &crate::persist::EndRecord) -> Self {
    Self {
      end_time: r.end_time as f64,
      end: r.end.clone(),
      exit_code: r.exit_code.or(r.end.exit_code),
      output_bytes: r.output_bytes,
      dropped_bytes: r.dropped_bytes,
    }
  }

  /// From the record's JSON (already checked by its reader).
  pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
    let e = v.get("end").ok_or("no end")?;
    let s = |o: &serde_json::Value, k: &str| o.get(k).and_then(|x| x.as_str()).map(str::to_owned);
    let end = TaskEnd {
      reason: s(e, "reason")
        .as_deref()
        .and_then(reason)
        .ok_or("bad end.reason")?,
      by: s(e, "by").as_deref().and_then(by).ok_or("bad end.by")?,
      via: s(e, "via").as_deref().and_then(via),
      exit_code: e.get("exitCode").and_then(|x| x.as_i64()).map(|n| n as i32),
      signal: s(e, "signal"),
      detail: s(e, "detail"),
      limit: e
        .get("limit")
        .and_then(|x| serde_json::from_value(x.clone()).ok()),
    };
    Ok(Self {
      end_time: v
        .get("endTime")
        .and_then(|x| x.as_f64())
        .ok_or("no endTime")?,
      exit_code: v
        .get("exitCode")
        .and_then(|x| x.as_i64())
        .map(|n| n as i32)
        .or(end.exit_code),
      end,
      output_bytes: v.get("outputBytes").and_then(|x| x.as_u64()).unwrap_or(0),
      dropped_bytes: v.get("droppedBytes").and_then(|x| x.as_u64()).unwrap_or(0),
    })
  }
}
