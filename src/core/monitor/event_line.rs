//! How an event line is cut before it goes into a notification (CONTRACT.md §2.2): shared by
//! the single-line texts (`notification`) and the batch texts (`signal::text`), below both.

use crate::text::{truncate_utf16, utf16_len};

/// `EVENT_LINE_TRUNCATE`: event lines longer than this many UTF-16 units are cut.
pub const EVENT_LINE_TRUNCATE_UNITS: usize = 2000;

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
