//! The exact texts of monitor notifications (CONTRACT.md §2.2).

use super::entry::{MonitorEntry, MonitorStatus};
use crate::core::end::TaskEnd;
use crate::core::text::{
  escape_xml, strip_display_control_chars, truncate_notification_label, truncate_utf16, utf16_len,
};

/// `EVENT_LINE_TRUNCATE`: event lines longer than this many UTF-16 units are cut.
pub const EVENT_LINE_TRUNCATE_UNITS: usize = 2000;

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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
  pub display_text: String,
  pub model_text: String,
  pub meta: NotificationMeta,
  pub route: Route,
}

/// Cuts an event line above 2000 units and marks it, never splitting a surrogate pair.
pub fn truncate_event_line(line: &str) -> std::borrow::Cow<'_, str> {
  if line.len() > EVENT_LINE_TRUNCATE_UNITS && utf16_len(line) > EVENT_LINE_TRUNCATE_UNITS {
    let mut out = truncate_utf16(line, EVENT_LINE_TRUNCATE_UNITS).to_owned();
    out.push_str("...[truncated]");
    out.into()
  } else {
    line.into()
  }
}

/// The notification for accepted event number `entry.event_count`; `line` is already truncated.
pub fn event_notification(entry: &MonitorEntry, line: &str) -> Notification {
  let desc = truncate_notification_label(&entry.description);
  let shown = strip_display_control_chars(line);
  let n = entry.event_count;
  let display_text = format!("Monitor \"{desc}\" event #{n}: {shown}");
  let mut model = envelope_head(entry, MonitorStatus::Running);
  model.push(format!(
    "<summary>Monitor \"{}\" emitted event #{n}.</summary>",
    escape_xml(&desc)
  ));
  model.push(format!("<result>{}</result>", escape_xml(&shown)));
  model.push("</task-notification>".to_owned());
  build(
    entry,
    MonitorStatus::Running,
    display_text,
    model,
    NotificationKind::Event,
  )
}

/// The settled notification (API.md §6.2): no output byte for `settle_ms`;
/// `<result>` quotes the last line read, accepted or dropped, cut and
/// escaped as an event result is.
pub fn settled_notification(entry: &MonitorEntry, settle_ms: u64) -> Notification {
  let desc = truncate_notification_label(&entry.description);
  let summary = format!("Monitor \"{desc}\" output settled: no output for {settle_ms} ms.");
  let mut model = envelope_head(entry, MonitorStatus::Running);
  model.push(format!(
    "<summary>Monitor \"{}\" output settled: no output for {settle_ms} ms.</summary>",
    escape_xml(&desc)
  ));
  if let Some(line) = entry.last_line.as_deref() {
    let shown = strip_display_control_chars(&truncate_event_line(line));
    model.push(format!("<result>{}</result>", escape_xml(&shown)));
  }
  model.push("</task-notification>".to_owned());
  build(
    entry,
    MonitorStatus::Running,
    summary,
    model,
    NotificationKind::Settled,
  )
}

/// The terminal notification of a settled entry, with the detail of its terminal path.
pub fn terminal_notification(entry: &MonitorEntry, detail: Option<&str>) -> Notification {
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
  if let Some(detail) = detail.filter(|d| !d.is_empty()) {
    model.push(format!(
      "<result>{}</result>",
      escape_xml(&strip_display_control_chars(detail))
    ));
  }
  model.push("</task-notification>".to_owned());
  let mut n = build(
    entry,
    status,
    display_text,
    model,
    NotificationKind::Terminal,
  );
  n.meta.end = entry.end.clone();
  n
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
    },
    route: match entry.owner() {
      Some(owner) => Route::Agent(owner.to_owned()),
      None => Route::Global,
    },
  }
}
