//! Every shell-command guard (CONTRACT.md §2.11, §2.16, §3.1–3.6, §3.15) on any command: no
//! panic, no hang (libFuzzer's `-timeout`), and the invariants that hold by construction:
//!
//! * `strip_trailing_background_amp` returns its input, or a prefix of it followed only by
//!   whitespace, one `&` and whitespace;
//! * `split_trailing_shell_comment` cuts the command into `before # comment rest`, `rest` empty
//!   or starting at the newline that ends the comment; keep mode appends `rest`;
//! * `trim_trailing_shell_comment` only removes text and is idempotent;
//! * `strip_shell_wrapper` returns a substring of its input;
//! * `detect_command_substitution` is false without `$(`, a backtick, `<(` or `>(`;
//! * a non-final or trailing top-level `&` needs an `&`;
//! * the sleep guard's message and description agree.
//!
//! Input: the command, then optionally `\0`, a directory (relative to a scratch workspace, or
//! absolute when it starts with `/`), `\0` and a `max_events` number, for
//! `validate_monitor_params`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use taskstream_core::guards::{
  blocked_sleep_message, detect_blocked_sleep_pattern, detect_command_substitution,
  has_non_final_top_level_background_operator, has_top_level_trailing_background_operator,
  has_unsafe_monitor_background_operator, is_path_within, normalize_monitor_command,
  split_trailing_shell_comment, strip_shell_wrapper, strip_trailing_background_amp,
  trim_trailing_shell_comment, validate_monitor_params, MonitorParams, NumberParam, StringParam,
  ValidationContext,
};
use taskstream_core::text::{ecma_trim, ecma_trim_end};
use taskstream_fuzz::is_subsequence;

/// A scratch tree shared by every run of this target: `workspace/sub`, `workspace/out` (a
/// symlink leaving the workspace) and `skills`. Created once, never removed, so parallel jobs
/// and repeated runs share it.
fn scratch() -> &'static (PathBuf, PathBuf) {
  static TREE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
  TREE.get_or_init(|| {
    let root = std::env::temp_dir().join("taskstream-fuzz-guards");
    let workspace = root.join("workspace");
    let skills = root.join("skills");
    std::fs::create_dir_all(workspace.join("sub")).expect("create the scratch workspace");
    std::fs::create_dir_all(&skills).expect("create the scratch skills dir");
    #[cfg(unix)]
    {
      let link = workspace.join("out");
      if std::fs::symlink_metadata(&link).is_err() {
        let _ = std::os::unix::fs::symlink(&root, &link);
      }
    }
    (workspace, skills)
  })
}

fn check_amp(command: &str) {
  let stripped = strip_trailing_background_amp(command);
  if stripped != command {
    let removed = command
      .strip_prefix(stripped.as_str())
      .unwrap_or_else(|| panic!("{stripped:?} is not a prefix of {command:?}"));
    assert_eq!(ecma_trim(removed), "&", "removed {removed:?}");
    assert_eq!(ecma_trim_end(&stripped), stripped);
  }
}

fn check_comments(command: &str) {
  let dropped = split_trailing_shell_comment(command, false);
  let kept = split_trailing_shell_comment(command, true);
  assert_eq!(dropped.comment, kept.comment);
  match &dropped.comment {
    None => {
      assert_eq!(dropped.command, command);
      assert_eq!(kept.command, command);
    }
    Some(comment) => {
      assert!(!comment.contains('\n'), "comment {comment:?}");
      let head = format!("{}#{comment}", dropped.command);
      let rest = command
        .strip_prefix(head.as_str())
        .unwrap_or_else(|| panic!("{command:?} does not start with {head:?}"));
      assert!(rest.is_empty() || rest.starts_with('\n'), "rest {rest:?}");
      assert_eq!(kept.command, format!("{}{rest}", dropped.command));
    }
  }
  let trimmed = trim_trailing_shell_comment(command);
  assert!(
    is_subsequence(&trimmed, command),
    "{trimmed:?} from {command:?}"
  );
  assert_eq!(
    trim_trailing_shell_comment(&trimmed),
    trimmed,
    "trimming {command:?} twice"
  );
}

fn check_command(command: &str) {
  check_amp(command);
  check_comments(command);

  let unwrapped = strip_shell_wrapper(command);
  assert!(
    command.contains(unwrapped.as_str()),
    "{unwrapped:?} from {command:?}"
  );

  if !["$(", "`", "<(", ">("].iter().any(|s| command.contains(s)) {
    assert!(!detect_command_substitution(command));
  }
  if has_non_final_top_level_background_operator(command)
    || has_top_level_trailing_background_operator(command)
    || has_unsafe_monitor_background_operator(command)
  {
    assert!(command.contains('&'));
  }

  let description = detect_blocked_sleep_pattern(command);
  let message = blocked_sleep_message(command);
  assert_eq!(description.is_some(), message.is_some());
  if let (Some(description), Some(message)) = (description, message) {
    assert!(command.contains("sleep"));
    assert!(
      message.starts_with(&format!("Blocked: {description}. ")),
      "{message:?}"
    );
  }

  let normalized = normalize_monitor_command(command);
  if !normalized.stripped_trailing_amp {
    assert!(
      command.contains(normalized.analysis_command.as_str()),
      "{normalized:?}"
    );
  }
}

fuzz_target!(|data: &[u8]| {
  let input = String::from_utf8_lossy(data);
  let mut parts = input.splitn(3, '\0');
  let command = parts.next().unwrap_or_default();
  check_command(command);

  let (workspace, skills) = scratch();
  let directory = match parts.next() {
    None => StringParam::Absent,
    Some(dir) if dir.starts_with('/') || dir.is_empty() => StringParam::Value(dir.to_owned()),
    Some(dir) => StringParam::Value(format!("{}/{dir}", workspace.display())),
  };
  let max_events = match parts.next() {
    None => NumberParam::Absent,
    Some(number) => number
      .trim()
      .parse::<f64>()
      .map_or(NumberParam::NotNumber, NumberParam::Value),
  };
  let params = MonitorParams {
    command: StringParam::Value(command.to_owned()),
    max_events,
    idle_timeout_ms: NumberParam::Absent,
    directory: directory.clone(),
  };
  let ctx = ValidationContext {
    workspace_dirs: vec![workspace.display().to_string()],
    user_skills_dirs: vec![skills.display().to_string()],
  };
  let verdict = validate_monitor_params(&params, &ctx);
  // An empty directory is no directory (Qwen Code 0.24.4 reads `if (params.directory)`).
  if let StringParam::Value(dir) = &directory {
    let inside = is_path_within(dir, &workspace.display().to_string());
    if verdict.is_none() && !dir.is_empty() {
      assert!(inside, "{dir:?} accepted outside the workspace");
    }
  }
});
