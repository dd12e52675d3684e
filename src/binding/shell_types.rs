//! The TypeScript shapes of the background-shell API (API.md §4). These
//! structs exist for the generated `index.d.ts`; the binding reads and writes
//! the caller's own objects, so identity is kept.
#![allow(dead_code)] // Type-only structs: values are read field by field.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::task_types::task_shape;

/// `running` leads to exactly one of the other three.
#[napi(string_enum = "lowercase")]
pub enum BackgroundShellStatus {
  Running,
  Completed,
  Failed,
  Cancelled,
}

task_shape!(
  entry,
  /// A background shell entry: the caller's registration object, filled in.
  pub struct ShellTask {
    pub id: String,
    /// Equals `id`.
    pub shell_id: String,
    #[napi(ts_type = "'shell'")]
    pub kind: String,
    pub command: String,
    /// Equals `command`.
    pub description: String,
    pub cwd: String,
    #[napi(ts_type = "BackgroundShellStatus")]
    pub status: String,
    pub pid: Option<u32>,
    pub error: Option<String>,
    /// The output file.
    pub output_file: String,
    /// Equals `outputFile`; a deprecated alias.
    pub output_path: String,
    pub output_offset: f64,
    /// The terminal notification was consumed (or suppressed by `abortAll`).
    pub notified: bool,
  }
);

task_shape!(
  registration,
  /// What `BackgroundShellRegistry.register()` takes.
  pub struct ShellTaskRegistration {
    pub shell_id: String,
    pub command: String,
    pub cwd: String,
    pub output_path: String,
  }
);

/// The third argument of a shell notification callback.
#[napi(object)]
pub struct ShellNotificationMeta {
  /// `'terminal'`, or `'settled'` for the notice of `settleMs`.
  #[napi(ts_type = "'settled' | 'terminal'")]
  pub r#type: String,
  /// Terminal notifications: who ended the shell.
  #[napi(ts_type = "TaskEnd")]
  pub end: Option<Object<'static>>,
  pub shell_id: String,
  #[napi(ts_type = "BackgroundShellStatus")]
  pub status: String,
  pub exit_code: Option<i32>,
  pub todo_work_chain_id: Option<String>,
}

task_shape!(
  start,
  /// Options of `executeBackground()`.
  pub struct ExecuteBackgroundOptions {
    /// A trailing bare `&` is stripped (and reported); `&&` and `\&` are kept.
    pub command: String,
    /// Absolute.
    pub cwd: String,
    /// `<outputDir>/shell-<shellId>.output` and a `.status` sidecar beside it.
    pub output_dir: String,
    /// Default: the process-wide registry (`getDefaultBackgroundShellRegistry()`).
    #[napi(ts_type = "BackgroundShellRegistry")]
    pub registry: Option<ObjectRef<false>>,
    /// Aborting it cancels the shell. Do not pass a turn signal here.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<ObjectRef<false>>,
    /// Cap on the output file (default 1 GiB); past it bytes are counted, not written.
    pub max_output_bytes: Option<f64>,
    /// What happens at `maxOutputBytes` (API.md §6.8): `'truncate'` (the
    /// default) keeps the task running and counts the rest; `'stop'` stops the
    /// tree as a cancel does and fails the shell with `output limit of <n> bytes
    /// reached` (`end.reason: 'limit'`, `end.limit: 'output'`). Not with `persist`.
    #[napi(ts_type = "'truncate' | 'stop'")]
    pub on_output_cap: Option<String>,
    /// 1..600000 (API.md §6.8): `executeBackground` returns a promise of the
    /// handle instead, resolved when the command ends (`foreground: true`,
    /// `outputTail`, `done` settled) or after this many ms (`foreground:
    /// false`), whichever comes first: one call for "run this, and background
    /// it if it takes long".
    pub yield_ms: Option<u32>,
    /// Default `bg_` + 8 hex characters.
    pub shell_id: Option<String>,
  }
);

/// What `done` resolves with, once the output file is flushed and closed.
#[napi(object)]
pub struct BackgroundShellResult {
  pub shell_id: String,
  /// The status the registry settled the shell with (`cancelled` after
  /// `abortAll()` or `cancel()`, even once the entry was pruned or reset
  /// away). A shell `reset()` removed while running is settled by its own
  /// end instead. `error` goes with it.
  #[napi(ts_type = "BackgroundShellStatus")]
  pub status: String,
  #[napi(ts_type = "number | null")]
  pub exit_code: Option<i32>,
  /// The numeric signal that ended the shell (e.g. 15).
  #[napi(ts_type = "number | null")]
  pub signal: Option<i32>,
  pub error: Option<String>,
  pub aborted: bool,
  /// Raw bytes read from both pipes.
  pub bytes_read: f64,
  /// Bytes written to the output file, marker lines excluded.
  pub bytes_written: f64,
  /// Bytes read after the cap was reached, after binary was detected on their
  /// stream, or after a write error.
  pub bytes_not_written: f64,
  pub binary_detected: bool,
  /// Who ended the shell (API.md §6.3).
  #[napi(ts_type = "TaskEnd")]
  pub end: Object<'static>,
}

/// What `executeBackground()` returns at once.
#[napi(object, object_to_js = false)]
pub struct BackgroundShellHandle {
  pub shell_id: String,
  /// `undefined` when the spawn failed (never 0 or -1).
  pub pid: Option<u32>,
  pub output_path: String,
  pub status_path: String,
  /// The command as run (a trailing `&` stripped).
  pub command: String,
  pub stripped_trailing_amp: bool,
  #[napi(ts_type = "Promise<BackgroundShellResult>")]
  pub done: ObjectRef<false>,
  /// Lets Node exit while the shell runs (like `ChildProcess.unref()`).
  #[napi(ts_type = "() => void")]
  pub unref: ObjectRef<false>,
  /// Keeps Node alive while the shell runs again.
  #[napi(ts_type = "() => void")]
  pub r#ref: ObjectRef<false>,
  /// With `yieldMs` (API.md §6.8): `true` when the command ended within it
  /// (`done` is then settled), `false` when it went on in the background.
  pub foreground: Option<bool>,
  /// With `yieldMs`, when `foreground`: the cleaned tail of the output file
  /// (as `readTaskOutputTail`, `''` when there was none).
  pub output_tail: Option<String>,
}
