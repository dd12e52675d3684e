//! The exact texts of a background shell's terminal notification
//! (CONTRACT.md §2.13 emitNotification step 4, §3.12).

use std::path::Path;

use super::entry::{ShellEntry, ShellStatus};
use crate::end::TaskEnd;
use crate::text::{
  escape_xml, read_task_output_tail, strip_display_control_chars, truncate_notification_label,
  truncate_utf16, utf16_len, OutputTail,
};

/// `MAX_NOTIFICATION_MODEL_COMMAND_LENGTH` (CONTRACT.md §1.4): longer commands
/// are cut to 497 units plus `...` in `<command truncated="true">`.
pub const MAX_NOTIFICATION_MODEL_COMMAND_LENGTH: usize = 500;
/// `MAX_NOTIFICATION_OUTPUT_TAIL_BYTES` (CONTRACT.md §1.4).
pub const MAX_NOTIFICATION_OUTPUT_TAIL_BYTES: usize = 8192;

/// `ShellNotificationMeta` (CONTRACT.md §1.4), with `type` and `end` (API.md §6.2, §6.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellNotificationMeta {
  /// `'terminal'` or `'settled'`.
  pub kind: &'static str,
  pub end: Option<TaskEnd>,
  pub shell_id: String,
  pub status: ShellStatus,
  pub exit_code: Option<i32>,
  pub todo_work_chain_id: Option<String>,
}

/// The three arguments of the shell notification callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellNotification {
  pub display_text: String,
  pub model_text: String,
  pub meta: ShellNotificationMeta,
}

/// Builds `entry`'s terminal notification; reads the last 8192 bytes of its
/// output file for `<output-tail>` (CONTRACT.md §2.13 emitNotification step 4).
pub fn shell_notification(entry: &ShellEntry) -> ShellNotification {
  let label = truncate_notification_label(&entry.command);
  let status_text = entry.status.status_text();
  let mut model = vec![
    "<task-notification>".to_owned(),
    format!("<task-id>{}</task-id>", escape_xml(&entry.id)),
    "<kind>shell</kind>".to_owned(),
    format!("<status>{}</status>", escape_xml(entry.status.as_str())),
    format!(
      "<summary>Shell command \"{}\" {status_text}.</summary>",
      escape_xml(&label)
    ),
    command_element(&entry.command),
    format!("<cwd>{}</cwd>", shown(&entry.cwd)),
  ];
  model.extend(entry.pid.map(|pid| format!("<pid>{pid}</pid>")));
  model.extend(
    entry
      .exit_code
      .map(|code| format!("<exit-code>{code}</exit-code>")),
  );
  if let Some(error) = entry.error.as_deref().filter(|e| !e.is_empty()) {
    model.push(format!("<result>{}</result>", shown(error)));
  }
  model.extend(output_tail_element(&entry.output_path));
  model.push(format!(
    "<output-file>{}</output-file>",
    shown(&entry.output_path)
  ));
  model.push("</task-notification>".to_owned());
  ShellNotification {
    display_text: format!("Background shell \"{label}\" {status_text}."),
    model_text: model.join("\n"),
    meta: ShellNotificationMeta {
      kind: "terminal",
      end: entry.end.clone(),
      shell_id: entry.id.clone(),
      status: entry.status,
      exit_code: entry.exit_code,
      todo_work_chain_id: entry.todo_work_chain_id.clone(),
    },
  }
}

/// The longest `<result>` of a settled notification, in UTF-16 units.
pub const SETTLED_RESULT_UNITS: usize = 2000;

/// The settled notification of a running shell (API.md §6.2): no output byte
/// for `settle_ms`; `<result>` holds the sanitised tail of the output file, at
/// most [`SETTLED_RESULT_UNITS`] units (cut at the start, so the newest text stays).
/// For a terminal shell (API.md §6.5), `screen` is the screen's text, the
/// `<result>` in place of the output tail.
pub fn shell_settled_notification(
  entry: &ShellEntry,
  settle_ms: u64,
  screen: Option<&str>,
) -> ShellNotification {
  let label = truncate_notification_label(&entry.command);
  let summary =
    format!("Background shell \"{label}\" output settled: no output for {settle_ms} ms.");
  let mut model = vec![
    "<task-notification>".to_owned(),
    format!("<task-id>{}</task-id>", escape_xml(&entry.id)),
    "<kind>shell</kind>".to_owned(),
    "<status>running</status>".to_owned(),
    format!(
      "<summary>Background shell \"{}\" output settled: no output for {settle_ms} ms.</summary>",
      escape_xml(&label)
    ),
  ];
  match screen {
    Some(screen) if !screen.is_empty() => {
      model.push(format!("<result>{}</result>", escape_xml(screen)))
    }
    Some(_) => {}
    None => {
      let tail = read_task_output_tail(
        Path::new(&entry.output_path),
        MAX_NOTIFICATION_OUTPUT_TAIL_BYTES,
      );
      if let OutputTail::Text { text, .. } = tail {
        let text = last_units(&text, SETTLED_RESULT_UNITS);
        model.push(format!("<result>{}</result>", escape_xml(text)));
      }
    }
  }
  model.push(format!(
    "<output-file>{}</output-file>",
    shown(&entry.output_path)
  ));
  model.push("</task-notification>".to_owned());
  ShellNotification {
    display_text: summary,
    model_text: model.join("\n"),
    meta: ShellNotificationMeta {
      kind: "settled",
      end: None,
      shell_id: entry.id.clone(),
      status: ShellStatus::Running,
      exit_code: None,
      todo_work_chain_id: entry.todo_work_chain_id.clone(),
    },
  }
}

/// The end of `text` holding at most `units` UTF-16 units, never splitting a char.
fn last_units(text: &str, units: usize) -> &str {
  let mut kept = 0;
  for (index, c) in text.char_indices().rev() {
    kept += c.len_utf16();
    if kept > units {
      return &text[index + c.len_utf8()..];
    }
  }
  text
}

/// `ESC(strip(text))`.
fn shown(text: &str) -> String {
  escape_xml(&strip_display_control_chars(text))
}

/// `<command>`, or `<command truncated="true">` with the first 497 units and
/// `...` when the stripped command is longer than 500 units.
fn command_element(command: &str) -> String {
  let stripped = strip_display_control_chars(command);
  if utf16_len(&stripped) <= MAX_NOTIFICATION_MODEL_COMMAND_LENGTH {
    return format!("<command>{}</command>", escape_xml(&stripped));
  }
  let kept = truncate_utf16(&stripped, MAX_NOTIFICATION_MODEL_COMMAND_LENGTH - 3);
  format!(
    "<command truncated=\"true\">{}...</command>",
    escape_xml(kept)
  )
}

/// `<output-tail>` from the cleaned tail, `error="unreadable"` when the file
/// could not be read, nothing when there is no text.
fn output_tail_element(output_path: &str) -> Option<String> {
  match read_task_output_tail(Path::new(output_path), MAX_NOTIFICATION_OUTPUT_TAIL_BYTES) {
    OutputTail::Empty => None,
    OutputTail::Error(_) => Some("<output-tail error=\"unreadable\" />".to_owned()),
    OutputTail::Text { text, truncated } => Some(format!(
      "<output-tail truncated=\"{truncated}\">{}</output-tail>",
      escape_xml(&text)
    )),
  }
}
