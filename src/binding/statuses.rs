//! The string enums the package exports as values (`MonitorStatus`, `BackgroundShellStatus`,
//! `WaitReason`: objects from name to string, and a string union type each in
//! `index.d.ts`). Every other shape of the API is TypeScript only, in `header.d.ts`.
#![allow(dead_code)]

use napi_derive::napi;

/// `running` leads to exactly one of the other three.
#[napi(string_enum = "lowercase")]
pub enum MonitorStatus {
  Running,
  Completed,
  Failed,
  Cancelled,
}

/// `running` leads to exactly one of the other three.
#[napi(string_enum = "lowercase")]
pub enum BackgroundShellStatus {
  Running,
  Completed,
  Failed,
  Cancelled,
}

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
