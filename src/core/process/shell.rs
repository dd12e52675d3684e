//! Shell selection (CONTRACT.md §1.5, "Shell selection"): which program runs a
//! command string, and how a bare program name is looked up on `PATH`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The family of the selected shell; it decides how a command is prefixed
/// (CONTRACT.md §2.15 item 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellKind {
  Bash,
  Cmd,
  PowerShell,
}

/// `<program> <args_prefix…> <command>` runs a command string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellConfig {
  pub program: String,
  pub args_prefix: Vec<String>,
  pub kind: ShellKind,
}

/// The shell for a platform (CONTRACT.md §1.5). Pure: `comspec` is the value of
/// `%ComSpec%`, consulted only when `os_windows`; an empty value counts as unset.
pub fn shell_config_for(os_windows: bool, comspec: Option<&str>) -> ShellConfig {
  if !os_windows {
    return config("bash", &["-c"], ShellKind::Bash);
  }
  let program = comspec.filter(|c| !c.is_empty()).unwrap_or("cmd.exe");
  let lower = program.to_ascii_lowercase();
  if lower.ends_with("powershell.exe") || lower.ends_with("pwsh.exe") {
    config(program, &["-NoProfile", "-Command"], ShellKind::PowerShell)
  } else {
    config(program, &["/d", "/s", "/c"], ShellKind::Cmd)
  }
}

/// The shell for the platform this code runs on (CONTRACT.md §1.5).
pub fn shell_config() -> ShellConfig {
  let comspec = std::env::var("ComSpec").ok();
  shell_config_for(cfg!(windows), comspec.as_deref())
}

fn config(program: &str, args: &[&str], kind: ShellKind) -> ShellConfig {
  ShellConfig {
    program: program.to_string(),
    args_prefix: args.iter().map(|a| a.to_string()).collect(),
    kind,
  }
}

/// Finds `program` the way a shell would (CONTRACT.md §1.5, "looked up on
/// `PATH`"). A name containing a path separator is returned as is if it is an
/// executable file. Empty `PATH` entries are skipped, so the current directory
/// is never searched implicitly. `None` when nothing matches: the caller then
/// spawns the bare name and reports the OS error ("No such file or directory").
pub fn resolve_program(program: &str, path_env: Option<&OsStr>) -> Option<PathBuf> {
  let candidate = Path::new(program);
  if candidate.components().count() > 1 {
    return is_executable(candidate).then(|| candidate.to_path_buf());
  }
  std::env::split_paths(path_env?)
    .filter(|dir| !dir.as_os_str().is_empty())
    .map(|dir| dir.join(program))
    .find(|path| is_executable(path))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
  use std::os::unix::fs::PermissionsExt;
  path
    .metadata()
    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
  path.is_file()
}
