//! The streaming property of CONTRACT.md §3.17 and §4 items 1–2: bytes split into reads in any
//! way, then [`Utf8StreamDecoder`] and [`AnsiStreamStripper`], give exactly
//! `strip_ansi(decode(whole))`.

use crate::test_vectors::cases;
use crate::text::test_support::XorShift;
use crate::text::{strip_ansi, AnsiStreamStripper, Utf8StreamDecoder, MAX_HELD_SEQUENCE_CHARS};

/// Random partitions tried per input, besides every single split.
const RANDOM_PARTITIONS: usize = 300;

/// Decodes and strips `bytes` read in pieces ending at each of `cuts` (ascending), checking
/// the held-text bound after every read.
fn stream(bytes: &[u8], cuts: &[usize]) -> String {
  let mut decoder = Utf8StreamDecoder::new();
  let mut stripper = AnsiStreamStripper::new();
  let mut out = String::new();
  let mut decoded = String::new();
  let mut start = 0;
  for &end in cuts.iter().chain(std::iter::once(&bytes.len())) {
    decoded.clear();
    decoder.decode(&bytes[start..end], &mut decoded);
    stripper.push(&decoded, &mut out);
    assert!(stripper.held_chars() <= MAX_HELD_SEQUENCE_CHARS);
    start = end;
  }
  decoded.clear();
  decoder.finish(&mut decoded);
  stripper.push(&decoded, &mut out);
  stripper.finish(&mut out);
  out
}

/// Up to eight ascending cut offsets in `0..=len`.
fn random_cuts(rng: &mut XorShift, len: usize) -> Vec<usize> {
  let count = 1 + rng.below(8);
  let mut cuts: Vec<usize> = (0..count).map(|_| rng.below(len + 1)).collect();
  cuts.sort_unstable();
  cuts
}

fn assert_streaming_matches_whole(bytes: &[u8], rng: &mut XorShift) {
  let expected = strip_ansi(&String::from_utf8_lossy(bytes));
  for cut in 0..=bytes.len() {
    assert_eq!(stream(bytes, &[cut]), expected, "{bytes:x?} cut at {cut}");
  }
  for _ in 0..RANDOM_PARTITIONS {
    let cuts = random_cuts(rng, bytes.len());
    assert_eq!(stream(bytes, &cuts), expected, "{bytes:x?} cut at {cuts:?}");
  }
  let every_byte: Vec<usize> = (1..bytes.len()).collect();
  assert_eq!(
    stream(bytes, &every_byte),
    expected,
    "{bytes:x?} byte by byte"
  );
}

/// Mixed text: CJK, emoji, CSI with parameters and colons, OSC ended by BEL and by `ESC \`,
/// C1 CSI and ST, unfinished sequences and a lone ESC at the end, and invalid UTF-8.
fn corpus() -> Vec<Vec<u8>> {
  let texts = [
    "plain 你好 world 😀\n".to_owned(),
    "\x1b[38;2;255;0;0m红色\x1b[0m and \x1b[1;4mbold😀\x1b[m!".to_owned(),
    "\x1b[38:2::255:0:0mcolon\x1b[0m \x1b[4:3munder\x1b[24m".to_owned(),
    "\x1b]0;title 标题\x07after\x1b]8;;https://example.test/路径\x1b\\link\x1b]8;;\x1b\\end"
      .to_owned(),
    "\u{9b}31mc1 csi\u{9b}0m \x1b]2;c1 st\u{9c}done \u{9b}".to_owned(),
    "\x1b[12345m\x1b[1;2;x\x1b[12;x\x1b[?25l\x1b[>4;2m\x1b[;1m\x1b[:5m".to_owned(),
    "line1\r\nline2\x1b[2K\rline3\n\x1bDnext\x1bW313".to_owned(),
    "lone esc at end\x1b".to_owned(),
    "\x1b]unterminated osc 你好".to_owned(),
    "\x1b]0;open then esc\x1b".to_owned(),
    "tail csi \x1b[".to_owned(),
    "tail params \x1b[12".to_owned(),
    "tail separator \x1b[1;".to_owned(),
    "\x1b]\x1b]\x1b]x\x07\x1b\x1b[1m".to_owned(),
    format!("\x1b]0;{}\x07tail 尾", "标".repeat(1000)),
    format!(
      "x\x1b]8;;{}\x1b\\y",
      "u".repeat(MAX_HELD_SEQUENCE_CHARS - 8)
    ),
  ];
  let mut corpus: Vec<Vec<u8>> = texts.iter().map(|text| text.as_bytes().to_vec()).collect();
  for case in cases("stripAnsi") {
    let input = case["input"].as_str().expect("string input");
    corpus.push(input.as_bytes().to_vec());
  }
  corpus.push(b"\x1b[3\xff1m ok \xe2\x82 \xf0\x9f\x98\x80\x1b]0;\xc3\x07x\xe2".to_vec());
  corpus.push(b"\xc2\x9b31m\xc2\x9cz\xc2\xc2\x9b\x1b]t\xc2\x9c\xc2".to_vec());
  corpus
}

#[test]
fn every_split_of_the_corpus_strips_like_the_whole() {
  let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
  for bytes in corpus() {
    assert_streaming_matches_whole(&bytes, &mut rng);
  }
}

#[test]
fn every_split_of_random_text_strips_like_the_whole() {
  let alphabet: [&[u8]; 24] = [
    b"\x1b",
    b"\x1b",
    b"\xc2\x9b",
    b"\xc2\x9c",
    b"\x07",
    b"\\",
    b"]",
    b"[",
    b"?",
    b";",
    b":",
    b"0",
    b"1",
    b"9",
    b"m",
    b"Q",
    b"x",
    b"u",
    b"\n",
    "你".as_bytes(),
    "😀".as_bytes(),
    b"\xe2",
    b"\xff",
    b"\xc2",
  ];
  let mut rng = XorShift(0xD1B5_4A32_D192_ED03);
  for _ in 0..300 {
    let len = rng.below(20);
    let bytes: Vec<u8> = (0..len)
      .flat_map(|_| alphabet[rng.below(alphabet.len())].iter().copied())
      .collect();
    assert_streaming_matches_whole(&bytes, &mut rng);
  }
}

/// §3.17, end of stream: text that ends inside an OSC no terminator will ever
/// close (short, or open past the 4096-char bound) streams, in any reads, to
/// `strip_ansi` of the whole: the held sequence is released as unterminated
/// and nothing after its `ESC ]` is lost.
#[test]
fn every_split_of_text_ending_in_an_unterminated_osc_strips_like_the_whole() {
  let prefix: [&[u8]; 10] = [
    b"x",
    b"\n",
    b"\x1b[31m",
    b"\x1b]0;t\x07",
    b"\x1b]8;;u\x1b\\",
    b"\xc2\x9b1m",
    "你".as_bytes(),
    b"\xe2",
    b"1",
    b"\x1b",
  ];
  // Nothing that could terminate an OSC: no BEL, no `ESC \\`, no U+009C.
  let body: [&[u8]; 10] = [
    b"x",
    b"\n",
    b"12",
    b";",
    b"\x1b[1m",
    b"\x1b]",
    b"\x1b",
    "😀".as_bytes(),
    b"\xe2",
    b"]",
  ];
  let mut rng = XorShift(0x5851_F42D_4C95_7F2D);
  let mut long = 0;
  for round in 0..200 {
    let mut bytes = Vec::new();
    for _ in 0..rng.below(10) {
      bytes.extend_from_slice(prefix[rng.below(prefix.len())]);
    }
    bytes.extend_from_slice(b"\x1b]");
    // Every 20th body keeps the OSC open past the bound.
    let body_len = if round % 20 == 0 { 4000 } else { rng.below(25) };
    for _ in 0..body_len {
      bytes.extend_from_slice(body[rng.below(body.len())]);
    }
    // A final lone ESC could still become `ESC \\`: it stays text here.
    let expected = strip_ansi(&String::from_utf8_lossy(&bytes));
    if body_len > MAX_HELD_SEQUENCE_CHARS / 2 {
      long += 1;
      for _ in 0..30 {
        let cuts = random_cuts(&mut rng, bytes.len());
        assert_eq!(stream(&bytes, &cuts), expected, "cut at {cuts:?}");
      }
    } else {
      assert_streaming_matches_whole(&bytes, &mut rng);
    }
  }
  assert!(long > 0);
}
