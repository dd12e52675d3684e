//! `digest` (§6.7): what the throttle dropped since the previous notification of a monitor.
//!
//! Cheap on a firehose: a drop bumps a counter and copies a bounded prefix of the line into a
//! reused buffer (the first line once, the last one overwritten): no allocation once the
//! buffers have their size, and a raw line is sanitised only when it is quoted.

use super::template::TemplateTally;
use crate::text::{
  escape_xml, plain_line_texts, sanitize_monitor_line, strip_display_control_chars, truncate_utf16,
};

/// Dropped lines are quoted with their first 200 UTF-16 units.
pub const DIGEST_LINE_UNITS: usize = 200;

/// Lines dropped since the previous notification, as [`DropDigest::take`] hands them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestNote {
  /// `meta.droppedSince`; at least 1.
  pub count: u64,
  /// The first dropped line (sanitised, cut to 200 units, not escaped).
  pub first: String,
  /// The last dropped line, as `first`; the same text as `first` when `count` is 1.
  pub last: String,
  /// With `digest: 'templates'`: the dropped lines tallied by template ([`TemplateTally`]),
  /// most lines first, as (lines, template); `None` for `digest: true`.
  pub templates: Option<Vec<(u64, String)>>,
}

impl DigestNote {
  /// This note followed by `later` (two flushes before one notification): one count, the first
  /// line of this one, the last of `later`, the templates added up.
  pub fn merged(self, later: DigestNote) -> DigestNote {
    let templates = match (self.templates, later.templates) {
      (Some(mut all), Some(more)) => {
        for (lines, template) in more {
          match all.iter_mut().find(|(_, t)| *t == template) {
            Some(group) => group.0 += lines,
            None => all.push((lines, template)),
          }
        }
        all.sort_by_key(|g| std::cmp::Reverse(g.0));
        Some(all)
      }
      (one, other) => one.or(other),
    };
    DigestNote {
      count: self.count + later.count,
      first: self.first,
      last: later.last,
      templates,
    }
  }
}

/// Counts dropped lines and remembers the first and the last, cut to 200 units.
#[derive(Debug, Clone, Default)]
pub struct DropDigest {
  count: u64,
  first: Quote,
  last: Quote,
  /// With `digest: 'templates'`.
  tally: Option<TemplateTally>,
}

/// A remembered line: either already sanitised and cut, or a raw prefix long enough that
/// sanitising it gives the sanitised line's first 200 units (see [`raw_prefix`]). Raw prefixes
/// let a firehose of dropped lines skip the sanitiser: only the line that is finally quoted is
/// sanitised, at [`DropDigest::take`].
#[derive(Debug, Clone, Default)]
struct Quote {
  text: String,
  raw: bool,
}

impl Quote {
  fn with_capacity() -> Self {
    Self {
      text: String::with_capacity(RAW_PREFIX_BYTES),
      raw: false,
    }
  }

  fn set(&mut self, text: &str, raw: bool) {
    self.text.clear();
    self.text.push_str(text);
    self.raw = raw;
  }

  fn quoted(&self) -> String {
    if self.raw {
      truncate_utf16(&sanitize_monitor_line(&self.text), DIGEST_LINE_UNITS).to_owned()
    } else {
      self.text.clone()
    }
  }
}

/// Kept chars a raw prefix carries past the first 200 kept units: a structural tag whose `<` is
/// among those units ends within them (`</` + the longest tag name, 17, + `>`), so the
/// sanitiser defangs it in the prefix as it does in the whole line.
const TAG_SLACK_CHARS: usize = 20;
/// What a raw prefix usually takes, so that a buffer of this size rarely grows.
const RAW_PREFIX_BYTES: usize = 4 * (DIGEST_LINE_UNITS + TAG_SLACK_CHARS);

/// The shortest prefix of `raw` that sanitises to the first 200 units of the sanitised line:
/// up to 200 units of kept chars (the sanitiser removes line breaks, other C0 controls and C1
/// controls; it only ever inserts elsewhere) and [`TAG_SLACK_CHARS`] more kept chars.
fn raw_prefix(raw: &str) -> &str {
  let mut units = 0;
  let mut slack = 0;
  for (index, c) in raw.char_indices() {
    let removed = matches!(c, '\0'..='\u{8}' | '\n'..='\u{1F}' | '\u{80}'..='\u{9F}');
    if removed {
      continue;
    }
    if units >= DIGEST_LINE_UNITS {
      if slack == TAG_SLACK_CHARS {
        return &raw[..index];
      }
      slack += 1;
    } else {
      units += c.len_utf16();
    }
  }
  raw
}

impl DropDigest {
  pub fn new() -> Self {
    Self {
      count: 0,
      first: Quote::with_capacity(),
      last: Quote::with_capacity(),
      tally: None,
    }
  }

  /// A digest that also tallies the dropped lines by template (`digest: 'templates'`).
  pub fn with_templates() -> Self {
    Self {
      tally: Some(TemplateTally::default()),
      ..Self::new()
    }
  }

  /// One dropped line, already sanitised.
  pub fn record_sanitised(&mut self, line: &str) {
    if let Some(tally) = &mut self.tally {
      tally.record(line);
    }
    self.record(truncate_utf16(line, DIGEST_LINE_UNITS), false);
  }

  /// One dropped line as the splitter gave it (not sanitised): only a bounded prefix is copied,
  /// and sanitised only if it is quoted (or tallied).
  pub fn record_raw(&mut self, line: &str) {
    if let Some(tally) = self.tally.as_mut().filter(|t| t.wants_more()) {
      tally.record(&sanitize_monitor_line(line));
    }
    self.record(raw_prefix(line), true);
  }

  /// With templates: whether lines of a run are still tallied one by one
  /// ([`Self::record_run_lines`]).
  pub fn tallies(&self) -> bool {
    self.tally.as_ref().is_some_and(TemplateTally::wants_more)
  }

  /// `lines` (complete plain lines, blank ones skipped) dropped as a run: each is tallied while
  /// the tally wants more; the count, the first and the last as [`Self::record_run`].
  pub fn record_run_lines(&mut self, non_blank: u64, lines: &[u8], first: &str, last: &str) {
    if let Some(tally) = self.tally.as_mut() {
      // Plain lines are ASCII without controls: they sanitise to themselves.
      for line in plain_line_texts(lines).filter(|line| !line.is_empty()) {
        if !tally.wants_more() {
          break;
        }
        tally.record(line);
      }
    }
    let tally = self.tally.take();
    self.record_run(non_blank, first, last);
    self.tally = tally;
  }

  /// `lines` dropped lines given raw (not sanitised), of which only the first and the last
  /// matter: the same as [`Self::record_raw`] for each of them.
  pub fn record_run(&mut self, lines: u64, first: &str, last: &str) {
    if lines == 0 {
      return;
    }
    let tally = self.tally.take();
    self.record_raw(first);
    if lines > 1 {
      self.count += lines - 2;
      self.record_raw(last);
    }
    self.tally = tally;
  }

  fn record(&mut self, text: &str, raw: bool) {
    if self.count == 0 {
      self.first.set(text, raw);
    }
    self.last.set(text, raw);
    self.count += 1;
  }

  /// Lines dropped since the last [`Self::take`].
  pub fn count(&self) -> u64 {
    self.count
  }

  /// At each notification of the monitor (event, batch, settled, terminal): the lines dropped
  /// since the previous one, if any, and a fresh start.
  pub fn take(&mut self) -> Option<DigestNote> {
    if self.count == 0 {
      return None;
    }
    let note = DigestNote {
      count: self.count,
      first: self.first.quoted(),
      last: self.last.quoted(),
      templates: self.tally.as_mut().map(TemplateTally::take),
    };
    self.count = 0;
    Some(note)
  }
}

/// The digest line, escaped for the model text (it goes inside `<result>`, whose other lines
/// are escaped too; do not escape it again):
/// `[<N> lines dropped since the last notification; first: <line>; last: <line>]`, or for one
/// line `[1 line dropped since the last notification: <line>]`. Each quoted line is its first
/// 200 units (already cut by [`DropDigest::record`]), without a cut marker, display controls
/// stripped as in an event `<result>`, then escaped.
pub fn digest_line(note: &DigestNote) -> String {
  format_digest(note, escape_xml)
}

/// [`digest_line`] for a display text: the same line, not escaped.
pub fn digest_display_line(note: &DigestNote) -> String {
  format_digest(note, str::to_owned)
}

/// Templates a `digest: 'templates'` line names; the other lines are counted as `+<k> more`.
pub const DIGEST_TEMPLATES_SHOWN: usize = 2;

fn format_digest(note: &DigestNote, finish: impl Fn(&str) -> String) -> String {
  let quote = |line: &str| {
    finish(&strip_display_control_chars(truncate_utf16(
      line,
      DIGEST_LINE_UNITS,
    )))
  };
  if let Some(templates) = &note.templates {
    if note.count == 1 {
      return format!("[1 line not shown: {}]", quote(&note.first));
    }
    let mut text = format!("[{} lines not shown:", note.count);
    let mut named = 0;
    for (index, (lines, template)) in templates.iter().take(DIGEST_TEMPLATES_SHOWN).enumerate() {
      let sep = if index == 0 { " " } else { "; " };
      text.push_str(&format!("{sep}{lines}\u{d7} {}", quote(template)));
      named += lines;
    }
    let more = note.count.saturating_sub(named);
    if more > 0 {
      let sep = if named == 0 { " " } else { "; " };
      text.push_str(&format!("{sep}+{more} more"));
    }
    text.push(']');
    return text;
  }
  if note.count == 1 {
    format!(
      "[1 line dropped since the last notification: {}]",
      quote(&note.first)
    )
  } else {
    format!(
      "[{} lines dropped since the last notification; first: {}; last: {}]",
      note.count,
      quote(&note.first),
      quote(&note.last)
    )
  }
}

/// The content of a notification's `<result>` with the digest line at its end: `result` (already
/// escaped, as the notification builders make it) + `\n` + [`digest_line`]; the digest line
/// alone when the notification had no `<result>` (a terminal notification without detail);
/// `result` unchanged without a note.
pub fn result_with_digest(result: Option<String>, note: Option<&DigestNote>) -> Option<String> {
  match (result, note) {
    (Some(mut result), Some(note)) => {
      result.push('\n');
      result.push_str(&digest_line(note));
      Some(result)
    }
    (None, Some(note)) => Some(digest_line(note)),
    (result, None) => result,
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::text::utf16_len;

  #[test]
  fn nothing_dropped_gives_no_note() {
    let mut d = DropDigest::new();
    assert_eq!(d.take(), None);
    assert_eq!(d.count(), 0);
  }

  #[test]
  fn counts_first_and_last_then_resets() {
    let mut d = DropDigest::new();
    for line in ["one", "two", "three"] {
      d.record_sanitised(line);
    }
    assert_eq!(d.count(), 3);
    assert_eq!(
      d.take(),
      Some(DigestNote {
        count: 3,
        first: "one".into(),
        last: "three".into(),
        templates: None,
      })
    );
    assert_eq!(d.take(), None);
    d.record_sanitised("four");
    assert_eq!(
      d.take(),
      Some(DigestNote {
        count: 1,
        first: "four".into(),
        last: "four".into(),
        templates: None,
      })
    );
  }

  #[test]
  fn a_firehose_does_not_grow_the_buffers() {
    let mut d = DropDigest::new();
    let long = "é".repeat(10_000);
    d.record_sanitised(&long);
    let (first, last) = (d.first.text.as_ptr(), d.last.text.as_ptr());
    for i in 0..10_000 {
      d.record_sanitised(if i % 2 == 0 { &long } else { "short" });
    }
    for i in 0..10_000 {
      d.record_raw(if i % 2 == 0 { &long } else { "\x01raw" });
    }
    assert_eq!((d.first.text.as_ptr(), d.last.text.as_ptr()), (first, last));
    assert_eq!(d.count(), 20_001);
    let note = d.take().unwrap();
    assert_eq!(note.first, "é".repeat(200));
    assert_eq!(note.last, "raw");
  }

  #[test]
  fn exact_texts_singular_and_plural() {
    let one = DigestNote {
      count: 1,
      first: "x".into(),
      last: "x".into(),
      templates: None,
    };
    assert_eq!(
      digest_line(&one),
      "[1 line dropped since the last notification: x]"
    );
    let many = DigestNote {
      count: 1234,
      first: "a <b> & 'c'".into(),
      last: "z\u{202E}z".into(),
      templates: None,
    };
    assert_eq!(
      digest_line(&many),
      "[1234 lines dropped since the last notification; first: a &lt;b&gt; &amp; &apos;c&apos;; last: zz]"
    );
  }

  #[test]
  fn lines_are_cut_to_200_units_never_splitting_a_pair() {
    let mut d = DropDigest::new();
    // 199 units then an astral char (2 units): it does not fit whole and is left out.
    let at_boundary = format!("{}😀tail", "a".repeat(199));
    // 198 units then the astral char: exactly 200 units, kept.
    let fits = format!("{}😀tail", "b".repeat(198));
    d.record_sanitised(&at_boundary);
    d.record_sanitised(&fits);
    let note = d.take().unwrap();
    assert_eq!(note.first, "a".repeat(199));
    assert_eq!(note.last, format!("{}😀", "b".repeat(198)));
    assert_eq!(
      digest_line(&note),
      format!(
        "[2 lines dropped since the last notification; first: {}; last: {}😀]",
        "a".repeat(199),
        "b".repeat(198)
      )
    );
    // A note built by hand is cut at formatting too; escaping comes after the cut.
    let note = DigestNote {
      count: 1,
      first: format!("{}<<<", "c".repeat(199)),
      last: String::new(),
      templates: None,
    };
    assert_eq!(
      digest_line(&note),
      format!(
        "[1 line dropped since the last notification: {}&lt;]",
        "c".repeat(199)
      )
    );
  }

  #[test]
  fn the_digest_line_ends_the_result() {
    let note = DigestNote {
      count: 2,
      first: "a".into(),
      last: "b".into(),
      templates: None,
    };
    let line = "[2 lines dropped since the last notification; first: a; last: b]";
    assert_eq!(
      result_with_digest(Some("Exited with code 0".into()), Some(&note)).as_deref(),
      Some(format!("Exited with code 0\n{line}").as_str())
    );
    assert_eq!(result_with_digest(None, Some(&note)).as_deref(), Some(line));
    assert_eq!(
      result_with_digest(Some("r".into()), None).as_deref(),
      Some("r")
    );
    assert_eq!(result_with_digest(None, None), None);
  }

  /// A raw line recorded through its bounded prefix quotes exactly what the sanitised line
  /// quotes: controls before and across the cut, structural tags straddling it, astral chars.
  #[test]
  fn raw_prefixes_quote_what_the_sanitised_line_quotes() {
    use crate::text::test_support::XorShift;
    let pieces = [
      "a",
      "é",
      "😀",
      "\t",
      "\x01",
      "\x1b",
      "\r",
      "\u{85}",
      "\u{9f}",
      "\u{202E}",
      "<",
      ">",
      "/",
      "<result>",
      "</result>",
      "<task-notification>",
      "</TASK-NOTIFICATION>",
      "<summary",
      "<kind>",
      "<b>",
      "<a-very-long-harmless-tag-name>",
      "\u{200B}",
      " ",
    ];
    let mut rng = XorShift(0x005E_EDD1_6E57);
    for round in 0..3000 {
      let mut line = String::new();
      // Around the 200-unit boundary most of the time.
      let target = [150, 190, 199, 200, 201, 230, 400][rng.below(7)];
      while utf16_len(&line) < target {
        line.push_str(pieces[rng.below(pieces.len())]);
      }
      if round % 3 == 0 {
        // Pad up to the boundary so that a tag straddles it.
        let pad = 200usize.saturating_sub(utf16_len(&line)) + rng.below(20);
        line = format!("{}{}", "x".repeat(pad.min(195)), line);
      }
      let sanitised = sanitize_monitor_line(&line);
      let mut by_raw = DropDigest::new();
      let mut by_clean = DropDigest::new();
      by_raw.record_raw(&line);
      by_clean.record_sanitised(&sanitised);
      assert_eq!(by_raw.take(), by_clean.take(), "line {line:?}");
    }
    // A tag that starts at unit 199 and ends past the slack of a naive cut.
    let line = format!("{}</task-notification>tail", "q".repeat(199));
    let mut d = DropDigest::new();
    d.record_raw(&line);
    let note = d.take().unwrap();
    assert_eq!(note.first, format!("{}<", "q".repeat(199)));
    let line = format!("{}</task-notification>tail", "q".repeat(197));
    d.record_raw(&line);
    assert_eq!(
      d.take().unwrap().first,
      format!("{}</\u{200B}", "q".repeat(197))
    );
  }
}
