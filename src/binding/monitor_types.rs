//! The TypeScript shapes of the monitor API (API.md §3). These structs exist
#![allow(dead_code)] // Type-only structs: they exist to generate index.d.ts; values are read field by field.
//! for the generated `index.d.ts`; the binding reads and writes the caller's
//! own objects, so identity is kept (CONTRACT.md §1.2 "Identity").

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::task_types::task_shape;

/// `running` leads to exactly one of the other three.
#[napi(string_enum = "lowercase")]
pub enum MonitorStatus {
  Running,
  Completed,
  Failed,
  Cancelled,
}

task_shape!(
  entry,
  /// A monitor entry. `register()` returns the caller's own object, `start()` one
  /// object per monitor; `get()` returns that same object, kept up to date. Its
  /// `end` is also set on entries `reset()` removed.
  pub struct MonitorTask {
    pub id: String,
    /// Equals `id`; a deprecated alias kept for callers.
    pub monitor_id: String,
    #[napi(ts_type = "'monitor'")]
    pub kind: String,
    /// Native mode: the normalised `spawnCommand`.
    pub command: String,
    pub description: String,
    #[napi(ts_type = "MonitorStatus")]
    pub status: String,
    /// Callers may write it (fed mode).
    pub pid: Option<u32>,
    pub tool_use_id: Option<String>,
    pub owner_agent_id: Option<String>,
    /// Accepted events.
    pub event_count: f64,
    /// Lines lost to throttling; callers may write it (fed mode).
    pub dropped_lines: f64,
    pub last_event_time: f64,
    /// Also `Max events reached` and `Idle timeout`.
    pub error: Option<String>,
    pub max_events: f64,
    pub idle_timeout_ms: f64,
    /// Reserved, never written; `''` for native monitors.
    pub output_file: String,
    /// Always 0 for monitors.
    pub output_offset: f64,
    /// The terminal notification was emitted (or suppressed by a silent cancel).
    pub notified: bool,
    /// Native mode: bytes read from both pipes (0 in fed mode).
    pub bytes_read: f64,
    /// Native mode: lines produced by the splitters before trimming, sanitising or throttling.
    pub lines_seen: f64,
    /// Native mode: bytes of over-long lines that no event carries: what follows
    /// the 4096-unit cut, up to the line's newline (0 in fed mode).
    pub truncated_bytes: f64,
  }
);

task_shape!(
  registration,
  /// What the fed-mode `register()` takes: the TypeScript registration shape.
  pub struct MonitorRegistration {
    pub monitor_id: String,
    pub command: String,
    pub description: String,
    pub event_count: f64,
    pub last_event_time: f64,
    pub max_events: f64,
    pub idle_timeout_ms: f64,
    pub dropped_lines: f64,
    pub output_file: String,
    pub tool_use_id: Option<String>,
    pub owner_agent_id: Option<String>,
  }
);

/// The third argument of a monitor notification callback.
#[napi(object)]
pub struct MonitorNotificationMeta {
  /// Which notification this is: an event, a settled notice (`settleMs`) or the terminal one.
  #[napi(ts_type = "'event' | 'settled' | 'terminal'")]
  pub r#type: String,
  /// Terminal notifications: who ended the task.
  #[napi(ts_type = "TaskEnd")]
  pub end: Option<Object<'static>>,
  pub monitor_id: String,
  #[napi(ts_type = "MonitorStatus")]
  pub status: String,
  pub event_count: f64,
  pub tool_use_id: Option<String>,
  pub owner_agent_id: Option<String>,
  pub todo_work_chain_id: Option<String>,
  /// A batch (`batchMs`): the window's lines, each cut as an event line
  /// (2000 UTF-16 units + `...[truncated]`), not escaped.
  pub lines: Option<Vec<String>>,
  /// `digest`: lines dropped since the previous notification of this monitor
  /// (the `<result>` then ends with the digest line).
  pub dropped_since: Option<f64>,
}

/// The token bucket applied to native monitor lines.
#[napi(object)]
pub struct ThrottleOptions {
  /// Tokens at start and at most (default 5).
  pub burst: u32,
  /// One token is added per this many milliseconds (default 1000).
  pub refill_ms: u32,
}

#[napi(object, object_to_js = false)]
pub struct MonitorRegistryOptions {
  /// Running monitors allowed at once (default 16).
  pub max_concurrent: Option<u32>,
  /// Terminal entries kept (default 128).
  pub max_retained_terminal: Option<u32>,
  /// Native line throttle; `false` turns it off.
  #[napi(ts_type = "ThrottleOptions | false")]
  pub throttle: Option<ThrottleOptions>,
  /// Variables removed from native children's environment
  /// (default `['QWEN_SERVER_TOKEN', 'QWEN_DAEMON_TOKEN']`).
  pub remove_env: Option<Vec<String>>,
}

task_shape!(
  start,
  /// Options of `start()` (API.md §3).
  pub struct MonitorStartOptions {
    pub command: String,
    /// The label; defaults to the command.
    pub description: Option<String>,
    /// 1..10000, default 1000; out of range is a RangeError, never clamped.
    pub max_events: Option<u32>,
    /// 1..600000, default 300000; stops after this long with no output byte at all.
    pub idle_timeout_ms: Option<u32>,
    /// Absolute; default `process.cwd()`.
    pub cwd: Option<String>,
    pub tool_use_id: Option<String>,
    pub owner_agent_id: Option<String>,
    pub todo_work_chain_id: Option<String>,
    /// Default `mon_` + 16 hex characters.
    pub monitor_id: Option<String>,
    /// Hold Node's event loop while the monitor runs (default false).
    pub keep_alive: Option<bool>,
    /// 10..10000: accepted lines leave in windows: the first accepted line opens
    /// one; it closes after this many ms, at `maxBatchLines` lines, or when the
    /// task stops (before a settled notification; at the end it rides in the terminal one), and its lines
    /// leave as one notification (`meta.lines`, `eventCount` counting each line,
    /// summary `emitted events #a–b.`). The throttle then spends one token per
    /// window, taken when it opens; a window opened on an empty bucket is
    /// dropped whole. Default: one notification per line.
    pub batch_ms: Option<u32>,
    /// 1..1000, default 20: a window closes when it holds this many lines.
    pub max_batch_lines: Option<u32>,
    /// A regex (Rust `regex` syntax, linear time), tested on the sanitised line
    /// before the throttle: a matching line is never dropped by the throttle and
    /// costs no extra notification. With a token (or an open delivered window) it
    /// goes out as any line; when the bucket is empty it is held (at most
    /// `maxBatchLines`, one more is dropped and counted) and the bucket's next
    /// token is spent on the held lines the moment it refills: one notification
    /// (`meta.lines`), or with `batchMs` a window that starts with them. Held
    /// lines leave before a settled notification and ride in the terminal one.
    /// An invalid one is a SyntaxError.
    pub important: Option<String>,
    /// When lines were dropped since the previous notification, the next one
    /// (event, settled or terminal) carries `meta.droppedSince` and its
    /// `<result>` ends with `[N lines dropped since the last notification;
    /// first: …; last: …]`; with `'templates'`, `[N lines not shown: a× <template>;
    /// b× <template>; +k more]` (lines differing only in numbers, ids or hashes
    /// share a template).
    #[napi(ts_type = "boolean | 'templates'")]
    pub digest: Option<String>,
    /// 0..1000, with `batchMs`: a window carries at most this many ordinary lines
    /// (the rest are dropped and counted); an ordinary line opens a window only
    /// when the bucket is full, so its tokens are kept for important lines.
    pub sample_lines: Option<u32>,
    /// 0..100, with `important` and `sampleLines`: up to this many lines before an
    /// important line travel with it (`meta.lines`), back to the last line that
    /// repeats the stream's recent templates or a blank line.
    pub context_before: Option<u32>,
    /// 0..100, with `important` and `sampleLines`: up to this many lines after an
    /// important line join it, until a line repeats the stream's recent
    /// templates, a blank line, or its window closes.
    pub context_after: Option<u32>,
  }
);

/// `{ notify?: boolean }`; `notify` defaults to true.
#[napi(object)]
pub struct MonitorCancelOptions {
  pub notify: Option<bool>,
}
