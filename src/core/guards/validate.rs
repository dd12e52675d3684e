//! `validateMonitorParams` (CONTRACT.md §2.11, vectors §3.15).

use std::path::Path;

use super::containment::is_within_any;
use super::monitor_command::{
  has_monitor_command_substitution, has_unsafe_monitor_background_operator,
  normalize_monitor_command, NormalizedMonitorCommand,
};
use super::whitespace::trim;

const EMPTY_COMMAND: &str = "Command cannot be empty.";
const BACKGROUND_OPERATOR: &str = "Monitor commands must not contain non-final top-level background operators. Remove \"&\" and let the monitor manage process lifetime.";
const DIRECTORY_NOT_ABSOLUTE: &str = "Directory must be an absolute path.";
/// Ours: no directory can hold a NUL byte, and the OS would cut the path there,
/// so containment checked on the text would not be the directory used.
const DIRECTORY_HAS_NUL: &str = "Directory must not contain null bytes.";
const DIRECTORY_IN_USER_SKILLS: &str = "Explicitly running monitor commands from within the user skills directory is not allowed. Please use absolute paths for command parameter instead.";
const COMMAND_SUBSTITUTION: &str =
  "Monitor commands must not use command substitution ($(...), backticks, <(...) or >(...)).";

/// A string parameter as JavaScript passed it: absent (`undefined`), of another type (`null`
/// included), or a string.
#[derive(Debug, Clone, PartialEq)]
pub enum StringParam {
  Absent,
  NotString,
  Value(String),
}

/// A number parameter as JavaScript passed it: absent (`undefined`), of another type (`null`
/// included), or a number (NaN and the infinities included).
#[derive(Debug, Clone, PartialEq)]
pub enum NumberParam {
  Absent,
  NotNumber,
  Value(f64),
}

/// `MonitorToolParams` (CONTRACT.md §1.3) as far as validation reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorParams {
  pub command: StringParam,
  pub max_events: NumberParam,
  pub idle_timeout_ms: NumberParam,
  pub directory: StringParam,
}

/// The directories a monitor's `directory` is checked against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationContext {
  pub workspace_dirs: Vec<String>,
  pub user_skills_dirs: Vec<String>,
}

/// An integer limit of checks 3 and 4, with its two messages.
struct Limit {
  max: f64,
  not_positive: &'static str,
  too_large: &'static str,
}

/// `max_events`: at most `MAX_MAX_EVENTS` (CONTRACT.md §1.3).
const MAX_EVENTS: Limit = Limit {
  max: 10_000.0,
  not_positive: "max_events must be a positive integer.",
  too_large: "max_events cannot exceed 10000.",
};

/// `idle_timeout_ms`: at most `MAX_IDLE_TIMEOUT_MS` (CONTRACT.md §1.3).
const IDLE_TIMEOUT_MS: Limit = Limit {
  max: 600_000.0,
  not_positive: "idle_timeout_ms must be a positive integer.",
  too_large: "idle_timeout_ms cannot exceed 600000ms (10 minutes).",
};

impl Limit {
  /// An absent value is fine; otherwise it must be a positive integer (a finite number with no
  /// fraction) no larger than `max`. Out-of-range values are rejected, not clamped.
  fn check(&self, value: &NumberParam) -> Option<&'static str> {
    match value {
      NumberParam::Absent => None,
      NumberParam::Value(v) if v.is_finite() && v.fract() == 0.0 && *v > 0.0 => {
        (*v > self.max).then_some(self.too_large)
      }
      _ => Some(self.not_positive),
    }
  }
}

/// `validateMonitorParams(params, ctx)` (CONTRACT.md §2.11, §3.15): `None` when valid, otherwise
/// the error text of the first failing check, in this order: empty command, non-final background
/// operator, `max_events`, `idle_timeout_ms`, `directory`, command substitution. Substitution is
/// last on purpose, so a CLI may turn exactly that message into "ask". It is looked for in the
/// safety command, in the raw command and in the wrapper script after quote removal.
#[must_use]
pub fn validate_monitor_params(params: &MonitorParams, ctx: &ValidationContext) -> Option<String> {
  let StringParam::Value(command) = &params.command else {
    return Some(EMPTY_COMMAND.to_owned());
  };
  let normalized = normalize_monitor_command(command);
  let failure = check_command(command, &normalized)
    .or_else(|| MAX_EVENTS.check(&params.max_events))
    .or_else(|| IDLE_TIMEOUT_MS.check(&params.idle_timeout_ms));
  if let Some(message) = failure {
    return Some(message.to_owned());
  }
  if let Some(message) = check_directory(&params.directory, ctx) {
    return Some(message);
  }
  has_monitor_command_substitution(command, &normalized.safety_command)
    .then(|| COMMAND_SUBSTITUTION.to_owned())
}

/// Checks 1 and 2: a command that is blank once normalised (`'  '`, `'&'`, `bash -c ''`), then a
/// non-final top-level `&` in the script or the argv suffix.
fn check_command(command: &str, normalized: &NormalizedMonitorCommand) -> Option<&'static str> {
  if trim(&normalized.analysis_command).is_empty() {
    Some(EMPTY_COMMAND)
  } else if has_unsafe_monitor_background_operator(command) {
    Some(BACKGROUND_OPERATOR)
  } else {
    None
  }
}

/// Node's `path.isAbsolute`: rooted. On Windows that includes `\srv` (resolved against the
/// current drive) but not the drive-relative `C:srv`.
fn is_absolute(dir: &str) -> bool {
  Path::new(dir).has_root()
}

/// Check 5: an explicit directory must be free of NUL bytes (ours), absolute, outside every
/// user-skills directory and inside a workspace directory (containment rule of §2.11). An empty
/// string is no directory, as in the TypeScript tool's `if (params.directory)`
/// (docs/upstream-rules.md).
fn check_directory(directory: &StringParam, ctx: &ValidationContext) -> Option<String> {
  let dir = match directory {
    StringParam::Absent => return None,
    StringParam::Value(dir) if dir.is_empty() => return None,
    StringParam::NotString => return Some(DIRECTORY_NOT_ABSOLUTE.to_owned()),
    StringParam::Value(dir) => dir,
  };
  if dir.contains('\0') {
    return Some(DIRECTORY_HAS_NUL.to_owned());
  }
  if !is_absolute(dir) {
    return Some(DIRECTORY_NOT_ABSOLUTE.to_owned());
  }
  if is_within_any(dir, &ctx.user_skills_dirs) {
    return Some(DIRECTORY_IN_USER_SKILLS.to_owned());
  }
  if !is_within_any(dir, &ctx.workspace_dirs) {
    return Some(format!(
      "Directory '{dir}' is not within any of the registered workspace directories."
    ));
  }
  None
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::guards::test_support::{expect_eq, run_table, TempTree};
  use serde_json::Value;

  fn string_param(value: &Value) -> StringParam {
    match value {
      Value::String(s) => StringParam::Value(s.clone()),
      _ => StringParam::NotString,
    }
  }

  fn optional_string(params: &Value, key: &str) -> StringParam {
    params.get(key).map_or(StringParam::Absent, string_param)
  }

  fn optional_number(params: &Value, key: &str) -> NumberParam {
    match params.get(key) {
      None => NumberParam::Absent,
      Some(v) => v
        .as_f64()
        .map_or(NumberParam::NotNumber, NumberParam::Value),
    }
  }

  fn string_list(value: &Value) -> Vec<String> {
    value
      .as_array()
      .map(|items| {
        items
          .iter()
          .filter_map(|v| v.as_str().map(str::to_owned))
          .collect()
      })
      .unwrap_or_default()
  }

  fn params_from(params: &Value) -> MonitorParams {
    MonitorParams {
      command: optional_string(params, "command"),
      max_events: optional_number(params, "max_events"),
      idle_timeout_ms: optional_number(params, "idle_timeout_ms"),
      directory: optional_string(params, "directory"),
    }
  }

  fn ctx_from(ctx: &Value) -> ValidationContext {
    ValidationContext {
      workspace_dirs: string_list(&ctx["workspaceDirs"]),
      user_skills_dirs: string_list(&ctx["userSkillsDirs"]),
    }
  }

  /// For a `requires: <link> is a symlink to <target>` row: build `<link>` under a temp tree and
  /// move every absolute path of the row (directory, roots, expected text) under that tree.
  #[cfg(unix)]
  fn apply_requirement(
    note: &str,
    params: &mut MonitorParams,
    ctx: &mut ValidationContext,
    want: &mut Option<String>,
  ) -> Result<TempTree, String> {
    let tree = TempTree::new("validate");
    let spec = note
      .strip_prefix("requires: ")
      .ok_or("unknown requirement")?;
    let (link, target) = spec
      .split_once(" is a symlink to ")
      .ok_or_else(|| format!("unsupported requirement {spec:?}"))?;
    let moved = |path: &str| format!("{}{path}", tree.path().display());
    let link_path = std::path::PathBuf::from(moved(link));
    std::fs::create_dir_all(link_path.parent().ok_or("link has no parent")?)
      .map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(target, &link_path).map_err(|e| e.to_string())?;
    for root in ctx
      .workspace_dirs
      .iter_mut()
      .chain(&mut ctx.user_skills_dirs)
    {
      *root = moved(root);
    }
    if let StringParam::Value(dir) = &mut params.directory {
      if let Some(message) = want {
        *message = message.replace(dir.as_str(), &moved(dir));
      }
      *dir = moved(dir);
    }
    Ok(tree)
  }

  #[cfg(not(unix))]
  fn apply_requirement(
    note: &str,
    _: &mut MonitorParams,
    _: &mut ValidationContext,
    _: &mut Option<String>,
  ) -> Result<TempTree, String> {
    Err(format!("cannot set up {note:?} on this platform"))
  }

  #[test]
  fn validate_monitor_params_vectors() {
    run_table("validateMonitorParams", |case| {
      let mut params = params_from(&case["input"]["params"]);
      let mut ctx = ctx_from(&case["input"]["ctx"]);
      let mut want = case["expected"].as_str().map(str::to_owned);
      let requirement = case["note"].as_str().filter(|n| n.starts_with("requires:"));
      // The one setup a vector requires is a symlink, which Windows allows
      // only with privileges (Developer Mode or admin): such vectors run on
      // Unix, and the symlink rule is tested there.
      #[cfg(not(unix))]
      if requirement.is_some() {
        return Ok(());
      }
      let _tree = match requirement {
        Some(note) => Some(apply_requirement(note, &mut params, &mut ctx, &mut want)?),
        None => None,
      };
      expect_eq(validate_monitor_params(&params, &ctx), want)
    });
  }

  fn params(command: &str) -> MonitorParams {
    MonitorParams {
      command: StringParam::Value(command.to_owned()),
      max_events: NumberParam::Absent,
      idle_timeout_ms: NumberParam::Absent,
      directory: StringParam::Absent,
    }
  }

  fn ctx(workspace: &[&str]) -> ValidationContext {
    ValidationContext {
      workspace_dirs: workspace.iter().map(ToString::to_string).collect(),
      user_skills_dirs: vec!["/home/user/.claude/skills".to_owned()],
    }
  }

  #[test]
  fn limits_reject_non_integers_and_bounds() {
    let not_positive = Some(MAX_EVENTS.not_positive.to_owned());
    for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.5, -3.0] {
      let p = MonitorParams {
        max_events: NumberParam::Value(value),
        ..params("tail -f log")
      };
      assert_eq!(
        validate_monitor_params(&p, &ctx(&[])),
        not_positive,
        "{value}"
      );
    }
    let p = MonitorParams {
      max_events: NumberParam::NotNumber,
      ..params("tail -f log")
    };
    assert_eq!(validate_monitor_params(&p, &ctx(&[])), not_positive);
    for (value, want) in [
      (10_000.0, None),
      (10_001.0, Some(MAX_EVENTS.too_large)),
      (1.0, None),
    ] {
      let p = MonitorParams {
        max_events: NumberParam::Value(value),
        ..params("tail -f log")
      };
      assert_eq!(
        validate_monitor_params(&p, &ctx(&[])).as_deref(),
        want,
        "{value}"
      );
    }
    let p = MonitorParams {
      idle_timeout_ms: NumberParam::Value(600_000.0),
      ..params("tail -f log")
    };
    assert_eq!(validate_monitor_params(&p, &ctx(&[])), None);
  }

  #[test]
  fn directory_rules() {
    let with_dir = |dir: StringParam| MonitorParams {
      directory: dir,
      ..params("tail -f log")
    };
    let not_absolute = Some(DIRECTORY_NOT_ABSOLUTE.to_owned());
    let workspace = ctx(&["/srv/project-a"]);
    assert_eq!(
      validate_monitor_params(&with_dir(StringParam::NotString), &workspace),
      not_absolute
    );
    // An empty directory is no directory (the TypeScript tool's `if (params.directory)`).
    assert_eq!(
      validate_monitor_params(&with_dir(StringParam::Value(String::new())), &workspace),
      None
    );
    assert_eq!(
      validate_monitor_params(
        &with_dir(StringParam::Value("/srv/project-a".into())),
        &ctx(&[])
      ),
      Some(
        "Directory '/srv/project-a' is not within any of the registered workspace directories."
          .into()
      )
    );
    let skills_inside_workspace = ValidationContext {
      workspace_dirs: vec!["/home/user".into()],
      user_skills_dirs: vec!["/home/user/.claude/skills".into()],
    };
    assert_eq!(
      validate_monitor_params(
        &with_dir(StringParam::Value("/home/user/.claude/skills".into())),
        &skills_inside_workspace
      ),
      Some(DIRECTORY_IN_USER_SKILLS.to_owned())
    );
    assert_eq!(
      validate_monitor_params(
        &with_dir(StringParam::Value("/home/user/.claude/skills-other".into())),
        &skills_inside_workspace
      ),
      None
    );
  }

  #[test]
  fn an_empty_directory_is_no_directory() {
    // The TypeScript tool checks `if (params.directory)`: '' means "not given".
    let p = MonitorParams {
      directory: StringParam::Value(String::new()),
      ..params("tail -f log")
    };
    assert_eq!(validate_monitor_params(&p, &ctx(&["/srv/project-a"])), None);
    let p = MonitorParams {
      directory: StringParam::Value(String::new()),
      ..params("tail -f $(x)")
    };
    assert_eq!(
      validate_monitor_params(&p, &ctx(&[])),
      Some(COMMAND_SUBSTITUTION.to_owned())
    );
  }

  #[test]
  fn a_directory_with_a_nul_byte_is_refused() {
    // Inside the workspace as text, but no such directory can exist: the OS
    // cuts a path at NUL, so it would not even be the directory checked.
    let refused = Some(DIRECTORY_HAS_NUL.to_owned());
    let workspace = ctx(&["/srv/project-a"]);
    for dir in [
      "/srv/project-a/sub\0dir",
      "/srv/project-a\0",
      "rel\0ative",
      "\0",
    ] {
      let p = MonitorParams {
        directory: StringParam::Value(dir.into()),
        ..params("tail -f log")
      };
      assert_eq!(validate_monitor_params(&p, &workspace), refused, "{dir:?}");
    }
  }

  #[test]
  fn command_checks() {
    let empty = Some(EMPTY_COMMAND.to_owned());
    for command in ["", "bash -c ''", "bash -c '  '", "bash -c '&'"] {
      assert_eq!(
        validate_monitor_params(&params(command), &ctx(&[])),
        empty,
        "{command:?}"
      );
    }
    let substitution = Some(COMMAND_SUBSTITUTION.to_owned());
    for command in [
      "FOO=$(id) bash -c 'tail -f log'",
      "bash -c \"echo '$(id)'\"",
      "bash -c \"tail -f `id`\"",
      "tail -f <(cat log)",
    ] {
      assert_eq!(
        validate_monitor_params(&params(command), &ctx(&[])),
        substitution,
        "{command:?}"
      );
    }
    let p = MonitorParams {
      directory: StringParam::Value("relative".into()),
      ..params("tail -f $(x)")
    };
    assert_eq!(
      validate_monitor_params(&p, &ctx(&[])),
      Some(DIRECTORY_NOT_ABSOLUTE.to_owned())
    );
  }
}
