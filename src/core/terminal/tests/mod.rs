//! The screen model on known byte streams: text, cursor, title, the
//! visible-change rule, and streams split at every offset.

use super::*;

fn size(cols: u16, rows: u16) -> TerminalSize {
  TerminalSize { cols, rows }
}

fn screen_of(cols: u16, rows: u16, bytes: &[u8]) -> Screen {
  let mut screen = Screen::new(size(cols, rows), 0);
  screen.feed(bytes, 1);
  screen
}

fn cursor(row: u16, col: u16) -> CursorPosition {
  CursorPosition { row, col }
}

#[test]
fn a_blank_screen() {
  let mut screen = Screen::new(TerminalSize::DEFAULT, 42);
  let snapshot = screen.snapshot();
  assert_eq!(
    snapshot,
    ScreenSnapshot {
      text: String::new(),
      cursor: cursor(0, 0),
      cols: 120,
      rows: 40,
      title: None,
      changed_at: 42,
    }
  );
}

#[test]
fn text_is_trimmed_rows_joined_by_newlines() {
  // The terminal turns `\n` into `\r\n`; trailing spaces, inner empty rows,
  // trailing empty rows.
  let mut screen = screen_of(20, 6, b"one   \r\n\r\n  three\r\n\r\n");
  assert_eq!(screen.text(), "one\n\n  three");
  assert_eq!(screen.cursor(), cursor(4, 0));
  // Leading empty rows stay.
  let mut screen = screen_of(20, 6, b"\r\n\r\nthird");
  assert_eq!(screen.text(), "\n\nthird");
  assert_eq!(screen.cursor(), cursor(2, 5));
}

#[test]
fn cursor_moves_and_erasing() {
  // CUP to row 3 col 5 (1-based), CR, erase line, cursor up/forward.
  let mut screen = screen_of(20, 5, b"hello world\r\nsecond line");
  assert_eq!(screen.cursor(), cursor(1, 11));
  screen.feed(b"\x1b[3;5Hmid", 2);
  assert_eq!(screen.text(), "hello world\nsecond line\n    mid");
  assert_eq!(screen.cursor(), cursor(2, 7));
  screen.feed(b"\x1b[2;1H\x1b[2K", 3);
  assert_eq!(screen.text(), "hello world\n\n    mid");
  assert_eq!(screen.cursor(), cursor(1, 0));
  // Erase to the end of the line from col 5.
  screen.feed(b"\x1b[1;6H\x1b[K", 4);
  assert_eq!(screen.text(), "hello\n\n    mid");
  // Erase display.
  screen.feed(b"\x1b[2J\x1b[Hfresh", 5);
  assert_eq!(screen.text(), "fresh");
  assert_eq!(screen.cursor(), cursor(0, 5));
  // Overwriting after a carriage return.
  screen.feed(b"\rF", 6);
  assert_eq!(screen.text(), "Fresh");
  assert_eq!(screen.cursor(), cursor(0, 1));
}

#[test]
fn a_carriage_return_progress_bar_shows_its_last_frame() {
  let mut bytes = Vec::new();
  for i in 0..=10 {
    bytes.extend_from_slice(
      format!("\r{:>3}% [{}{}]", i * 10, "#".repeat(i), ".".repeat(10 - i)).as_bytes(),
    );
  }
  bytes.extend_from_slice(b"\r\ndone\r\n");
  let mut screen = screen_of(40, 5, &bytes);
  assert_eq!(screen.text(), "100% [##########]\ndone");
  // A shorter last frame leaves the longer one's tail, as on a terminal,
  // unless the program erases it.
  let mut screen = screen_of(40, 5, b"\rdownloading 10 files\rdone\x1b[K");
  assert_eq!(screen.text(), "done");
  let mut screen = screen_of(40, 5, b"\rdownloading 10 files\rdone");
  assert_eq!(screen.text(), "doneloading 10 files");
}

#[test]
fn the_title_comes_from_osc_0_and_2() {
  let mut screen = screen_of(20, 5, b"\x1b]0;first\x07text");
  assert_eq!(screen.title(), Some("first"));
  assert_eq!(screen.text(), "text");
  screen.feed(b"\x1b]2;second\x1b\\", 2);
  assert_eq!(screen.snapshot().title.as_deref(), Some("second"));
  // OSC 1 is the icon name only.
  screen.feed(b"\x1b]1;icon\x07", 3);
  assert_eq!(screen.title(), Some("second"));
  // A title with semicolons, and UTF-8.
  screen.feed("\x1b]2;a;b;ç\x07".as_bytes(), 4);
  assert_eq!(screen.title(), Some("a;b;ç"));
  // An empty title clears it.
  screen.feed(b"\x1b]2;\x07", 5);
  assert_eq!(screen.title(), None);
  // A title is no visible change.
  assert_eq!(screen.changed_at(), 1);
}

#[test]
fn a_huge_title_is_bounded() {
  let mut screen = Screen::new(size(20, 5), 0);
  screen.feed(b"\x1b]2;", 1);
  for _ in 0..1000 {
    screen.feed(&[b'a'; 10_000], 1);
  }
  screen.feed(b"\x07after", 1);
  let title = screen.title().unwrap();
  assert!(
    title.len() <= 1024 && title.starts_with("aaa"),
    "{}",
    title.len()
  );
  assert_eq!(screen.text(), "after");
}

#[test]
fn wide_and_combining_characters() {
  let mut screen = screen_of(10, 3, "日本\r\ne\u{301}!".as_bytes());
  assert_eq!(screen.text(), "日本\ne\u{301}!");
  assert_eq!(screen.cursor(), cursor(1, 2));
}

#[test]
fn lines_wrap_and_scroll() {
  let mut screen = screen_of(5, 3, b"abcdefgh");
  assert_eq!(screen.text(), "abcde\nfgh");
  // Scrolling drops the top rows (no scrollback is kept).
  let mut screen = screen_of(5, 3, b"1\r\n2\r\n3\r\n4\r\n5");
  assert_eq!(screen.text(), "3\n4\n5");
  assert_eq!(screen.cursor(), cursor(2, 1));
  // Writing to the last column leaves the cursor there.
  let mut screen = screen_of(5, 3, b"abcde");
  assert_eq!(screen.cursor(), cursor(0, 4));
}

#[test]
fn the_alternate_screen_and_back() {
  let mut screen = screen_of(20, 5, b"shell prompt");
  assert!(screen.feed(b"\x1b[?1049h\x1b[Hfull screen app", 20));
  assert_eq!(screen.text(), "full screen app");
  assert!(screen.feed(b"\x1b[?1049l", 30));
  assert_eq!(screen.text(), "shell prompt");
}

#[test]
fn visible_change_is_the_text_only() {
  // Feeds 100 ms apart, so each one is checked.
  let mut screen = Screen::new(size(40, 5), 0);
  assert!(screen.feed(b"working", 100));
  assert_eq!(screen.changed_at(), 100);
  // Identical redraws, a cursor blink, colours, cursor moves, a title:
  // none changes the text.
  for (now, bytes) in [
    (200, &b"\rworking"[..]),
    (300, b"\x1b[?25l"),
    (400, b"\x1b[?25h"),
    (500, b"\r\x1b[1;31mworking\x1b[0m"),
    (600, b"\x1b[3;3H"),
    (700, b"\x1b]0;title\x07"),
    (800, b"\x1b[1;1Hwork"),
    (900, b"\x1b[2;1H   \x08\x08\x08"),
  ] {
    assert!(!screen.feed(bytes, now), "{bytes:?}");
    assert_eq!(screen.check_due(), None);
  }
  assert_eq!(screen.changed_at(), 100);
  // Trailing spaces written over empty cells are no change either...
  assert!(!screen.feed(b"\x1b[1;8H   ", 1000));
  // ...but text is.
  assert!(screen.feed(b"\rworking.", 1100));
  assert_eq!(screen.changed_at(), 1100);
  assert_eq!(screen.snapshot().changed_at, 1100);
  // An empty feed is nothing.
  assert!(!screen.feed(b"", 1200));
}

#[test]
fn checks_are_throttled_and_dated_to_the_last_feed() {
  let mut screen = Screen::new(size(40, 5), 0);
  // The first feed is always checked.
  assert!(screen.feed(b"a", 1000));
  assert_eq!(screen.check_due(), None);
  // Within the interval: parsed (the text is current) but not checked.
  assert!(!screen.feed(b"b", 1003));
  assert_eq!(screen.text(), "ab");
  assert_eq!(screen.changed_at(), 1000);
  assert_eq!(screen.check_due(), Some(1000 + CHECK_INTERVAL_MS));
  assert!(!screen.feed(b"c", 1006));
  // A later feed checks, and dates the change to itself.
  assert!(screen.feed(b"d", 1000 + CHECK_INTERVAL_MS));
  assert_eq!(screen.changed_at(), 1000 + CHECK_INTERVAL_MS);
  assert_eq!(screen.check_due(), None);
  // A pending check run by `refresh` dates the change to the last feed.
  assert!(!screen.feed(b"e", 1012));
  assert!(!screen.feed(b"f", 1015));
  assert!(screen.refresh());
  assert_eq!(screen.changed_at(), 1015);
  assert!(!screen.refresh());
  // Between two checks, a flicker that ends where it started is no change.
  assert!(!screen.feed(b"\r\x1b[2K", 1016));
  assert!(!screen.feed(b"abcdef", 1017));
  assert!(!screen.refresh());
  assert_eq!(screen.changed_at(), 1015);
  // A snapshot runs the pending check.
  assert!(!screen.feed(b"!", 1018));
  assert_eq!(screen.snapshot().changed_at, 1018);
}

#[test]
fn a_resize_is_a_visible_change() {
  let mut screen = screen_of(20, 5, b"abc");
  assert!(screen.resize(size(30, 8), 7));
  assert_eq!(screen.changed_at(), 7);
  let snapshot = screen.snapshot();
  assert_eq!((snapshot.cols, snapshot.rows), (30, 8));
  assert_eq!(snapshot.text, "abc");
  assert_eq!(screen.size(), size(30, 8));
  assert!(!screen.resize(size(30, 8), 9));
  // Narrower cuts rows (the program redraws after its SIGWINCH).
  screen.feed(b"\x1b[2;1Hsomething longer", 10);
  screen.resize(size(5, 8), 11);
  assert_eq!(screen.text(), "abc\nsomet");
}

#[test]
fn queries_are_answered() {
  let mut screen = screen_of(20, 5, b"ab\r\ncd\x1b[6n");
  assert_eq!(screen.take_replies(), b"\x1b[2;3R");
  assert!(screen.take_replies().is_empty());
  screen.feed(b"\x1b[5n\x1b[c\x1b[0c\x1b[>c", 2);
  assert_eq!(screen.take_replies(), b"\x1b[0n\x1b[?6c\x1b[?6c");
}

/// A stream with UTF-8 of every length, escape sequences of every kind
/// (CSI with parameters, OSC with BEL and ST, DEC private modes, charset
/// designation), a redraw loop, scrolling and wrapping.
fn rich_stream() -> Vec<u8> {
  let mut bytes = Vec::new();
  bytes.extend_from_slice(b"\x1b]0;t\xc3\xaftle;x\x07\x1b[?25l");
  bytes.extend_from_slice("héllo wörld €uro 𝄞 日本語\r\n".as_bytes());
  for i in 0..5 {
    bytes.extend_from_slice(format!("\r\x1b[32m{i}/5\x1b[0m [{}]", "=".repeat(i)).as_bytes());
  }
  bytes
    .extend_from_slice(b"\r\n\x1b(0qqq\x1b(B\x1b[2;20H\x1b[1K\x1b[5;3Hat 5,3\x1b]2;second\x1b\\");
  bytes.extend_from_slice("a long line that wraps past the edge of the screen ✓\r\n".as_bytes());
  bytes.extend_from_slice(b"\x1b[?25h\x1b[10;1Hlast\x1b[A\x1b[2C^");
  bytes
}

#[test]
fn splitting_a_stream_anywhere_gives_the_same_screen() {
  let bytes = rich_stream();
  let whole = screen_of(30, 10, &bytes).snapshot();
  assert_eq!(whole.title.as_deref(), Some("second"));
  assert!(
    whole.text.contains("héllo wörld €uro 𝄞 日本語"),
    "{}",
    whole.text
  );
  for cut in 0..=bytes.len() {
    let mut screen = Screen::new(size(30, 10), 0);
    screen.feed(&bytes[..cut], 1);
    screen.feed(&bytes[cut..], 1);
    assert_eq!(screen.snapshot(), whole, "split at {cut}");
  }
  // And byte by byte.
  let mut screen = Screen::new(size(30, 10), 0);
  for byte in &bytes {
    screen.feed(std::slice::from_ref(byte), 1);
  }
  assert_eq!(screen.snapshot(), whole);
  // Two cuts: every pair in a shorter stretch around the UTF-8 and OSC.
  for first in 0..60 {
    for second in first..60 {
      let mut screen = Screen::new(size(30, 10), 0);
      screen.feed(&bytes[..first], 1);
      screen.feed(&bytes[first..second], 1);
      screen.feed(&bytes[second..], 1);
      assert_eq!(screen.snapshot(), whole, "split at {first} and {second}");
    }
  }
}

#[test]
fn a_split_identical_redraw_is_still_no_change() {
  // A frame that overwrites itself: whatever the read boundaries, redrawing
  // the same frame changes nothing. Feeds 100 ms apart: each is checked.
  let frame = "\r\x1b[36m⠋\x1b[0m building \x1b[1m42\x1b[0m files".as_bytes();
  let mut screen = Screen::new(size(40, 5), 0);
  assert!(screen.feed(frame, 100));
  let mut now = 100;
  for cut in 0..=frame.len() {
    now += 100;
    assert!(!screen.feed(&frame[..cut], now), "first part at {cut}");
    now += 100;
    assert!(!screen.feed(&frame[cut..], now), "second part at {cut}");
  }
  assert_eq!(screen.changed_at(), 100);
  // A frame that erases its row first shows the erased row when a checked
  // read ends right after the erase: that state was on the screen, so it
  // is two changes. (Programs write a frame in one `write`, which one read
  // of the terminal gets whole; and reads closer than the check interval
  // are judged together.)
  let frame = b"\r\x1b[2Kbuilding";
  screen.feed(frame, now + 100);
  assert!(!screen.feed(frame, now + 200));
  assert!(screen.feed(b"\r\x1b[2K", now + 300));
  assert!(screen.feed(b"building", now + 400));
  assert_eq!(screen.changed_at(), now + 400);
}

#[test]
fn settled_text_keeps_the_bottom_within_2000_units() {
  assert_eq!(settled_text(""), "");
  let short = "a\nb";
  assert_eq!(settled_text(short), short);
  // 40 rows of 100 units: the last 19 whole rows fit (19 × 101 − 1 = 1918).
  let rows: Vec<String> = (0..40)
    .map(|i| format!("{i:02}{}", "x".repeat(98)))
    .collect();
  let text = rows.join("\n");
  let cut = settled_text(&text);
  assert_eq!(cut, rows[21..].join("\n"));
  assert!(cut.starts_with("21x"));
  // Exactly at the limit: kept whole.
  let exact = "y".repeat(SETTLED_TEXT_MAX_UNITS);
  assert_eq!(settled_text(&exact), exact);
  // One row longer than the limit: its end, never half a surrogate pair.
  let astral = "𝄞".repeat(1500);
  let cut = settled_text(&astral);
  assert_eq!(cut.chars().count(), 1000);
  let mixed = format!("{}\n{}", "z".repeat(10), "é".repeat(2500));
  assert_eq!(settled_text(&mixed), "é".repeat(2000));
  // A cut that lands right after a newline keeps that row.
  let rows = format!("{}\n{}", "a".repeat(100), "b".repeat(1999));
  assert_eq!(settled_text(&rows), "b".repeat(1999));
  let rows = format!("{}\n{}", "a".repeat(100), "b".repeat(2000));
  assert_eq!(settled_text(&rows), "b".repeat(2000));
  // The screen's helper.
  let mut screen = Screen::new(size(100, 40), 0);
  for i in 0..40 {
    screen.feed(format!("{i:02}{}\r\n", "x".repeat(98)).as_bytes(), 1);
  }
  let text = screen.settled_text();
  assert!(crate::text::utf16_len(&text) <= SETTLED_TEXT_MAX_UNITS);
  assert!(text.ends_with("39".to_owned().as_str()) || text.contains("39x"));
}

#[test]
fn one_rule_says_which_task_takes_terminal_input() {
  use crate::terminal::TerminalRefusal::{self, Ended, NoTerminal, Unknown};
  let check = |known, running, task: Option<u8>, had_one| {
    TerminalRefusal::check(known, running, task, had_one)
  };
  assert_eq!(check(false, false, Some(1), true), Err(Unknown));
  assert_eq!(check(true, true, Some(1), false), Ok(1));
  // Settled while its terminal still closes, or ended with its screen kept: it ended.
  assert_eq!(check(true, false, Some(1), false), Err(Ended));
  assert_eq!(check(true, false, None, true), Err(Ended));
  assert_eq!(check(true, true, None, false), Err(NoTerminal));
  assert_eq!(check(true, false, None, false), Err(NoTerminal));
}
