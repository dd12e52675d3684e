//! What `executeBackground()` decides before anything starts (API.md §4,
//! CONTRACT.md §2.15 steps 1–3): the command as run (trimmed, a trailing bare
//! `&` stripped), the shell's id, its output directory checked, and the paths
//! of its output file and status sidecar. A persisted shell's id must also be
//! a valid file name in the state directory.

use std::path::Path;

use crate::guards::strip_trailing_background_amp;
use crate::ids::random_hex;
use crate::text::{ecma_trim, status_file_path_for};

/// What names a background shell, for its objects and its launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellPlan {
  /// The caller's `shellId`, or `bg_` + 8 hex characters.
  pub shell_id: String,
  /// The command as run.
  pub command: String,
  /// A trailing bare `&` was stripped (`&&` and `\&` are kept).
  pub stripped_trailing_amp: bool,
  /// `<outputDir>/shell-<shellId>.output`.
  pub output_path: String,
  /// The status sidecar beside the output file.
  pub status_path: String,
}

/// What the caller asked for.
pub struct ShellAsk<'a> {
  pub command: &'a str,
  pub shell_id: Option<&'a str>,
  pub output_dir: &'a str,
  pub persisted: bool,
}

/// Plans a shell: refused (with the message thrown) when `is_registered` knows
/// its id already, when its output directory cannot be created or written, or,
/// for a persisted shell, when its id cannot name its records.
pub fn plan_shell(
  ask: &ShellAsk,
  is_registered: impl Fn(&str) -> bool,
) -> Result<ShellPlan, String> {
  let trimmed = ecma_trim(ask.command);
  let command = strip_trailing_background_amp(trimmed);
  let stripped_trailing_amp = command != trimmed;
  if stripped_trailing_amp {
    tracing::debug!(
      "Stripped trailing & from background command — the shell registry handles backgrounding"
    );
  }
  let shell_id = ask
    .shell_id
    .map_or_else(|| format!("bg_{}", random_hex(8)), str::to_owned);
  if is_registered(&shell_id) {
    return Err(format!(
      "Background shell \"{shell_id}\" is already registered."
    ));
  }
  super::check_output_dir(ask.output_dir)?;
  if ask.persisted {
    crate::persist::records::check_task_id(&shell_id).map_err(|e| e.to_string())?;
  }
  let output_path = Path::new(ask.output_dir)
    .join(format!("shell-{shell_id}.output"))
    .to_string_lossy()
    .into_owned();
  let status_path = status_file_path_for(&output_path);
  Ok(ShellPlan {
    shell_id,
    command,
    stripped_trailing_amp,
    output_path,
    status_path,
  })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::shell::test_support::TempDir;

  fn ask<'a>(command: &'a str, shell_id: Option<&'a str>, dir: &'a str) -> ShellAsk<'a> {
    ShellAsk {
      command,
      shell_id,
      output_dir: dir,
      persisted: false,
    }
  }

  #[test]
  fn names_the_shell_and_its_files() {
    let dir = TempDir::new("plan");
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let plan = plan_shell(&ask("  npm run dev &  ", Some("bg_x"), out), |_| false).unwrap();
    assert_eq!(plan.shell_id, "bg_x");
    assert_eq!(plan.command, "npm run dev");
    assert!(plan.stripped_trailing_amp);
    let expected = Path::new(out).join("shell-bg_x.output");
    assert_eq!(plan.output_path, expected.to_string_lossy());
    assert_eq!(plan.status_path, status_file_path_for(&plan.output_path));
    assert!(Path::new(out).is_dir(), "the output directory is created");
    let kept = plan_shell(&ask("a && b", Some("bg_y"), out), |_| false).unwrap();
    assert_eq!(kept.command, "a && b");
    assert!(!kept.stripped_trailing_amp);
  }

  #[test]
  fn a_generated_id_is_bg_and_eight_hex_characters() {
    let dir = TempDir::new("plan-id");
    let out = dir.path().to_str().unwrap();
    let plan = plan_shell(&ask("true", None, out), |_| false).unwrap();
    let hex = plan.shell_id.strip_prefix("bg_").expect("bg_ prefix");
    assert_eq!(hex.len(), 8);
    assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{hex}");
  }

  #[test]
  fn refuses_a_registered_id_before_touching_the_directory() {
    let dir = TempDir::new("plan-dup");
    let out = dir.path().join("never");
    let out = out.to_str().unwrap();
    let error = plan_shell(&ask("true", Some("bg_a"), out), |id| id == "bg_a").unwrap_err();
    assert_eq!(error, "Background shell \"bg_a\" is already registered.");
    assert!(!Path::new(out).exists());
  }

  #[test]
  fn a_persisted_shell_needs_an_id_that_names_a_file() {
    let dir = TempDir::new("plan-persist");
    let out = dir.path().to_str().unwrap();
    let mut persisted = ask("true", Some("../escape"), out);
    persisted.persisted = true;
    assert!(plan_shell(&persisted, |_| false).is_err());
    persisted.persisted = false;
    assert!(plan_shell(&persisted, |_| false).is_ok());
  }
}
