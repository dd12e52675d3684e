//! The texts of a batch notification (§6.7), beside `notification::event_notification`, whose
//! envelope they share: `<task-notification>`, `<task-id>`, `<tool-use-id>`, `<kind>`,
//! `<status>running</status>`, `<event-count>` (the count after the batch's last line), then
//! `<summary>` [`batch_summary`] and `<result>` [`batch_result`] (with the digest line appended
//! through `digest::result_with_digest`).
//!
//! Escaping: every function here returns text ready to be placed as it is (the model-text ones
//! escaped, the display one not), so the builder must not escape again. A batch of one line
//! gives exactly the texts of `event_notification`.

use super::lane::Mark;
use crate::monitor::event_line::truncate_event_line;
use crate::text::{escape_xml, strip_display_control_chars};

/// What goes between `<summary>` and `</summary>`, escaped: `Monitor "<desc>" emitted events
/// #<first>–<last>.` (U+2013 EN DASH), or `Monitor "<desc>" emitted event #<n>.` for one line.
/// `desc` is `truncate_notification_label(description)`, as `event_notification` makes it;
/// `first` and `last` are the event numbers of the batch's first and last lines.
pub fn batch_summary(desc: &str, first: u64, last: u64) -> String {
  if first == last {
    format!("Monitor \"{}\" emitted event #{last}.", escape_xml(desc))
  } else {
    format!(
      "Monitor \"{}\" emitted events #{first}\u{2013}{last}.",
      escape_xml(desc)
    )
  }
}

/// What goes between `<result>` and `</result>`, escaped: the lines joined by `\n`, each cut as
/// an event line is (`truncate_event_line`), its display controls stripped and escaped, as
/// `event_notification` does for one.
pub fn batch_result<S: AsRef<str>>(lines: &[S]) -> String {
  let mut result = String::new();
  for (index, line) in lines.iter().enumerate() {
    if index > 0 {
      result.push('\n');
    }
    let cut = truncate_event_line(line.as_ref());
    result.push_str(&escape_xml(&strip_display_control_chars(&cut)));
  }
  result
}

/// The cut lines of a batch, for `meta.lines` (each as `truncate_event_line` leaves it).
pub fn batch_meta_lines<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
  lines
    .iter()
    .map(|line| truncate_event_line(line.as_ref()).into_owned())
    .collect()
}

/// A display text shows at most this many lines of a notification (API.md §6.7 "display").
pub const DISPLAY_LINES: usize = 2;

/// The important lines of a batch, at most [`DISPLAY_LINES`].
pub fn important_lines<'a, S: AsRef<str>>(lines: &'a [S], marks: &'a [Mark]) -> Vec<&'a str> {
  lines
    .iter()
    .zip(marks)
    .filter(|(_, mark)| **mark == Mark::Important)
    .map(|(line, _)| line.as_ref())
    .take(DISPLAY_LINES)
    .collect()
}

/// The lines a display text shows of a batch (API.md §6.7 "display"): its first
/// [`DISPLAY_LINES`] important lines, or, when it has none, its first line.
pub fn shown_lines<'a, S: AsRef<str>>(lines: &'a [S], marks: &'a [Mark]) -> Vec<&'a str> {
  let important = important_lines(lines, marks);
  if important.is_empty() {
    lines.first().map(AsRef::as_ref).into_iter().collect()
  } else {
    important
  }
}

/// The display text (not escaped): a summary row `Monitor "<desc>" events #<first>–<last>: `
/// followed by the first shown line ([`shown_lines`]), then the other shown lines one a row,
/// each cut and stripped as an event's is. Lines not shown are counted on the summary row
/// (` (+<k> more)`), and so are the `dropped` lines of the digest (` [<d> not shown]`), which
/// the model text quotes. For one line and no digest: the event's `Monitor "<desc>" event
/// #<n>: <line>`. (API.md fixes no display text; this one fits a screen.)
pub fn batch_display_text<S: AsRef<str>>(
  desc: &str,
  first: u64,
  last: u64,
  lines: &[S],
  marks: &[Mark],
  dropped: Option<u64>,
) -> String {
  let shown = shown_lines(lines, marks);
  let mut text = if first == last {
    format!("Monitor \"{desc}\" event #{last}")
  } else {
    format!("Monitor \"{desc}\" events #{first}\u{2013}{last}")
  };
  let more = lines.len().saturating_sub(shown.len());
  if more > 0 {
    text.push_str(&format!(" (+{more} more)"));
  }
  if let Some(dropped) = dropped {
    text.push_str(&format!(" [{dropped} not shown]"));
  }
  text.push_str(": ");
  for (index, line) in shown.iter().enumerate() {
    if index > 0 {
      text.push('\n');
    }
    text.push_str(&strip_display_control_chars(&truncate_event_line(line)));
  }
  text
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::monitor::entry::{EntryMode, MonitorEntry, Registration};
  use crate::monitor::notification::event_notification;

  #[test]
  fn a_display_shows_at_most_two_important_lines() {
    let lines = ["e1", "c", "e2", "e3"];
    let marks = [
      Mark::Important,
      Mark::Context,
      Mark::Important,
      Mark::Important,
    ];
    assert_eq!(shown_lines(&lines, &marks), ["e1", "e2"]);
    assert_eq!(
      batch_display_text("d", 1, 4, &lines, &marks, None),
      "Monitor \"d\" events #1\u{2013}4 (+2 more): e1\ne2"
    );
    assert!(important_lines(&lines, &[Mark::Ordinary; 4]).is_empty());
  }

  #[test]
  fn summaries_plural_with_an_en_dash_and_singular_for_one() {
    assert_eq!(
      batch_summary("tail <app>", 3, 7),
      "Monitor \"tail &lt;app&gt;\" emitted events #3\u{2013}7."
    );
    assert_eq!(
      batch_summary("watch", 4, 4),
      "Monitor \"watch\" emitted event #4."
    );
    assert!(batch_summary("w", 1, 2).contains("#1–2."));
  }

  #[test]
  fn result_lines_are_cut_stripped_and_escaped_each() {
    let long = "x".repeat(2500);
    let lines = vec![
      "a <b> & \"c\"".to_owned(),
      long.clone(),
      "bidi\u{202E}gone\ttab".to_owned(),
    ];
    let expected = format!(
      "a &lt;b&gt; &amp; &quot;c&quot;\n{}...[truncated]\nbidigone\ttab",
      "x".repeat(2000)
    );
    assert_eq!(batch_result(&lines), expected);
    assert_eq!(
      batch_meta_lines(&lines),
      [
        lines[0].clone(),
        format!("{}...[truncated]", "x".repeat(2000)),
        lines[2].clone()
      ]
    );
    // No important line: the first line is shown, the others counted.
    assert_eq!(
      batch_display_text("d", 1, 3, &lines, &[Mark::Ordinary; 3], None),
      "Monitor \"d\" events #1\u{2013}3 (+2 more): a <b> & \"c\""
    );
    // Important lines are shown, one a row, cut and stripped; the digest's count on the row.
    assert_eq!(
      batch_display_text(
        "d",
        1,
        3,
        &lines,
        &[Mark::Context, Mark::Important, Mark::Important],
        Some(40)
      ),
      format!(
        "Monitor \"d\" events #1\u{2013}3 (+1 more) [40 not shown]: {}...[truncated]\nbidigone\ttab",
        "x".repeat(2000)
      )
    );
  }

  /// A batch of one line reads as the event notification of that line.
  #[test]
  fn a_batch_of_one_is_the_event_text() {
    // The astral char straddles the 2000-unit cut: left out whole.
    let line = format!("<x> & {}😀 \u{202E}", "y".repeat(1993));
    let mut entry = MonitorEntry::from_registration(
      Registration {
        monitor_id: "mon-1".to_owned(),
        command: "tail -f app.log".to_owned(),
        description: "watch \"app\" <logs>".to_owned(),
        start_time: 0.0,
        last_event_time: 0.0,
        event_count: 0,
        max_events: 1000,
        idle_timeout_ms: 300_000,
        dropped_lines: 0,
        output_file: String::new(),
        pid: None,
        tool_use_id: Some("tu".to_owned()),
        owner_agent_id: None,
        todo_work_chain_id: None,
        mode: EntryMode::Native,
        settle_ms: None,
      },
      0,
    );
    entry.event_count = 9;
    let cut = truncate_event_line(&line);
    let event = event_notification(&entry, &cut);
    let desc = crate::text::truncate_notification_label(&entry.description);
    assert!(event.model_text.contains(&format!(
      "<summary>{}</summary>",
      batch_summary(&desc, 9, 9)
    )));
    assert!(event
      .model_text
      .contains(&format!("<result>{}</result>", batch_result(&[&line]))));
    assert_eq!(
      event.display_text,
      batch_display_text(&desc, 9, 9, &[&line], &[Mark::Ordinary], None)
    );
    assert!(batch_result(&[&line]).ends_with(&format!("{}...[truncated]", "y".repeat(1993))));
  }
}
