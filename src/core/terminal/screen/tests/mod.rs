//! Plain text kept back and dropped (screen/mod.rs "Lines that scroll away"):
//! the screen must be exactly what drawing every byte gives.

use super::*;

fn size(cols: u16, rows: u16) -> TerminalSize {
  TerminalSize { cols, rows }
}

fn cursor(row: u16, col: u16) -> CursorPosition {
  CursorPosition { row, col }
}

/// The visible text of a bare `vt100` screen, as [`Screen::text`] renders it.
fn reference_text(parser: &vt100::Parser<Callbacks>) -> String {
  let screen = parser.screen();
  let (_, cols) = screen.size();
  let rows: Vec<String> = screen
    .rows(0, cols.get())
    .map(|row| row.trim_end_matches(' ').to_owned())
    .collect();
  let last = rows.iter().rposition(|row| !row.is_empty());
  last.map_or_else(String::new, |last| rows[..=last].join("\n"))
}

/// `vt100` alone, with the screen's callbacks (titles).
fn reference_parser(cols: usize, rows: usize) -> vt100::Parser<Callbacks> {
  let rows = std::num::NonZeroU16::new(rows as u16).unwrap();
  let cols = std::num::NonZeroU16::new(cols as u16).unwrap();
  vt100::Parser::new_with_callbacks(rows, cols, 0, Callbacks::default())
}

/// A small deterministic generator (xorshift64*).
struct Random(u64);

impl Random {
  fn next(&mut self) -> u64 {
    self.0 ^= self.0 >> 12;
    self.0 ^= self.0 << 25;
    self.0 ^= self.0 >> 27;
    self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
  }
  fn below(&mut self, n: usize) -> usize {
    (self.next() % n as u64) as usize
  }
}

/// A stream mixing long runs of plain lines (which the screen keeps back and
/// drops) with everything that must stop that: escape sequences of every
/// kind (some split by line feeds, cancelled, or left open), scroll
/// regions, the alternate screen, insert mode, autowrap off, saved cursors,
/// UTF-8 (valid, invalid, split), C0 and C1 controls, `\n` without `\r`.
fn random_stream(random: &mut Random, cols: usize) -> Vec<u8> {
  const PIECES: &[&[u8]] = &[
    b"\x1b[2J",
    b"\x1b[H",
    b"\x1b[3;4H",
    b"\x1b[K",
    b"\x1b[1J",
    b"\x1b[1;31m",
    b"\x1b[0m",
    b"\x1b[2;3r",
    b"\x1b[r",
    b"\x1b[1;99r",
    b"\x1b[?1049h",
    b"\x1b[?1049l",
    b"\x1b[?47h",
    b"\x1b[4h",
    b"\x1b[4l",
    b"\x1b[?7l",
    b"\x1b[?7h",
    b"\x1b7",
    b"\x1b8",
    b"\x1bM",
    b"\x1b[2S",
    b"\x1b[T",
    b"\x1b[2L",
    b"\x1b[M",
    b"\x1b[3@",
    b"\x1b[P",
    b"\x1b[3A",
    b"\x1b[10G",
    b"\x1b[2b",
    b"\x1b]0;a title\x07",
    b"\x1b]2;with\nline\x1b\\",
    b"\x1bPq#0;1\r\nabc\x1b\\",
    b"\x1b_apc text\r\n\x1b\\",
    b"\x1b[1\r\n2H",
    b"\x1b[5\x18x",
    b"\x1b[?25l",
    b"\x1b(0qqq\x1b(B",
    b"\x1bc",
    b"\x1b",
    b"\x1b[",
    b"\x1b]0;open",
    b"\x07",
    b"\x08\x08",
    b"\x0b\x0c",
    b"\x0e\x0f",
    b"\x00\x7f",
    "é日本".as_bytes(),
    "e\u{301}".as_bytes(),
    b"\xe6\x97",
    b"\xa5",
    b"\xff\xfe",
    b"\xc2\x9b",
    b"\x9b",
    b"\xc2\x85",
    b"\n",
    b"\r",
    b"\t",
  ];
  let mut out = Vec::new();
  for _ in 0..40 {
    match random.below(4) {
      // A run of plain lines, long enough to be dropped.
      0 | 1 => {
        let lines = random.below(60);
        let ending: &[u8] = match random.below(6) {
          0 => b"\n",
          1 => b"\r",
          2 => b"\n\r",
          _ => b"\r\n",
        };
        for _ in 0..lines {
          let len = random.below(2 * cols + 2);
          for _ in 0..len {
            let byte = if random.below(12) == 0 {
              b'\t'
            } else {
              b' ' + random.below(95) as u8
            };
            out.push(byte);
          }
          out.extend_from_slice(ending);
        }
      }
      _ => out.extend_from_slice(PIECES[random.below(PIECES.len())]),
    }
  }
  out
}

/// Plain text kept back and dropped gives the same screen as drawing every
/// byte: after random streams split at random offsets, looked at (which
/// draws what is kept) at random moments.
#[test]
fn dropping_plain_text_that_scrolls_away_changes_nothing_visible() {
  let mut random = Random(0x9e37_79b9_7f4a_7c15);
  let mut dropped = 0;
  for round in 0..1000 {
    let (cols, rows) = [(10, 4), (20, 6), (7, 2), (30, 10), (1, 1)][round % 5];
    let stream = random_stream(&mut random, cols);
    let mut screen = Screen::new(size(cols as u16, rows as u16), 0);
    let mut reference = reference_parser(cols, rows);
    let mut at = 0;
    while at < stream.len() {
      let end = (at + 1 + random.below(300)).min(stream.len());
      screen.feed(&stream[at..end], 0);
      reference.process(&stream[at..end]);
      dropped += usize::from(screen.kept.dropped);
      at = end;
      if random.below(5) == 0 || at == stream.len() {
        let context = || format!("round {round}, {cols}x{rows}, after {at} bytes of {stream:?}");
        assert_eq!(screen.text(), reference_text(&reference), "{}", context());
        let (row, col) = reference.screen().cursor_position();
        let expected = cursor(row.min(rows as u16 - 1), col.min(cols as u16 - 1));
        assert_eq!(screen.cursor(), expected, "{}", context());
        assert_eq!(
          screen.title(),
          reference.callbacks().title.as_deref(),
          "{}",
          context()
        );
      }
    }
  }
  // The streams do exercise the dropping.
  assert!(dropped > 300, "{dropped}");
}

#[test]
fn a_plain_firehose_is_drawn_from_its_last_lines_only() {
  let mut screen = Screen::new(size(20, 5), 0);
  let mut reference = reference_parser(20, 5);
  let chunk: Vec<u8> = (0..100)
    .flat_map(|i| format!("line {i}\r\n").into_bytes())
    .collect();
  for _ in 0..50 {
    screen.feed(&chunk, 0);
    reference.process(&chunk);
    // At most the chunk's last 2 × rows + 1 lines (and a few bytes) wait.
    assert!(
      screen.kept.text.len() < 12 * 12,
      "{}",
      screen.kept.text.len()
    );
  }
  assert_eq!(screen.text(), reference_text(&reference));
  assert_eq!(screen.text(), "line 96\nline 97\nline 98\nline 99");
  assert_eq!(screen.cursor(), cursor(4, 0));
}

#[test]
fn a_scroll_region_stops_the_dropping_for_good() {
  let mut screen = Screen::new(size(20, 5), 0);
  // The cursor below the region: every line overwrites the last row.
  screen.feed(b"\x1b[1;3r\x1b[5;1H", 0);
  let mut stream = b"a long first line\r\n".to_vec();
  for _ in 0..30 {
    stream.extend_from_slice(b"x\r\n");
  }
  stream.extend_from_slice(b"\x1b[r");
  for _ in 0..30 {
    stream.extend_from_slice(b"y\r\n");
  }
  screen.feed(&stream, 0);
  let mut reference = reference_parser(20, 5);
  reference.process(b"\x1b[1;3r\x1b[5;1H");
  reference.process(&stream);
  assert_eq!(screen.text(), reference_text(&reference));
  assert!(!screen.kept.may_drop);
}
