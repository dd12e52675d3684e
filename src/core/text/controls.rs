//! Control-character sanitisers for display and for the model (CONTRACT.md §1.7, §2.3, §3.7,
//! §3.9). Every sanitiser here, and the output-tail cleaner, decides through one classifier,
//! [`classify_control`].

use once_cell::sync::Lazy;
use regex::{Captures, Regex};

use super::length::truncate_code_points;
use super::whitespace::is_ecma_whitespace;

/// The tag names of the notification envelope that a monitor line must not be able to forge
/// (CONTRACT.md §1.3 `STRUCTURAL_ENVELOPE_TAGS`).
pub const STRUCTURAL_ENVELOPE_TAGS: [&str; 8] = [
  "task-notification",
  "task-id",
  "tool-use-id",
  "kind",
  "status",
  "event-count",
  "summary",
  "result",
];

/// A notification label longer than this many code points is cut (CONTRACT.md §1.7).
const MAX_LABEL_CODE_POINTS: usize = 80;
/// How many code points of an over-long label are kept before `...`.
const CUT_LABEL_CODE_POINTS: usize = MAX_LABEL_CODE_POINTS - 3;

/// The control characters the sanitisers know about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Control {
  /// U+0009.
  Tab,
  /// LF or CR.
  LineBreak,
  /// Any other C0 control (U+0000–U+001F).
  OtherC0,
  /// DEL, U+007F.
  Delete,
  /// C1 controls, U+0080–U+009F.
  C1,
  /// The bidi embedding/override controls U+202A–U+202E and isolates U+2066–U+2069.
  Bidi,
}

/// The one classifier behind every control-character rule of CONTRACT.md §1.7, §2.14 step 6
/// and §3.7: `None` for an ordinary character.
pub(crate) fn classify_control(c: char) -> Option<Control> {
  match c {
    '\t' => Some(Control::Tab),
    '\n' | '\r' => Some(Control::LineBreak),
    '\0'..='\u{1F}' => Some(Control::OtherC0),
    '\u{7F}' => Some(Control::Delete),
    '\u{80}'..='\u{9F}' => Some(Control::C1),
    '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => Some(Control::Bidi),
    _ => None,
  }
}

/// Copies `text` without the control characters for which `remove` is true.
pub(crate) fn remove_controls(text: &str, remove: impl Fn(Control) -> bool) -> String {
  text
    .chars()
    .filter(|&c| !classify_control(c).is_some_and(&remove))
    .collect()
}

/// `stripDisplayControlChars` (CONTRACT.md §1.7): removes C0 except TAB (LF and CR included),
/// C1 and the bidi controls. DEL stays. Idempotent.
pub fn strip_display_control_chars(text: &str) -> String {
  remove_controls(text, |control| {
    matches!(
      control,
      Control::LineBreak | Control::OtherC0 | Control::C1 | Control::Bidi
    )
  })
}

/// `truncateNotificationLabel` (CONTRACT.md §1.7): strip display controls, collapse each run of
/// ECMAScript whitespace to one space, trim, then cap at 80 code points (77 + `...`).
pub fn truncate_notification_label(label: &str) -> String {
  let collapsed = collapse_whitespace(&strip_display_control_chars(label));
  if collapsed.chars().count() <= MAX_LABEL_CODE_POINTS {
    return collapsed;
  }
  format!(
    "{}...",
    truncate_code_points(&collapsed, CUT_LABEL_CODE_POINTS)
  )
}

/// Replaces each run of ECMAScript whitespace with one space and drops leading and trailing
/// runs (JavaScript `s.replace(/\s+/g, ' ').trim()`).
fn collapse_whitespace(text: &str) -> String {
  let mut out = String::with_capacity(text.len());
  let mut in_run = false;
  for c in text.chars() {
    if is_ecma_whitespace(c) {
      in_run = true;
      continue;
    }
    if in_run && !out.is_empty() {
      out.push(' ');
    }
    in_run = false;
    out.push(c);
  }
  out
}

/// `<name>` or `</name>` (CONTRACT.md §1.3 `STRUCTURAL_TAG_REGEX`).
static STRUCTURAL_TAG: Lazy<Regex> =
  Lazy::new(|| Regex::new(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)>").expect("valid structural tag regex"));

/// `sanitizeMonitorLine` (CONTRACT.md §3.7): deletes C0 except TAB and every C1 character, then
/// defangs each structural envelope tag (name compared case-insensitively) by inserting U+200B
/// after its `<` or `</`, keeping the original case. DEL and bidi controls stay.
pub fn sanitize_monitor_line(line: &str) -> String {
  if sanitize_monitor_line_keeps(line) {
    // The usual log line: one copy, no char-by-char pass, no regex.
    return line.to_owned();
  }
  sanitize_monitor_line_in_full(line)
}

/// [`sanitize_monitor_line`] without the shortcut.
fn sanitize_monitor_line_in_full(line: &str) -> String {
  let cleaned = remove_controls(line, |control| {
    matches!(control, Control::LineBreak | Control::OtherC0 | Control::C1)
  });
  STRUCTURAL_TAG
    .replace_all(&cleaned, |caps: &Captures| {
      let name = &caps[2];
      if is_structural_tag(name) {
        format!("<{}\u{200B}{}>", &caps[1], name)
      } else {
        caps[0].to_owned()
      }
    })
    .into_owned()
}

/// True when [`sanitize_monitor_line`] would return `line` unchanged, judged
/// from its bytes alone (conservatively: any `<`, and any 0xC2 byte, the lead
/// byte of U+0080–U+00BF, count as a change): no C0 control but TAB, no C1
/// control, no tag.
/// Lets a caller that only needs to look at the sanitised line skip the copy.
pub fn sanitize_monitor_line_keeps(line: &str) -> bool {
  line
    .bytes()
    .all(|b| (b >= 0x20 || b == b'\t') && b != b'<' && b != 0xC2)
}

fn is_structural_tag(name: &str) -> bool {
  STRUCTURAL_ENVELOPE_TAGS
    .iter()
    .any(|tag| tag.eq_ignore_ascii_case(name))
}

/// The sequence passes of `stripTerminalControlSequences`, in order: OSC ended by BEL or
/// `ESC \`, CSI `ESC [ [0-9;?]* letter`, and the SS2/SS3/DCS leaders `ESC N|O|P`.
static TERMINAL_SEQUENCE_PASSES: Lazy<[Regex; 3]> = Lazy::new(|| {
  [
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)",
    r"\x1b\[[0-9;?]*[a-zA-Z]",
    r"\x1b[NOP]",
  ]
  .map(|pattern| Regex::new(pattern).expect("valid terminal sequence regex"))
});

/// `stripTerminalControlSequences` (CONTRACT.md §1.7, §3.9; the TypeScript `terminalSafe`
/// helper): each OSC, CSI and SS2/SS3/DCS leader, then every remaining C0, DEL or C1
/// character, becomes one space.
pub fn strip_terminal_control_sequences(text: &str) -> String {
  let mut out = text.to_owned();
  for pass in TERMINAL_SEQUENCE_PASSES.iter() {
    out = pass.replace_all(&out, " ").into_owned();
  }
  out
    .chars()
    .map(|c| match classify_control(c) {
      None | Some(Control::Bidi) => c,
      Some(_) => ' ',
    })
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::test_vectors::{cases, describe};
  use crate::text::test_support::assert_string_vectors;

  #[test]
  fn strip_display_control_chars_vectors() {
    assert_string_vectors("stripDisplayControlChars", strip_display_control_chars);
  }

  #[test]
  fn strip_display_control_chars_is_idempotent() {
    for case in cases("stripDisplayControlChars") {
      let once = strip_display_control_chars(case["input"].as_str().expect("string input"));
      assert_eq!(
        strip_display_control_chars(&once),
        once,
        "{}",
        describe(&case)
      );
    }
  }

  #[test]
  fn truncate_notification_label_vectors() {
    assert_string_vectors("truncateNotificationLabel", truncate_notification_label);
  }

  #[test]
  fn truncate_notification_label_edges() {
    assert_eq!(truncate_notification_label(""), "");
    assert_eq!(truncate_notification_label(" \u{A0}\t\u{2028} "), "");
    assert_eq!(truncate_notification_label("a\u{0}\u{85}b"), "ab");
    let long = format!("{}é", "x".repeat(80));
    assert_eq!(
      truncate_notification_label(&long),
      format!("{}...", "x".repeat(77))
    );
  }

  #[test]
  fn sanitize_monitor_line_vectors() {
    assert_string_vectors("sanitizeMonitorLine", sanitize_monitor_line);
  }

  #[test]
  fn sanitize_monitor_line_keeps_only_what_it_leaves_alone() {
    let cases = [
      "plain line 42",
      "tab\there",
      "é 你好 😀 \u{202E} \u{7F}",
      "a < b",
      "<result>",
      "x\u{0}y",
      "nel\u{85}",
      "\u{A0}nbsp",
      "\r",
      "",
    ];
    for line in cases {
      if sanitize_monitor_line_keeps(line) {
        assert_eq!(sanitize_monitor_line_in_full(line), line, "{line:?}");
      }
    }
    // Random lines of the characters that matter, and the bytes around them.
    let pieces = [
      "a", "Z", " ", "\t", "\u{0}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}", "\u{A0}", "\u{BF}",
      "\u{C0}", "é", "<", ">", "/", "result", "kind", "\u{200B}", "\u{202E}", "😀", "\r", "\n",
    ];
    let mut rng = crate::text::test_support::XorShift(0x5A71_71E5);
    for _ in 0..20_000 {
      let line: String = (0..rng.below(12))
        .map(|_| pieces[rng.below(pieces.len())])
        .collect();
      if sanitize_monitor_line_keeps(&line) {
        assert_eq!(sanitize_monitor_line_in_full(&line), line, "{line:?}");
      } else {
        assert_eq!(
          sanitize_monitor_line(&line),
          sanitize_monitor_line_in_full(&line)
        );
      }
    }
    assert!(sanitize_monitor_line_keeps("plain line 42"));
    assert!(sanitize_monitor_line_keeps("é 你好 😀 \u{202E} \u{7F}"));
    assert!(!sanitize_monitor_line_keeps("x\u{0}y"));
    assert!(!sanitize_monitor_line_keeps("nel\u{85}"));
    assert!(!sanitize_monitor_line_keeps("<result>"));
  }

  #[test]
  fn sanitize_monitor_line_defangs_tags_joined_by_removed_controls() {
    assert_eq!(sanitize_monitor_line("<res\u{0}ult>"), "<\u{200B}result>");
    assert_eq!(sanitize_monitor_line("<<Result>>"), "<<\u{200B}Result>>");
    assert_eq!(sanitize_monitor_line("<div><kind>"), "<div><\u{200B}kind>");
  }

  #[test]
  fn strip_terminal_control_sequences_vectors() {
    assert_string_vectors(
      "stripTerminalControlSequences",
      strip_terminal_control_sequences,
    );
  }

  #[test]
  fn strip_terminal_control_sequences_flattens_every_control() {
    assert_eq!(
      strip_terminal_control_sequences("a\tb\nc\u{7F}d\u{9B}e\u{202E}f"),
      "a b c d e\u{202E}f"
    );
    assert_eq!(strip_terminal_control_sequences("\u{1b}Nx\u{1b}Q"), " x Q");
  }

  #[test]
  fn classifier_covers_each_range_edge() {
    let expect = [
      ('\u{0}', Some(Control::OtherC0)),
      ('\t', Some(Control::Tab)),
      ('\n', Some(Control::LineBreak)),
      ('\r', Some(Control::LineBreak)),
      ('\u{1F}', Some(Control::OtherC0)),
      (' ', None),
      ('\u{7E}', None),
      ('\u{7F}', Some(Control::Delete)),
      ('\u{80}', Some(Control::C1)),
      ('\u{9F}', Some(Control::C1)),
      ('\u{A0}', None),
      ('\u{2029}', None),
      ('\u{202A}', Some(Control::Bidi)),
      ('\u{202E}', Some(Control::Bidi)),
      ('\u{202F}', None),
      ('\u{2065}', None),
      ('\u{2066}', Some(Control::Bidi)),
      ('\u{2069}', Some(Control::Bidi)),
      ('\u{206A}', None),
    ];
    for (c, control) in expect {
      assert_eq!(classify_control(c), control, "{:?}", c);
    }
  }
}
