//! Tests of `readTaskOutput`: the concatenation property on random outputs at every `maxBytes`
//! from 4 to 64, the stopping rules one by one, grep, and the file-opening rules on real files.

use std::io;

use regex::Regex;

use super::super::fast::incomplete_utf8_tail;
use super::super::output_text::sanitize_output;
use super::super::read_output::*;
use crate::text::clean_output_text;
use crate::text::test_support::{TempDir, XorShift};

impl ReadAt for [u8] {
  fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let from = (offset as usize).min(self.len());
    let n = buf.len().min(self.len() - from);
    buf[..n].copy_from_slice(&self[from..from + n]);
    Ok(n)
  }
}

/// One read of in-memory bytes.
fn read_bytes(
  bytes: &[u8],
  offset: u64,
  max_bytes: usize,
  grep: Option<&Grep>,
) -> (OutputRead, Cut) {
  read_source(bytes, bytes.len() as u64, offset, max_bytes, grep).unwrap_or_else(|_| unreachable!())
}

/// What the whole of `bytes` sanitises to: the reference every concatenation is held to.
fn sanitized(bytes: &[u8]) -> String {
  clean_output_text(&String::from_utf8_lossy(bytes))
}

/// The lines of `text` that `regex` matches alone, each ending with `\n`, and how many.
fn reference_grep(text: &str, regex: &Regex) -> (String, u64) {
  let lines: Vec<&str> = text
    .split_inclusive('\n')
    .map(|line| line.strip_suffix('\n').unwrap_or(line))
    .filter(|line| regex.is_match(line))
    .collect();
  let count = lines.len() as u64;
  (
    lines.into_iter().map(|line| format!("{line}\n")).collect(),
    count,
  )
}

/// A whole poll, from `from` until a read returns `nextOffset === offset`.
struct Poll {
  /// The texts, concatenated.
  text: String,
  /// Where the first read started (after skipping into a character).
  start: u64,
  /// Where the last read ended.
  end: u64,
  /// The offsets where a read had to cut a line (rule 3, second case).
  pieces: Vec<u64>,
  matched: u64,
  reads: usize,
}

fn poll(bytes: &[u8], from: u64, max_bytes: usize, grep: Option<&Grep>) -> Poll {
  let mut out = Poll {
    text: String::new(),
    start: from,
    end: from,
    pieces: Vec::new(),
    matched: 0,
    reads: 0,
  };
  let mut offset = from;
  loop {
    let (read, cut) = read_bytes(bytes, offset, max_bytes, grep);
    out.reads += 1;
    assert!(out.reads <= bytes.len() + 2, "no progress at {offset}");
    if out.reads == 1 {
      out.start = read.offset;
    }
    check_read(bytes, offset, max_bytes, &read, cut, grep.is_some());
    out.text.push_str(&read.text);
    out.matched += read.matched_lines.unwrap_or(0);
    if cut == Cut::Piece {
      out.pieces.push(read.next_offset);
    }
    if read.next_offset == offset {
      out.end = offset;
      let again = read_bytes(bytes, offset, max_bytes, grep).0;
      assert_eq!(again, read, "the end of the file reads the same again");
      return out;
    }
    offset = read.next_offset;
  }
}

/// What every single read must satisfy, whatever the bytes.
fn check_read(
  bytes: &[u8],
  offset: u64,
  max_bytes: usize,
  read: &OutputRead,
  cut: Cut,
  grep: bool,
) {
  let total = bytes.len() as u64;
  let context = format!(
    "offset {offset} maxBytes {max_bytes} {cut:?} in {:?}",
    String::from_utf8_lossy(bytes)
  );
  assert_eq!(read.total_bytes, total, "{context}");
  if offset >= total {
    assert_eq!(
      (read.text.as_str(), read.next_offset, read.truncated),
      ("", total, false)
    );
    return;
  }
  assert!(
    read.offset >= offset && read.offset <= offset + 3,
    "{context}"
  );
  assert!(read.next_offset >= read.offset, "{context}");
  assert!(
    read.next_offset - read.offset <= max_bytes as u64,
    "{context}"
  );
  assert_eq!(
    read.truncated,
    read.offset + (max_bytes as u64) < total,
    "{context}"
  );
  assert_eq!(read.matched_lines.is_some(), grep, "{context}");
  // Never inside a UTF-8 character.
  let next = read.next_offset as usize;
  assert_eq!(
    char_rest(&bytes[next.saturating_sub(3)..next], &bytes[next..]),
    0,
    "{context}"
  );
  match cut {
    Cut::Nothing | Cut::Overwritten => assert_eq!(read.text, "", "{context}"),
    Cut::Lines => assert_eq!(bytes[next - 1], b'\n', "{context}"),
    Cut::Rest => assert!(!grep && !read.truncated, "{context}"),
    Cut::Piece => assert!(
      read.truncated && read.next_offset > read.offset,
      "{context}"
    ),
  }
  if cut == Cut::Overwritten {
    assert_eq!(bytes[next - 1], b'\r', "{context}");
  }
  if !read.truncated && !grep {
    assert_eq!(
      read.next_offset,
      total - incomplete_utf8_tail(&bytes[read.offset as usize..]) as u64,
      "{context}"
    );
  }
}

/// The reference for a poll: the sanitised segments between the places where a line was cut.
fn expected(bytes: &[u8], poll: &Poll, grep: Option<&Regex>) -> (String, u64) {
  let mut bounds = vec![poll.start as usize];
  bounds.extend(poll.pieces.iter().map(|&p| p as usize));
  bounds.push(poll.end as usize);
  let mut text = String::new();
  let mut matched = 0;
  let segments = bounds.len() - 1;
  for (index, pair) in bounds.windows(2).enumerate() {
    let segment = sanitized(&bytes[pair[0]..pair[1]]);
    match grep {
      Some(regex) => {
        // grep tests the last line once it is complete: what a poll leaves after its last
        // `\n` are frames the unfinished line overwrites.
        let complete = if index + 1 == segments {
          segment
            .rfind('\n')
            .map_or("", |newline| &segment[..=newline])
        } else {
          &segment
        };
        let (kept, count) = reference_grep(complete, regex);
        text.push_str(&kept);
        matched += count;
      }
      None => text.push_str(&segment),
    }
  }
  (text, matched)
}

/// Pieces of terminal output: words, multi-byte characters, line ends, `\r` redraws, escape
/// sequences of every kind §2.14 strips (whole, cut short, unterminated), control characters.
const TOKENS: &[&[u8]] = &[
  b"a",
  b"word",
  b"progress 42%",
  b" ",
  b"\t",
  b"\n",
  b"\n",
  b"\n",
  b"\r\n",
  b"\r",
  b"\r",
  b"\r 10%",
  b"\r\x1b[K 20%",
  b"\x1b[2K\r[===>   ] 30%",
  "é".as_bytes(),
  "€".as_bytes(),
  "𝄞".as_bytes(),
  "你好".as_bytes(),
  "✓ ok".as_bytes(),
  "─".as_bytes(),
  b"\x1b[31m",
  b"\x1b[0m",
  b"\x1b[1;32m",
  b"\x1b[?25l",
  b"\x1b[",
  b"\x1b]0;title\x07",
  b"\x1b]8;;http://x\x1b\\",
  b"\x1b]2;unterminated",
  b"\x1bPq#0\x1b\\",
  b"\x1b_apc",
  b"\x1b(B",
  b"\x1b#8",
  b"\x1b",
  b"\x1b\\",
  b"\x07",
  b"\x08",
  b"\x00",
  b"\x7f",
  "\u{85}".as_bytes(),
  "\u{9b}31m".as_bytes(),
  "\u{202e}".as_bytes(),
  "\u{2067}".as_bytes(),
];

/// Invalid UTF-8, mixed into some outputs.
const INVALID: &[&[u8]] = &[b"\xff", b"\xe2\x28", b"\x80\x80", b"\xf0\x9f"];

fn random_output(rng: &mut XorShift, tokens: &[&[u8]], length: usize, invalid: bool) -> Vec<u8> {
  let mut out = Vec::new();
  while out.len() < length {
    if invalid && rng.below(12) == 0 {
      out.extend_from_slice(INVALID[rng.below(INVALID.len())]);
    } else {
      out.extend_from_slice(tokens[rng.below(tokens.len())]);
    }
  }
  out
}

/// The longest line of `bytes`, with its `\n`.
fn longest_line(bytes: &[u8]) -> usize {
  bytes
    .split_inclusive(|&b| b == b'\n')
    .map(<[u8]>::len)
    .max()
    .unwrap_or(0)
}

#[test]
fn successive_reads_concatenate_to_the_sanitised_output_at_every_max_bytes() {
  let mut rng = XorShift(0x5EED_0A7E);
  let mut exact_polls = 0;
  let mut cut_polls = 0;
  for round in 0..120 {
    let length = 20 + rng.below(260);
    let bytes = random_output(&mut rng, TOKENS, length, round % 4 == 3);
    let longest = longest_line(&bytes);
    let from = [0, rng.below(bytes.len()) as u64];
    for max_bytes in 4..=64 {
      for &from in &from {
        let result = poll(&bytes, from, max_bytes, None);
        assert_eq!(
          result.text,
          expected(&bytes, &result, None).0,
          "maxBytes {max_bytes} from {from}: {:?}",
          String::from_utf8_lossy(&bytes)
        );
        if result.pieces.is_empty() {
          // No line was cut: the poll is the sanitised output, exactly.
          assert_eq!(result.text, sanitized(&bytes[result.start as usize..]));
          exact_polls += 1;
        } else {
          cut_polls += 1;
        }
        if longest <= max_bytes {
          assert!(
            result.pieces.is_empty(),
            "every line fits in {max_bytes}: no cut"
          );
        }
      }
    }
  }
  assert!(
    exact_polls > 1000 && cut_polls > 1000,
    "{exact_polls} exact, {cut_polls} cut"
  );
}

#[test]
fn without_redraws_or_escapes_any_max_bytes_is_exact() {
  let tokens: Vec<&[u8]> = TOKENS
    .iter()
    .copied()
    .filter(|t| !t.contains(&b'\r') && !t.contains(&0x1B))
    .collect();
  let mut rng = XorShift(0xC0FFEE);
  for _ in 0..60 {
    let length = 30 + rng.below(300);
    let bytes = random_output(&mut rng, &tokens, length, false);
    for max_bytes in 4..=64 {
      let result = poll(&bytes, 0, max_bytes, None);
      assert_eq!(result.text, sanitized(&bytes), "maxBytes {max_bytes}");
    }
  }
}

#[test]
fn a_progress_line_longer_than_max_bytes_is_exact() {
  // tqdm, curl, docker: thousands of `\r` frames and no `\n` until the end.
  let mut bytes = Vec::new();
  for percent in 0..=100 {
    bytes.extend_from_slice(format!("\r\x1b[K\x1b[32mdownloading\x1b[0m {percent:3}%").as_bytes());
  }
  bytes.extend_from_slice(b"\ndone\n");
  // Exact when each frame, with the next one's `\r` and what precedes its first visible
  // character, fits in maxBytes (the frames here are 29 bytes).
  for max_bytes in [44, 64, 4096] {
    let result = poll(&bytes, 0, max_bytes, None);
    assert_eq!(
      result.text, "downloading 100%\ndone\n",
      "maxBytes {max_bytes}"
    );
  }
  // Shorter windows must cut frames: each piece is sanitised on its own.
  for max_bytes in 4..44 {
    let result = poll(&bytes, 0, max_bytes, None);
    assert_eq!(
      result.text,
      expected(&bytes, &result, None).0,
      "maxBytes {max_bytes}"
    );
    assert!(
      result.text.ends_with("downloading 100%\ndone\n"),
      "maxBytes {max_bytes}"
    );
  }
  // Each read of the redraws returns nothing and moves on.
  let (read, cut) = read_bytes(&bytes, 0, 64, None);
  assert_eq!(
    (read.text.as_str(), cut, read.truncated),
    ("", Cut::Overwritten, true)
  );
  assert_eq!(
    read.next_offset, 30,
    "after the second frame's `\\r`: the third is not yet visible"
  );
}

#[test]
fn reads_stop_after_the_last_line_end_of_the_window() {
  let bytes = b"one\ntwo\r\nthree\n";
  let (read, cut) = read_bytes(bytes, 0, 12, None);
  assert_eq!(
    (read.text.as_str(), read.next_offset, cut),
    ("one\ntwo\n", 9, Cut::Lines)
  );
  // A CRLF split by the window stays whole for the next read.
  let (read, _) = read_bytes(bytes, 0, 8, None);
  assert_eq!((read.text.as_str(), read.next_offset), ("one\n", 4));
  let (read, _) = read_bytes(bytes, 4, 8, None);
  assert_eq!(
    (read.text.as_str(), read.next_offset, read.truncated),
    ("two\n", 9, true)
  );
  let (read, cut) = read_bytes(bytes, 9, 8, None);
  assert_eq!(
    (read.text.as_str(), read.next_offset, read.truncated, cut),
    ("three\n", 15, false, Cut::Rest)
  );
}

#[test]
fn the_end_of_the_file_returns_the_unfinished_line_but_no_unfinished_character() {
  let euro = "€".as_bytes();
  let mut bytes = b"done\nprompt? ".to_vec();
  bytes.extend_from_slice(&euro[..2]);
  let (read, cut) = read_bytes(&bytes, 0, 64, None);
  assert_eq!(
    (read.text.as_str(), read.next_offset, cut),
    ("done\nprompt? ", 13, Cut::Rest)
  );
  assert!(!read.truncated);
  // Reading at nextOffset is the end: '' and nextOffset === offset.
  let (read, cut) = read_bytes(&bytes, 13, 64, None);
  assert_eq!(
    (read.text.as_str(), read.offset, read.next_offset, cut),
    ("", 13, 13, Cut::Nothing)
  );
  // The character completed: it is read whole.
  bytes.push(euro[2]);
  let (read, _) = read_bytes(&bytes, 13, 64, None);
  assert_eq!((read.text.as_str(), read.next_offset), ("€", 16));
}

#[test]
fn an_offset_past_the_end_reads_nothing_and_says_where_the_end_is() {
  let (read, cut) = read_bytes(b"abc\n", 10, 64, None);
  assert_eq!(
    read,
    OutputRead {
      text: String::new(),
      offset: 10,
      next_offset: 4,
      total_bytes: 4,
      truncated: false,
      matched_lines: None
    }
  );
  assert_eq!(cut, Cut::Nothing);
  let (read, _) = read_bytes(b"", 0, 64, Some(&Grep::new("x").unwrap()));
  assert_eq!((read.next_offset, read.matched_lines), (0, Some(0)));
}

#[test]
fn an_offset_inside_a_character_starts_after_it() {
  let bytes = "a€b\n".as_bytes();
  for offset in [2, 3] {
    let (read, _) = read_bytes(bytes, offset, 64, None);
    assert_eq!(
      (read.text.as_str(), read.offset),
      ("b\n", 4),
      "offset {offset}"
    );
  }
  // A stray continuation byte is no character: it reads as U+FFFD, as in the whole file.
  let (read, _) = read_bytes(b"a\x80b\n", 1, 64, None);
  assert_eq!((read.text.as_str(), read.offset), ("\u{FFFD}b\n", 1));
}

#[test]
fn a_cut_line_keeps_escape_sequences_and_characters_whole() {
  let bytes = "\x1b[31mred text\x1b[0m and €€€ more".as_bytes();
  let result = poll(bytes, 0, 8, None);
  assert_eq!(result.text, "red text and €€€ more");
  assert!(!result.pieces.is_empty());
  // An OSC closed by `ESC \` is cut after the terminator, never between.
  let bytes = b"ab\x1b]0;t\x1b\\cdefgh";
  let (read, cut) = read_bytes(bytes, 0, 9, None);
  assert_eq!(
    (read.text.as_str(), read.next_offset, cut),
    ("ab", 9, Cut::Piece)
  );
}

#[test]
fn grep_keeps_matching_complete_lines() {
  let regex = Grep::new(r"^(error|warn)").unwrap();
  let bytes = b"ok 1\nerror: \x1b[31mboom\x1b[0m\nwarn\r\nok 2\nerror: half";
  let (read, cut) = read_bytes(bytes, 0, 4096, Some(&regex));
  assert_eq!(read.text, "error: boom\nwarn\n");
  assert_eq!(read.matched_lines, Some(2));
  // The unfinished last line waits for its `\n`: nextOffset is its start.
  assert_eq!(
    (read.next_offset, cut, read.truncated),
    (37, Cut::Lines, false)
  );
  let (read, cut) = read_bytes(bytes, 37, 4096, Some(&regex));
  assert_eq!(
    (
      read.text.as_str(),
      read.next_offset,
      read.matched_lines,
      cut
    ),
    ("", 37, Some(0), Cut::Nothing)
  );
  let mut finished = bytes.to_vec();
  finished.push(b'\n');
  let (read, _) = read_bytes(&finished, 37, 4096, Some(&regex));
  assert_eq!(
    (read.text.as_str(), read.matched_lines),
    ("error: half\n", Some(1))
  );
  // A redrawn line is tested once, as its last frame.
  let (read, _) = read_bytes(
    b"build 10%\rbuild error\n",
    0,
    64,
    Some(&Grep::new("error").unwrap()),
  );
  assert_eq!(read.text, "build error\n");
  let (read, _) = read_bytes(
    b"error 10%\rbuild done\n",
    0,
    64,
    Some(&Grep::new("error").unwrap()),
  );
  assert_eq!((read.text.as_str(), read.matched_lines), ("", Some(0)));
}

#[test]
fn grep_polls_concatenate_to_the_matching_lines_at_every_max_bytes() {
  let pattern = r"[0-9]%|word$|^$|好";
  let (grep, regex) = (Grep::new(pattern).unwrap(), Regex::new(pattern).unwrap());
  let mut rng = XorShift(0xA11CE);
  for round in 0..60 {
    let length = 20 + rng.below(200);
    let bytes = random_output(&mut rng, TOKENS, length, round % 5 == 4);
    for max_bytes in 4..=64 {
      let result = poll(&bytes, 0, max_bytes, Some(&grep));
      let (text, matched) = expected(&bytes, &result, Some(&regex));
      assert_eq!(
        result.text,
        text,
        "maxBytes {max_bytes}: {:?}",
        String::from_utf8_lossy(&bytes)
      );
      assert_eq!(result.matched, matched);
      // Only an unfinished last line is left, and its complete lines were all tested.
      assert!(!bytes[result.end as usize..].contains(&b'\n'));
    }
  }
}

#[test]
fn the_line_by_line_sanitiser_is_the_tail_sanitiser() {
  let mut rng = XorShift(0x5A71);
  for round in 0..20_000 {
    let length = rng.below(80);
    let bytes = random_output(&mut rng, TOKENS, length, round % 3 == 0);
    assert_eq!(
      sanitize_output(bytes.clone()),
      sanitized(&bytes),
      "{:?}",
      String::from_utf8_lossy(&bytes)
    );
  }
  // Sequences cut, nested and adjacent: short strings over the bytes they are made of.
  let alphabet: &[u8] = b"\x1b\x1b\x1b[]\\(P_#7\x07\r\n a0;mK\x08";
  for _ in 0..50_000 {
    let length = rng.below(24);
    let bytes: Vec<u8> = (0..length)
      .map(|_| alphabet[rng.below(alphabet.len())])
      .collect();
    assert_eq!(
      sanitize_output(bytes.clone()),
      sanitized(&bytes),
      "{:?}",
      String::from_utf8_lossy(&bytes)
    );
  }
  for sample in [
    "a\rb\r\r\n",
    "\r\r\n\r",
    "x\x1b[3\x1b[0my",
    "x\x1b[3\x07m\x1b[",
    "\x1b[1;2 3mz\u{9b}\u{202a}\u{2069}\u{2028}",
    "one\x1b[K\rtwo\x1b[\rthree\x1b[0m\r\x1b[K\n",
  ] {
    assert_eq!(
      sanitize_output(sample.as_bytes().to_vec()),
      sanitized(sample.as_bytes()),
      "{sample:?}"
    );
  }
}

#[test]
fn grep_by_scanning_the_whole_text_keeps_the_lines_tested_alone() {
  let patterns = [
    r"error",
    r"^(error|warning)\b",
    r"^$",
    r"^",
    r"$",
    r"x*",
    r"\s",
    r"(?s)a.b",
    r"a\nb",
    r"\bb\b",
    r"b$",
    r"^a|b$",
    r"(?-m)^a",
    r"(?m-s:^a)",
    r"\Aa",
    r"b\z",
    r"(?i-u)B",
    r"[^a]+",
    r"好|é",
  ];
  assert!(!scans_like_lines(r"(?-m)^a") && !scans_like_lines(r"(?m-s:^a)"));
  assert!(!scans_like_lines(r"\Aa") && !scans_like_lines(r"b\z"));
  assert!(scans_like_lines(r"(?i)b") && scans_like_lines(r"(?P<x>a)|(?:b)"));
  let alphabet = ["a", "b", " ", "\n", "\n", "é", "好", "ab", "x"];
  let mut rng = XorShift(0x96E9);
  for pattern in patterns {
    let (grep, regex) = (Grep::new(pattern).unwrap(), Regex::new(pattern).unwrap());
    for _ in 0..2000 {
      let length = rng.below(20);
      let text: String = (0..length)
        .map(|_| alphabet[rng.below(alphabet.len())])
        .collect();
      assert_eq!(
        grep_lines(&text, &grep),
        reference_grep(&text, &regex),
        "{pattern:?} on {text:?}"
      );
    }
  }
  // The cache hands back the same compiled pattern.
  assert_eq!(
    format!("{:?}", Grep::new("error").unwrap()),
    format!("{:?}", Grep::new("error").unwrap())
  );
  assert!(Grep::new("(unclosed").is_err());
}

#[test]
fn frames_are_visible_only_when_nothing_can_remove_them() {
  assert!(frame_is_visible(b" 10%"));
  assert!(frame_is_visible(b"\x1b[K\x1b[1;32mok"));
  assert!(frame_is_visible(b"\x07\t"));
  assert!(frame_is_visible(b"\xff"));
  assert!(!frame_is_visible(b""));
  assert!(!frame_is_visible(b"\x1b[K"));
  assert!(!frame_is_visible(b"\x1b[3"));
  assert!(!frame_is_visible(b"\x1b]0;title\x07x"));
  assert!(!frame_is_visible(b"\x1bPq"));
  assert!(!frame_is_visible("\u{85}\u{202e}".as_bytes()));
  assert!(!frame_is_visible(&"€".as_bytes()[..2]));
}

// Real files: the opening rules of readTaskOutputTail.

#[test]
fn a_real_file_polls_like_its_bytes() {
  let dir = TempDir::new("taskstream-read-output");
  let mut rng = XorShift(0xF11E);
  let bytes = random_output(&mut rng, TOKENS, 5000, false);
  let path = dir.file("random.output", &bytes);
  for max_bytes in [4, 100, 65536] {
    let mut offset = 0;
    let mut text = String::new();
    loop {
      let read = read_task_output(&path, offset, max_bytes, None).expect("readable");
      assert_eq!(read, read_bytes(&bytes, offset, max_bytes, None).0);
      text.push_str(&read.text);
      if read.next_offset == offset {
        break;
      }
      offset = read.next_offset;
    }
    if max_bytes >= longest_line(&bytes) {
      assert_eq!(text, sanitized(&bytes));
    }
  }
}

#[test]
fn a_missing_file_is_an_error_message() {
  let dir = TempDir::new("taskstream-read-output");
  let path = dir.0.join("missing.output");
  let message = read_task_output(&path, 0, 100, None).unwrap_err();
  assert!(message.contains("missing.output"), "{message}");
  #[cfg(unix)]
  assert!(
    message.starts_with("ENOENT: no such file or directory, open '"),
    "{message}"
  );
}

#[test]
fn a_directory_is_an_error_message() {
  let dir = TempDir::new("taskstream-read-output");
  let message = read_task_output(&dir.0, 0, 100, None).unwrap_err();
  assert_eq!(
    message,
    format!(
      "EISDIR: illegal operation on a directory, read '{}'",
      dir.0.display()
    )
  );
}

#[cfg(unix)]
#[test]
fn a_symlink_is_refused() {
  let dir = TempDir::new("taskstream-read-output");
  let target = dir.file("target.output", b"secret\n");
  let link = dir.0.join("link.output");
  std::os::unix::fs::symlink(&target, &link).expect("create symlink");
  let message = read_task_output(&link, 0, 100, None).unwrap_err();
  assert!(message.starts_with("ELOOP: "), "{message}");
  assert!(!message.contains("secret"));
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
  use std::os::unix::ffi::OsStrExt;
  let dir = TempDir::new("taskstream-read-output");
  let path = dir.0.join("pipe.output");
  let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in path");
  // SAFETY: `c_path` is a valid NUL-terminated path for the duration of the call.
  let status = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
  assert_eq!(status, 0, "mkfifo");
  // No writer: a blocking open would never return.
  let message = read_task_output(&path, 0, 100, None).unwrap_err();
  assert_eq!(
    message,
    format!("EINVAL: not a regular file, read '{}'", path.display())
  );
}

#[cfg(unix)]
#[test]
fn a_device_is_refused() {
  let message = read_task_output(std::path::Path::new("/dev/zero"), 0, 100, None).unwrap_err();
  assert_eq!(message, "EINVAL: not a regular file, read '/dev/zero'");
}
