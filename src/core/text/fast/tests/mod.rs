//! The fast paths against the exact path (decoder, stripper, splitter, `throttledEmit`).

use super::count::*;
use super::discard::*;
use super::sequences::*;
use super::simd::*;
use super::*;
use crate::text::ansi::{Attempt, Grammar};
#[cfg(target_arch = "x86_64")]
use crate::text::bytes::avx2;
use crate::text::bytes::escape_masks;
use crate::text::test_support::XorShift;
use crate::text::{ecma_trim, utf16_len, CleanTextStream};

fn count(bytes: &[u8], max: usize, source: Source) -> (LineCount, usize) {
  count_lines(bytes, max, source)
}

/// What every build of [`count_lines`] this CPU can run gives: they may
/// stop at different lines (the AVX2 one bounds sequences it does not
/// decide), and each must be right.
fn count_variants(bytes: &[u8], max: usize, source: Source) -> Vec<(LineCount, usize)> {
  #[allow(unused_mut)]
  let mut variants = vec![count_lines_with::<false>(bytes, max, source)];
  #[cfg(target_arch = "x86_64")]
  if avx2::available() {
    // SAFETY: the CPU has the features.
    variants.push(unsafe { count_lines_avx2(bytes, max, source) });
  }
  variants
}

/// [`scan_discarded`], checking that the build for every CPU agrees.
fn scan(bytes: &[u8]) -> Discarded {
  let baseline = scan_discarded_with::<false>(bytes);
  #[cfg(target_arch = "x86_64")]
  if avx2::available() {
    // SAFETY: the CPU has the features.
    assert_eq!(unsafe { scan_discarded_avx2(bytes) }, baseline);
  }
  assert_eq!(scan_discarded(bytes), baseline);
  baseline
}

/// The definition, one line at a time, on the stripped text of `bytes`
/// (whole lines only; no line may need more bytes to be decided).
fn reference(text: &str, max: usize) -> LineCount {
  let mut count = LineCount::default();
  let body = text.rsplit_once('\n').map_or("", |(body, _)| body);
  if text.contains('\n') {
    for line in body.split('\n') {
      count.lines += 1;
      let trimmed = ecma_trim(line);
      if trimmed.is_empty() {
        continue;
      }
      if utf16_len(trimmed) > max {
        count.non_blank += 1;
        let kept = crate::text::truncate_utf16(trimmed, max);
        let offset = kept.as_ptr() as usize - line.as_ptr() as usize;
        count.truncated_bytes += (line.len() - offset - kept.len()) as u64;
      } else {
        // What `sanitizeMonitorLine` and trimming leave: not C0 (TAB is
        // whitespace), not C1, not whitespace.
        let text = |c: char| {
          !(c < ' ' || ('\u{80}'..='\u{9f}').contains(&c) || crate::text::is_ecma_whitespace(c))
        };
        count.non_blank += u64::from(trimmed.chars().any(text));
      }
    }
  }
  count
}

#[test]
fn counts_blank_and_non_blank_lines() {
  let text = b"yes\n\n  \n\t\r\n\x01\x7f\n a \n";
  assert_eq!(
    count(text, 4096, Source::Raw),
    (
      LineCount {
        lines: 6,
        non_blank: 3,
        truncated_bytes: 0
      },
      text.len()
    )
  );
  assert_eq!(count(b"", 4096, Source::Raw), (LineCount::default(), 0));
  // A partial line at the end is not counted.
  assert_eq!(count(b"a\nbc", 4096, Source::Raw).1, 2);
}

#[test]
fn escape_sequences_are_not_text() {
  let text = b"\x1b[32mINFO\x1b[0m x\n\x1b[1m\x1b[0m\n\x1b]0;title\x07\n\x1b]8;;u\x1b\\\n";
  assert_eq!(
    count(text, 4096, Source::Raw),
    (
      LineCount {
        lines: 4,
        non_blank: 1,
        truncated_bytes: 0
      },
      text.len()
    )
  );
  // Left by the stripper, an ESC is a control: `[1m` is text.
  assert_eq!(count(b"\x1b[1m\n", 4096, Source::Stripped).0.non_blank, 1);
  // An unmatched ESC is a control char; what follows it is text.
  assert_eq!(count(b"\x1bW\n", 4096, Source::Raw).0.non_blank, 1);
  assert_eq!(count(b"\x1b\n", 4096, Source::Raw).0.non_blank, 0);
  // An OSC may hold newlines: they end no line.
  let text = b"a\n\x1b]0;x\ny\x07\nb\n";
  assert_eq!(
    count(text, 4096, Source::Raw),
    (
      LineCount {
        lines: 3,
        non_blank: 2,
        truncated_bytes: 0
      },
      text.len()
    )
  );
}

#[test]
fn non_ascii_text_and_blanks() {
  // C1 controls and whitespace are blank; other chars are text.
  let text = "你好\n\u{a0}\u{3000}\u{feff}\n\u{85}\n，\n\u{202e}\n\u{2028}é\n";
  assert_eq!(
    count(text.as_bytes(), 4096, Source::Raw),
    (
      LineCount {
        lines: 6,
        non_blank: 4,
        truncated_bytes: 0
      },
      text.len()
    )
  );
  // Left by the stripper, U+009B is a C1 control.
  assert_eq!(
    count("\u{9b}\n".as_bytes(), 4096, Source::Stripped),
    (
      LineCount {
        lines: 1,
        ..LineCount::default()
      },
      3
    )
  );
}

#[test]
fn bytes_that_are_not_utf8_are_text() {
  // The decoder makes U+FFFD of them; a blank char's lead ends any
  // unfinished sequence before it.
  let text = b"\xff\n \x80\n\xe2\x80\n\xe2\x80\xc2\x85\n\xc2\x85\n\xc2A\n";
  assert_eq!(
    count(text, 4096, Source::Raw),
    (
      LineCount {
        lines: 6,
        non_blank: 5,
        truncated_bytes: 0
      },
      text.len()
    )
  );
}

#[test]
fn stops_before_lines_it_cannot_count() {
  // U+009B (it starts a CSI).
  assert_eq!(count("a\n\u{9b}1m\nc\n".as_bytes(), 4096, Source::Raw).1, 2);
  // A sequence that needs more bytes (a CSI at the end, an OSC not ended).
  assert_eq!(count(b"a\nb\x1b[3", 4096, Source::Raw).1, 2);
  assert_eq!(count(b"a\n\x1b]0;t\nb\n", 4096, Source::Raw).1, 2);
  // An over-long line that does not end, holds non-ASCII, or a sequence
  // that needs more bytes.
  let long = format!("a\n{}", "x".repeat(5000));
  assert_eq!(count(long.as_bytes(), 4096, Source::Raw).1, 2);
  let long = format!("a\n\x1b[1m{}é\nb\n", "x".repeat(5000));
  assert_eq!(count(long.as_bytes(), 4096, Source::Raw).1, 2);
  let long = format!("a\n\x1b[1m{}\x1b]0;\nb\n", "x".repeat(5000));
  assert_eq!(count(long.as_bytes(), 4096, Source::Raw).1, 2);
}

#[test]
fn over_long_lines_with_sequences_are_cut() {
  // What is cut is the stripped, trimmed line: sequences and leading
  // whitespace (even between sequences) are not counted, trailing
  // whitespace is (it follows the kept units).
  let text = format!(
    "a\n \x1b[1m \x1b[0m{}\x1b[0m  \nb\n \x1b[1m{}\x1b[0m \n",
    "x".repeat(5000),
    " \x1b[1m".repeat(4000)
  );
  assert_eq!(
    count(text.as_bytes(), 4096, Source::Raw),
    (
      LineCount {
        lines: 4,
        non_blank: 3,
        truncated_bytes: 5000 + 2 - 4096
      },
      text.len()
    )
  );
}

#[test]
fn over_long_plain_lines_are_cut() {
  let text = format!("  {}  \nb\n{}\n", "x".repeat(5000), " ".repeat(5000));
  assert_eq!(
    count(text.as_bytes(), 4096, Source::Raw),
    (
      LineCount {
        lines: 3,
        non_blank: 2,
        truncated_bytes: 5002 - 4096
      },
      text.len()
    )
  );
}

/// What the exact path makes of `bytes` with fresh state: decoded and
/// stripped, and nothing finished (a held char or sequence waits).
fn exact_text(bytes: &[u8]) -> String {
  CleanTextStream::default().push(bytes).to_owned()
}

/// Checks that the exact path may resume at `consumed` with fresh state:
/// the text of the whole is the text of `bytes[..consumed]`, returned,
/// followed by the text of the rest read afresh.
fn decided_prefix(bytes: &[u8], consumed: usize, what: &str) -> String {
  let whole = exact_text(bytes);
  let rest = exact_text(&bytes[consumed..]);
  assert!(
    whole.ends_with(&rest),
    "{what}: the exact path cannot resume at {consumed}: {whole:?} vs {rest:?}"
  );
  whole[..whole.len() - rest.len()].to_owned()
}

/// Random texts of printable, blank, control, escape and long runs, with
/// lines running across block boundaries and around the length limit, agree
/// with the line-at-a-time definition up to where counting stopped; the
/// exact path can take over there; and it stops only where it has to.
#[test]
fn agrees_with_the_definition_on_random_texts() {
  let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
  let pieces: [&[u8]; 31] = [
    "你好".as_bytes(),
    "，".as_bytes(),
    "\u{a0}".as_bytes(),
    "\u{3000}".as_bytes(),
    "\u{2028}\u{202f}".as_bytes(),
    "\u{feff}".as_bytes(),
    "\u{85}\u{9f}".as_bytes(),
    "\u{9b}1m".as_bytes(),
    "\u{202e}".as_bytes(),
    "😀".as_bytes(),
    b"\xff",
    b"\xe4\xbd",
    b"\x1b[32m",
    b"\x1b[0m",
    b"\x1b[38;5;196m",
    b"\x1b[12345m",
    b"\x1b[?25l",
    b"\x1b[;1m",
    b"\x1b]0;t\x07",
    b"\x1b]8;;u\x1b\\",
    b"\x1b",
    b"\x1b[",
    b"\x1b[1;",
    b"\x1b]0;\n\x07",
    b"\x1b]0;",
    b"\x1bD",
    b"\x1b\x1b[1m",
    "é".as_bytes(),
    b"\x7f",
    b"\x01",
    b"\r",
  ];
  let mut stopped_early = 0;
  for round in 0..4000 {
    let len = rng.below(400);
    let mut text: Vec<u8> = Vec::new();
    while text.len() < len {
      match rng.below(20) {
        0..=3 => text.push(b'\n'),
        4..=6 => text.extend_from_slice(pieces[rng.below(pieces.len())]),
        7 => text.push(b'y'),
        8 if round % 5 == 0 => text.extend(std::iter::repeat_n(b' ', rng.below(200))),
        _ => text.push(b' '),
      }
    }
    if round % 7 == 0 {
      text.extend(std::iter::repeat_n(b'z', rng.below(200)));
    }
    if round % 3 != 0 {
      text.push(b'\n');
    }
    stopped_early += check_against_the_definition(&text, &format!("round {round}"));
  }
  assert!(stopped_early > 0);
}

/// Coloured lines, many blocks of them in a row: lines of sequences and
/// text, lines of sequences only (blank), sequences cut by block ends with
/// plain bytes, non-ASCII or an OSC after them, so that the bounded blocks
/// hand over to every other kind of block with a sequence left undecided.
#[test]
fn agrees_with_the_definition_on_coloured_runs() {
  let mut rng = XorShift(0x51_7cc1_b727_220a);
  let sequences: [&[u8]; 8] = [
    b"\x1b[32m",
    b"\x1b[0m",
    b"\x1b[38;5;196m",
    b"\x1b[1;31m",
    b"\x1b[?25l",
    b"\x1b[K",
    b"\x1b[2J",
    b"\x1b[12;40H",
  ];
  let others: [&[u8]; 9] = [
    b"INFO",
    b"request",
    b"y",
    b" ",
    b"MNOP",
    "é".as_bytes(),
    b"\x1b]0;t\x07",
    b"\r",
    b"\x1b[1;",
  ];
  let mut stopped_early = 0;
  for round in 0..1500 {
    let len = 64 + rng.below(1500);
    let mut text: Vec<u8> = Vec::new();
    while text.len() < len {
      match rng.below(40) {
        0..=5 => text.push(b'\n'),
        6..=24 => text.extend_from_slice(sequences[rng.below(sequences.len())]),
        25..=34 => text.extend_from_slice(others[..5][rng.below(5)]),
        35 | 36 if round % 3 == 0 => text.extend_from_slice(others[5 + rng.below(4)]),
        // A run of plain bytes, letters that are CSI bytes or text.
        37 => text.extend(std::iter::repeat_n(b"Ae"[rng.below(2)], rng.below(140))),
        _ => text.extend_from_slice(b"\x1b[0m\n"),
      }
    }
    if round % 2 == 0 {
      text.push(b'\n');
    }
    stopped_early += check_against_the_definition(&text, &format!("coloured round {round}"));
  }
  assert!(stopped_early > 0);
}

/// Checks [`count_lines`] (every variant) on `text` against the exact
/// path, for both sources and four line limits; returns how often the
/// baseline stopped before a complete line.
fn check_against_the_definition(text: &[u8], label: &str) -> usize {
  let mut stopped_early = 0;
  for source in [Source::Raw, Source::Stripped] {
    for max in [63, 64, 100, 4096] {
      for (variant, (count, consumed)) in count_variants(text, max, source).into_iter().enumerate()
      {
        let what = format!("{label}, {source:?}, limit {max}, variant {variant}: {text:?}");
        assert!(consumed == 0 || text[consumed - 1] == b'\n', "{what}");
        let counted = match source {
          Source::Raw => decided_prefix(text, consumed, &what),
          Source::Stripped => String::from_utf8_lossy(&text[..consumed]).into_owned(),
        };
        assert_eq!(count, reference(&counted, max), "{what}");
        let rest = &text[consumed..];
        // The baseline stops only before a line with non-ASCII, an escape
        // sequence (that may need more bytes, or in an over-long line), or
        // an over-long line that ends in no newline outside sequences.
        // (The AVX2 build may also stop before a line it only bounded,
        // when a block it must decide follows.)
        if let (0, Some(newline)) = (variant, rest.iter().position(|&b| b == b'\n')) {
          stopped_early += 1;
          let line = &rest[..newline];
          assert!(
            !line.is_ascii() || line.contains(&0x1B) || line.len() > max,
            "{what}: stopped at {consumed}"
          );
        }
      }
    }
  }
  stopped_early
}

/// The discard scan against its definition: the text bytes of the exact
/// path's text up to its first `\n`, and the exact path can take over where
/// the scan ends.
#[test]
fn discard_scan_agrees_with_the_definition() {
  let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
  let pieces: [&[u8]; 17] = [
    b"\x1b[32m",
    b"\x1b]0;t\x07",
    b"\x1b]0;x\ny\x07",
    b"\x1b",
    b"\x1b[",
    b"\x1b[1;",
    b"\x1b[12",
    b"\x1b]",
    "é".as_bytes(),
    "你".as_bytes(),
    "\u{9b}1m".as_bytes(),
    "\u{9c}".as_bytes(),
    "\u{85}".as_bytes(),
    b"\xff",
    b"\xe4\xbd",
    b"\r",
    b"\n",
  ];
  let mut outcomes = [0; 3];
  for round in 0..20_000 {
    let mut text: Vec<u8> = Vec::new();
    for _ in 0..rng.below(12) {
      match rng.below(4) {
        0 => text.extend_from_slice(pieces[rng.below(pieces.len())]),
        1 => text.extend(std::iter::repeat_n(b'a', rng.below(100))),
        _ => text.push(b'q'),
      }
    }
    let what = format!("round {round}: {text:x?}");
    let scan_end = text.len() - incomplete_utf8_tail(&text);
    let d = scan(&text[..scan_end]);
    let decided = decided_prefix(&text, d.consumed, &what);
    if d.line_ended {
      outcomes[0] += 1;
      assert_eq!(decided.find('\n'), Some(decided.len() - 1), "{what}");
      assert_eq!(d.text_bytes, decided.len() as u64 - 1, "{what}");
    } else {
      assert!(!decided.contains('\n'), "{what}");
      assert_eq!(d.text_bytes, decided.len() as u64, "{what}");
      if d.consumed < scan_end {
        outcomes[1] += 1;
        // Stopped before an undecided sequence or bytes that are not valid.
        let first = text[d.consumed];
        assert!(
          first == 0x1B || first >= 0x80,
          "{what}: stopped at {}",
          d.consumed
        );
      } else {
        outcomes[2] += 1;
        assert_eq!(d.consumed, scan_end, "{what}");
      }
    }
  }
  assert!(outcomes.iter().all(|&n| n > 100), "{outcomes:?}");
}

/// The one-at-a-time path for common CSI sequences matches what the
/// grammar matches, whenever it answers.
#[test]
fn common_csi_at_matches_the_grammar() {
  let mut rng = XorShift(0x1234_5678_9abc_def1);
  let alphabet: &[u8] = b"\x1b[[;;0123456789m:?x]\n";
  let mut answered = 0;
  for _ in 0..100_000 {
    let len = 1 + rng.below(12);
    let mut bytes = vec![0x1b];
    bytes.extend((1..len).map(|_| alphabet[rng.below(alphabet.len())]));
    if len > 1 && rng.below(2) == 0 {
      bytes[1] = b'[';
    }
    if let Some(end) = common_csi_at(&bytes, 0) {
      answered += 1;
      assert_eq!(
        Grammar::new(&bytes).attempt(0, false),
        Attempt::Match(end),
        "{bytes:?}"
      );
    }
  }
  assert!(answered > 1000, "{answered}");
}

/// The bulk path for common CSI sequences covers exactly what the grammar
/// matches, whenever it answers.
#[test]
fn common_csi_covers_what_the_grammar_matches() {
  let mut rng = XorShift(0x5851_f42d_4c95_7f2d);
  let pieces: [&[u8]; 16] = [
    b"\x1b[32m",
    b"\x1b[0m",
    b"\x1b[m",
    b"\x1b[38;5;196m",
    b"\x1b[;1m",
    b"\x1b[1;;2H",
    b"\x1b[12345m",
    b"\x1b[1234m",
    b"\x1b[?25l",
    b"\x1b[1:2m",
    b"\x1b[1;x",
    b"\x1b[",
    b"\x1b",
    b"12345;",
    b"[",
    b"m",
  ];
  let mut answered = 0;
  for round in 0..50_000 {
    let mut block: Vec<u8> = Vec::new();
    while block.len() < 64 {
      if rng.below(3) == 0 {
        block.extend_from_slice(pieces[rng.below(pieces.len())]);
      } else {
        block.push(b"ab 9;"[rng.below(5)]);
      }
    }
    block.truncate(if round % 4 == 0 { rng.below(65) } else { 64 });
    let masks = escape_masks(&block);
    let Some((covered, taken)) = common_csi(&block, &masks, masks.escape) else {
      continue;
    };
    answered += 1;
    let mut grammar = Grammar::new(&block);
    let mut expected = 0u64;
    let mut end = 0;
    for start in 0..taken {
      if start < end || block[start] != 0x1B {
        continue;
      }
      match grammar.attempt(start, false) {
        Attempt::Match(e) => {
          assert!(e <= taken, "round {round}: {block:?}");
          end = e;
          expected |= below(e) & !below(start);
        }
        other => panic!("round {round}: {other:?} at {start} of {block:?}"),
      }
    }
    assert_eq!(covered, expected, "round {round}: {block:?}");
    assert!(
      taken == block.len() || block[taken] == 0x1B,
      "round {round}: {block:?}"
    );
  }
  assert!(answered > 1000, "{answered}");
}

#[test]
fn incomplete_tails() {
  assert_eq!(incomplete_utf8_tail(b""), 0);
  assert_eq!(incomplete_utf8_tail(b"abc"), 0);
  assert_eq!(incomplete_utf8_tail("a你".as_bytes()), 0);
  assert_eq!(incomplete_utf8_tail(&"a你".as_bytes()[..3]), 2);
  assert_eq!(incomplete_utf8_tail(&"a😀".as_bytes()[..4]), 3);
  assert_eq!(incomplete_utf8_tail(b"a\xc2"), 1);
  assert_eq!(incomplete_utf8_tail(b"a\xe0\x80"), 0);
  assert_eq!(incomplete_utf8_tail(b"a\x80"), 0);
}
