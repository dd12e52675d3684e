//! The exact texts of monitor notifications (CONTRACT.md §2.2).

use super::entry::{MonitorEntry, MonitorStatus};
pub use super::event_line::{truncate_event_line, EVENT_LINE_TRUNCATE_UNITS};
use super::signal::{
  batch_display_text, batch_meta_lines, batch_result, batch_summary, digest_display_line,
  important_lines, result_with_digest, DigestNote, Mark,
};
use crate::end::TaskEnd;
use crate::text::{escape_xml, strip_display_control_chars, truncate_notification_label};

/// Where a notification goes (CONTRACT.md §2.4): an owned entry only to its
/// owner's callback, any other entry to the global callback. No fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
  Global,
  Agent(String),
}

/// `meta.type` (API.md §6.2): which kind of notification this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationKind {
  Event,
  Settled,
  Terminal,
}

impl NotificationKind {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::Event => "event",
      Self::Settled => "settled",
      Self::Terminal => "terminal",
    }
  }
}

/// `MonitorNotificationMeta`.
#[derive(Debug, Clone, PartialEq)]
pub struct NotificationMeta {
  pub kind: NotificationKind,
  /// Terminal notifications: who ended the task (API.md §6.3).
  pub end: Option<TaskEnd>,
  pub monitor_id: String,
  pub status: MonitorStatus,
  pub event_count: u64,
  pub tool_use_id: Option<String>,
  pub owner_agent_id: Option<String>,
  pub todo_work_chain_id: Option<String>,
  /// A batch notification (API.md §6.7 `batchMs`): its lines, each cut as an event line.
  pub lines: Option<Vec<String>>,
  /// `digest` (§6.7): lines dropped since the previous notification of this monitor.
  pub dropped_since: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
  pub display_text: String,
  pub model_text: String,
  pub meta: NotificationMeta,
  pub route: Route,
}

/// The notification for accepted event number `entry.event_count`; `line` is already truncated.
pub fn event_notification(entry: &MonitorEntry, line: &str) -> Notification {
  event_notification_with_digest(entry, line, None)
}

/// [`event_notification`] with, under `digest` (API.md §6.7), the lines
/// dropped since the previous notification: `meta.droppedSince` and the digest
/// line at the end of `<result>` (and of the display text, unescaped).
pub fn event_notification_with_digest(
  entry: &MonitorEntry,
  line: &str,
  digest: Option<&DigestNote>,
) -> Notification {
  let desc = truncate_notification_label(&entry.description);
  let shown = strip_display_control_chars(line);
  let n = entry.event_count;
  let display_text = format!("Monitor \"{desc}\" event #{n}: {shown}");
  let mut model = envelope_head(entry, MonitorStatus::Running);
  model.push(format!(
    "<summary>Monitor \"{}\" emitted event #{n}.</summary>",
    escape_xml(&desc)
  ));
  push_result(&mut model, Some(escape_xml(&shown)), digest);
  model.push("</task-notification>".to_owned());
  let mut notification = build(
    entry,
    MonitorStatus::Running,
    with_digest_display(display_text, digest),
    model,
    NotificationKind::Event,
  );
  notification.meta.dropped_since = digest.map(|d| d.count);
  notification
}

/// A closed batch window (API.md §6.7): lines `first..=entry.event_count` in
/// one event notification. `<summary>Monitor "<label>" emitted events
/// #<first>–<last>.</summary>` (one line: the singular summary of an event),
/// `<result>` the lines joined by `\n`, each cut, stripped and escaped as an
/// event result, then the digest line; `meta.lines` the cut lines. A batch of
/// one reads as the event notification of its line, `meta.lines` aside.
///
/// The display text (API.md §6.7 "display"): one summary row, then the lines that matter
/// ([`shown_lines`]); the lines it leaves out and the digest are counted on the summary row.
pub fn batch_notification<S: AsRef<str>>(
  entry: &MonitorEntry,
  first: u64,
  lines: &[S],
  marks: &[Mark],
  digest: Option<&DigestNote>,
) -> Notification {
  let desc = truncate_notification_label(&entry.description);
  let last = entry.event_count;
  let mut model = envelope_head(entry, MonitorStatus::Running);
  model.push(format!(
    "<summary>{}</summary>",
    batch_summary(&desc, first, last)
  ));
  push_result(&mut model, Some(batch_result(lines)), digest);
  model.push("</task-notification>".to_owned());
  let display = batch_display_text(&desc, first, last, lines, marks, digest.map(|d| d.count));
  let mut notification = build(
    entry,
    MonitorStatus::Running,
    display,
    model,
    NotificationKind::Event,
  );
  notification.meta.lines = Some(batch_meta_lines(lines));
  notification.meta.dropped_since = digest.map(|d| d.count);
  notification
}

/// The settled notification (API.md §6.2): no output byte for `settle_ms`;
/// `<result>` quotes the last line read, accepted or dropped, cut and
/// escaped as an event result is, then, under `digest` (§6.7), the digest line.
pub fn settled_notification(
  entry: &MonitorEntry,
  settle_ms: u64,
  digest: Option<&DigestNote>,
) -> Notification {
  settled_notification_with(entry, settle_ms, None, digest)
}

/// [`settled_notification`]; for a terminal task (API.md §6.5) `screen` is
/// the screen's text, the `<result>` in place of the last line.
pub fn settled_notification_with(
  entry: &MonitorEntry,
  settle_ms: u64,
  screen: Option<&str>,
  digest: Option<&DigestNote>,
) -> Notification {
  let desc = truncate_notification_label(&entry.description);
  let summary = format!("Monitor \"{desc}\" output settled: no output for {settle_ms} ms.");
  let mut model = envelope_head(entry, MonitorStatus::Running);
  model.push(format!(
    "<summary>Monitor \"{}\" output settled: no output for {settle_ms} ms.</summary>",
    escape_xml(&desc)
  ));
  let last = match screen {
    Some(screen) => (!screen.is_empty()).then(|| escape_xml(screen)),
    None => entry.last_line.as_deref().map(|line| {
      let shown = strip_display_control_chars(&truncate_event_line(line));
      escape_xml(&shown)
    }),
  };
  push_result(&mut model, last, digest);
  model.push("</task-notification>".to_owned());
  let mut notification = build(
    entry,
    MonitorStatus::Running,
    with_digest_display(summary, digest),
    model,
    NotificationKind::Settled,
  );
  notification.meta.dropped_since = digest.map(|d| d.count);
  notification
}

/// The terminal notification of a settled entry, with the detail of its
/// terminal path and, under `digest` (API.md §6.7), the lines dropped since
/// the previous notification at the end of `<result>`.
pub fn terminal_notification(
  entry: &MonitorEntry,
  detail: Option<&str>,
  digest: Option<&DigestNote>,
) -> Notification {
  let desc = truncate_notification_label(&entry.description);
  let status = entry.status;
  let status_text = status.status_text();
  let n = entry.event_count;
  let d = entry.dropped_lines;
  let display_text = if d > 0 {
    format!("Monitor \"{desc}\" {status_text}. ({n} events, {d} lines dropped due to throttling)")
  } else {
    format!("Monitor \"{desc}\" {status_text}. ({n} events)")
  };
  let dropped = if d > 0 {
    format!(" {d} lines dropped due to throttling.")
  } else {
    String::new()
  };
  let mut model = envelope_head(entry, status);
  model.push(format!(
    "<summary>Monitor \"{}\" {status_text}. Total events: {n}.{dropped}</summary>",
    escape_xml(&desc)
  ));
  model.push(format!(
    "<command>{}</command>",
    escape_xml(&strip_display_control_chars(&entry.command))
  ));
  let detail = detail
    .filter(|d| !d.is_empty())
    .map(|detail| escape_xml(&strip_display_control_chars(detail)));
  // §6.7: the lines a lane let out at the end ride here, after the detail, before the digest.
  let result = match (detail, entry.end_lines.is_empty()) {
    (detail, true) => detail,
    (None, false) => Some(batch_result(&entry.end_lines)),
    (Some(detail), false) => Some(format!("{detail}\n{}", batch_result(&entry.end_lines))),
  };
  push_result(&mut model, result, digest);
  model.push("</task-notification>".to_owned());
  let display = if entry.end_lines.is_empty() {
    with_digest_display(display_text, digest)
  } else {
    // The important lines among them, a few rows at most.
    let mut display = display_text;
    for line in important_lines(&entry.end_lines, &entry.end_marks) {
      display.push('\n');
      display.push_str(&strip_display_control_chars(line));
    }
    display
  };
  let mut n = build(entry, status, display, model, NotificationKind::Terminal);
  n.meta.end = entry.end.clone();
  n.meta.dropped_since = digest.map(|d| d.count);
  if !entry.end_lines.is_empty() {
    n.meta.lines = Some(entry.end_lines.clone());
  }
  n
}

/// `<result>…</result>` from escaped content, the digest line at its end; no
/// element when there is neither.
fn push_result(model: &mut Vec<String>, result: Option<String>, digest: Option<&DigestNote>) {
  if let Some(result) = result_with_digest(result, digest) {
    model.push(format!("<result>{result}</result>"));
  }
}

/// The display text with the digest line on a line of its own (not escaped:
/// display texts never are).
fn with_digest_display(mut display: String, digest: Option<&DigestNote>) -> String {
  if let Some(note) = digest {
    display.push('\n');
    display.push_str(&digest_display_line(note));
  }
  display
}

fn envelope_head(entry: &MonitorEntry, status: MonitorStatus) -> Vec<String> {
  let mut lines = vec![
    "<task-notification>".to_owned(),
    format!("<task-id>{}</task-id>", escape_xml(&entry.id)),
  ];
  if let Some(tool_use_id) = entry.tool_use_id.as_deref().filter(|t| !t.is_empty()) {
    lines.push(format!(
      "<tool-use-id>{}</tool-use-id>",
      escape_xml(tool_use_id)
    ));
  }
  lines.push("<kind>monitor</kind>".to_owned());
  lines.push(format!("<status>{}</status>", escape_xml(status.as_str())));
  lines.push(format!("<event-count>{}</event-count>", entry.event_count));
  lines
}

fn build(
  entry: &MonitorEntry,
  status: MonitorStatus,
  display_text: String,
  model: Vec<String>,
  kind: NotificationKind,
) -> Notification {
  Notification {
    display_text,
    model_text: model.join("\n"),
    meta: NotificationMeta {
      kind,
      end: None,
      monitor_id: entry.id.clone(),
      status,
      event_count: entry.event_count,
      tool_use_id: entry.tool_use_id.clone(),
      owner_agent_id: entry.owner_agent_id.clone(),
      todo_work_chain_id: entry.todo_work_chain_id.clone(),
      lines: None,
      dropped_since: None,
    },
    route: match entry.owner() {
      Some(owner) => Route::Agent(owner.to_owned()),
      None => Route::Global,
    },
  }
}
