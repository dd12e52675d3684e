//! The default child environment (CONTRACT.md §2.10 "Default child
//! environment", §2.15 item 6).

use std::ffi::{OsStr, OsString};

use super::tag::TASK_TAG_VAR;

/// Secrets of the host CLI that a child must not see (CONTRACT.md §2.10).
pub const DEFAULT_REMOVE_ENV: [&str; 2] = ["QWEN_SERVER_TOKEN", "QWEN_DAEMON_TOKEN"];

/// `PAGER=cat` on Unix and `PAGER=` (empty) on Windows (CONTRACT.md §2.10).
const DEFAULT_PAGER: &str = if cfg!(windows) { "" } else { "cat" };

/// How [`child_env`] turns the host environment into a child's.
#[derive(Clone, Debug)]
pub struct EnvOptions {
  /// Variables to drop (the registry's `removeEnv`).
  pub remove: Vec<String>,
  /// `dumb` for monitors, `xterm-256color` for background shells.
  pub term: &'static str,
  /// The caller's `env`; it may override anything but the task tag.
  pub overrides: Vec<(String, String)>,
  /// Value of `TASKSTREAM_TASK_ID` (see [`super::new_task_tag`]).
  pub task_tag: String,
}

/// The full child environment, in order: `base` (the host environment at spawn
/// time) without `opts.remove`, then `TERM` and `PAGER`, then
/// `opts.overrides`, then the task tag. An inherited `GIT_PAGER` is kept and
/// none is ever added. The tag comes last because callers often pass a copy of
/// `process.env` as overrides: inside another task it holds that task's tag,
/// which would hide this task's processes from its own kill.
/// Names compare case-insensitively on Windows, as `process.env` does there.
pub fn child_env(
  base: impl Iterator<Item = (OsString, OsString)>,
  opts: &EnvOptions,
) -> Vec<(OsString, OsString)> {
  let mut env: Vec<(OsString, OsString)> = base
    .filter(|(name, _)| !opts.remove.iter().any(|r| same_name(name, OsStr::new(r))))
    .collect();
  set(&mut env, "TERM", opts.term);
  set(&mut env, "PAGER", DEFAULT_PAGER);
  for (name, value) in &opts.overrides {
    set(&mut env, name, value);
  }
  set(&mut env, TASK_TAG_VAR, &opts.task_tag);
  env
}

/// Replaces every entry named `name` with one `name=value` at the end.
fn set(env: &mut Vec<(OsString, OsString)>, name: &str, value: &str) {
  env.retain(|(existing, _)| !same_name(existing, OsStr::new(name)));
  env.push((name.into(), value.into()));
}

fn same_name(a: &OsStr, b: &OsStr) -> bool {
  if cfg!(windows) {
    a.eq_ignore_ascii_case(b)
  } else {
    a == b
  }
}

/// Why `key` cannot name an environment variable (empty, `=` or NUL), or `None`.
pub fn env_name_problem(key: &str) -> Option<&'static str> {
  if key.is_empty() {
    Some("must not be empty")
  } else if key.contains('=') {
    Some("must not contain \"=\"")
  } else if key.contains('\0') {
    Some("must not contain null bytes")
  } else {
    None
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn environment_names() {
    assert_eq!(env_name_problem("PATH"), None);
    assert_eq!(env_name_problem("weird name-1.x"), None);
    assert_eq!(env_name_problem(""), Some("must not be empty"));
    assert_eq!(env_name_problem("A=B"), Some("must not contain \"=\""));
    assert_eq!(env_name_problem("=C:"), Some("must not contain \"=\""));
    assert_eq!(env_name_problem("A\0"), Some("must not contain null bytes"));
  }
}
