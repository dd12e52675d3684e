//! The TypeScript shapes shared by monitors and shells for API.md §6: waits
//! and who ended a task. Type-only structs for the generated `index.d.ts`;
//! values are built field by field.
#![allow(dead_code)]

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// A `#[napi(object)]` shape of `index.d.ts` whose last fields are the ones
/// every task kind shares, written once: `entry` appends an entry object's
/// (its times, its end, its controller, `ports`, `usage`), `registration` a
/// `register()` argument's, `start` the
/// options both `start()` and `executeBackground()` take.
macro_rules! task_shape {
  (entry, $(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
    $(#[$meta])*
    #[napi(object, object_to_js = false)]
    pub struct $name {
      $($fields)*
      pub exit_code: Option<i32>,
      pub start_time: f64,
      pub end_time: Option<f64>,
      #[napi(ts_type = "AbortController")]
      pub abort_controller: ObjectRef<false>,
      pub todo_work_chain_id: Option<String>,
      /// Who ended it (API.md §6.3), once settled.
      #[napi(ts_type = "TaskEnd")]
      pub end: Option<Object<'static>>,
      /// The TCP ports the running task's tree listens on (API.md §6.8), sorted; a
      /// live, non-enumerable accessor read on each access; `undefined` once the
      /// task ended, for an entry fed from JavaScript, and where the ports cannot
      /// be read (macOS and Windows for now).
      pub ports: Option<Vec<u32>>,
      /// What the tree used (API.md §6.8), for a task started with `limits`: a non-enumerable
      /// accessor, live while the task runs and final once it ended; `undefined` without limits.
      #[napi(ts_type = "TaskUsage")]
      pub usage: Option<Object<'static>>,
    }
  };
  (registration, $(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
    $(#[$meta])*
    #[napi(object, object_to_js = false)]
    pub struct $name {
      $($fields)*
      #[napi(ts_type = "'running'")]
      pub status: String,
      pub start_time: f64,
      #[napi(ts_type = "AbortController")]
      pub abort_controller: ObjectRef<false>,
      pub pid: Option<u32>,
      pub todo_work_chain_id: Option<String>,
    }
  };
  (start, $(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
    $(#[$meta])*
    #[napi(object, object_to_js = false)]
    pub struct $name {
      $($fields)*
      /// Added to the inherited environment, last (may override anything).
      pub env: Option<std::collections::HashMap<String, String>>,
      /// 100..3600000: after output, once no byte arrived for this long, one
      /// notification with `meta.type === 'settled'` (re-armed by the next byte).
      pub settle_ms: Option<u32>,
      /// 1..2147483647 (API.md §6.8): a wall-clock deadline. When it passes, the
      /// task is stopped as a cancel stops it and fails with a "timed out after
      /// <ms> ms" error (`end.reason: 'timeout'`, `end.by: 'limit'`). Not with
      /// `persist`.
      pub timeout_ms: Option<u32>,
      /// Bounds on the whole tree (API.md §6.8): memory, CPU share, process count. Not with
      /// `persist`.
      #[napi(ts_type = "TaskLimits")]
      pub limits: Option<Object<'static>>,
      /// Run the command under a pseudo-terminal (API.md §6.5): `screen()`,
      /// `write()` and `resize()` then work, and `settleMs` is judged on the screen.
      #[napi(ts_type = "TerminalOptions | boolean")]
      pub terminal: Option<bool>,
      /// Run the task under a detached keeper that outlives this host on a lease
      /// (docs/persistence.md). Not with `terminal`.
      #[napi(ts_type = "PersistOptions")]
      pub persist: Option<ObjectRef<false>>,
    }
  };
}
pub(crate) use task_shape;

/// Why a `waitFor` resolved.
#[napi(string_enum = "lowercase")]
pub enum WaitReason {
  Match,
  Quiet,
  Exit,
  Timeout,
  Aborted,
  /// The tree listens on the port (API.md §6.8).
  Port,
}

/// Options of `waitFor` (API.md §6.1). The first condition met wins; with
/// none, only the settle (`exit`) ends the wait.
#[napi(object, object_to_js = false)]
pub struct WaitForOptions {
  /// A Rust `regex` (linear time), tested on every sanitised output line from
  /// the call on, lines the throttle drops included.
  pub r#match: Option<String>,
  /// 1..86400000: no output byte for this long, counted from the call.
  pub quiet_ms: Option<u32>,
  /// 1..86400000.
  pub timeout_ms: Option<u32>,
  /// API.md §6.8 (Linux for now): `true` resolves with `port` when the task's
  /// tree listens on any TCP port, a number (1..65535) when it listens on
  /// that one; the ports are read every 25 ms while the wait is pending.
  #[napi(ts_type = "boolean | number")]
  pub port: Option<Unknown<'static>>,
  /// Aborting resolves the wait with `aborted`.
  #[napi(ts_type = "AbortSignal")]
  pub signal: Option<Object<'static>>,
}

/// What a `waitFor` promise resolves with.
#[napi(object, object_from_js = false)]
pub struct WaitResult {
  #[napi(ts_type = "WaitReason")]
  pub reason: String,
  /// The matching line, for `match`.
  pub line: Option<String>,
  /// The port, for `port`.
  pub port: Option<u32>,
  #[napi(ts_type = "'running' | 'completed' | 'failed' | 'cancelled'")]
  pub status: String,
  pub elapsed_ms: f64,
}

/// Who ended a task (API.md §6.3).
#[napi(object, object_from_js = false)]
pub struct TaskEnd {
  #[napi(
    ts_type = "'exited' | 'signaled' | 'idle-timeout' | 'max-events' | 'cancelled' | 'spawn-failed' | 'io-error' | 'host-exit' | 'timeout' | 'limit' | 'restarted'"
  )]
  pub reason: String,
  #[napi(ts_type = "'process' | 'caller' | 'limit' | 'host'")]
  pub by: String,
  /// For `by: 'caller'`.
  #[napi(ts_type = "'cancel' | 'abortAll' | 'reset' | 'owner' | 'signal' | 'restart'")]
  pub via: Option<String>,
  pub exit_code: Option<i32>,
  /// `'SIGTERM'`, …
  pub signal: Option<String>,
  /// The OS error text, …
  pub detail: Option<String>,
  /// For `reason: 'limit'` (API.md §6.8): which limit.
  #[napi(ts_type = "'output' | 'memory'")]
  pub limit: Option<String>,
}

/// `limits` (API.md §6.8): bounds on the whole tree of a task, enforced by its cgroup (Linux:
/// v2 where the host's cgroup delegates the controllers, else the v1 hierarchies) or its Job
/// Object (Windows). Limits the host cannot enforce make `start()`/`executeBackground()` throw
/// an Error saying why, before anything starts; macOS refuses every limit. Not with `persist`.
#[napi(object, object_to_js = false)]
pub struct TaskLimits {
  /// 1048576..2^53−1: the tree's memory, swap off. An allocation past it gets the task killed:
  /// it fails with `end.reason: 'limit'`, `end.limit: 'memory'`.
  pub memory_bytes: Option<f64>,
  /// 1..10000: the tree's CPU time as a percentage of one core (100: a whole core).
  pub cpu_percent: Option<u32>,
  /// 1..4194304: how many processes the tree may have at once; a fork past it fails.
  pub max_processes: Option<u32>,
}

/// `entry.usage` (API.md §6.8): what a task with `limits` used, from its cgroup or Job.
#[napi(object, object_from_js = false)]
pub struct TaskUsage {
  /// CPU time of the whole tree, user and system, in ms.
  pub cpu_ms: Option<f64>,
  /// The tree's peak memory in bytes (Linux: `memory.peak` on cgroup v2 ≥ 5.19, or
  /// `memory.max_usage_in_bytes` on v1; Windows: the Job's peak).
  pub peak_memory_bytes: Option<f64>,
}

/// `terminal: true | { cols, rows }` (API.md §6.5): the command gets a
/// pseudo-terminal as stdin, stdout and stderr.
#[napi(object, object_to_js = false)]
pub struct TerminalOptions {
  /// 1..1000, default 120.
  pub cols: Option<u32>,
  /// 1..1000, default 40.
  pub rows: Option<u32>,
}

/// 0-based.
#[napi(object, object_from_js = false)]
pub struct CursorPosition {
  pub row: u32,
  pub col: u32,
}

/// A terminal task's screen (API.md §6.5).
#[napi(object, object_from_js = false)]
pub struct ScreenSnapshot {
  /// The visible rows joined by `\n`, each row's trailing spaces and the
  /// trailing empty rows trimmed.
  pub text: String,
  pub cursor: CursorPosition,
  pub cols: u32,
  pub rows: u32,
  /// The last title the program set (OSC 0 or 2).
  pub title: Option<String>,
  /// Epoch ms of the last visible change.
  pub changed_at: f64,
}

/// `persist` (docs/persistence.md): the task runs under a detached keeper
/// and outlives this host while a host attached to `stateDir` renews its lease.
#[napi(object, object_to_js = false)]
pub struct PersistOptions {
  /// Absolute; created 0700. A symlink, a directory owned by another user or
  /// one with group/other permission bits is refused.
  pub state_dir: String,
  /// 1000..604800000, default 600000: with no host renewing the stateDir's
  /// lease for this long, the keeper ends the task's whole tree.
  pub lease_ms: Option<f64>,
}

/// `recover({ stateDir })`.
#[napi(object, object_to_js = false)]
pub struct RecoverOptions {
  /// The `persist.stateDir` the tasks were started with.
  pub state_dir: String,
}

/// A persisted task `recover()` could not take over: its keeper is gone, or
/// a process with its pid is not the same process. Never signalled.
#[napi(object, object_from_js = false)]
pub struct RecoverLost {
  pub id: String,
  pub command: String,
  pub reason: String,
}

/// A state file `recover()` could not trust (renamed `<name>.corrupt`).
#[napi(object, object_from_js = false)]
pub struct RecoverCorrupt {
  pub file: String,
  pub error: String,
}
