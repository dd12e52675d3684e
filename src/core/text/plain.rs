//! Runs of plain lines decided without building them, for a lane with `important` or `digest`
//! (API.md §6.7) on a firehose: the pipeline's counting fast path may count a run of lines only when
//! the lane would drop each of them without the text making a difference, which it can tell
//! here from the raw bytes.
//!
//! A *plain* line (see [`plain_lines_counted`]) is made of bytes `0x20..=0x7F` but `<`, and TAB,
//! and may end in `\r` before its `\n`; it is at most [`PARTIAL_LINE_CAP_UNITS`] bytes long.
//! Such a line goes through the decoder and the ANSI stripper unchanged, the splitter only trims
//! it (no cut), and `sanitize_monitor_line` leaves the trimmed line alone (no control, no tag):
//! the text the lane would test and quote is the raw line trimmed of spaces, TABs and the final
//! `\r`.
//!
//! **`important`**: [`PlainImportant`] searches a whole run of plain lines at once with the same
//! pattern. A trimmed line `T` that the pattern matches sits in the run with only non-word bytes
//! (space, TAB, `\r`, `\n`) or the run's ends around it, so the same match is found there: the
//! pattern's parts that read bytes read the same bytes, and word-boundary assertions look at
//! one byte on each side, non-word in both cases. Text anchors (`^`, `$`, `\A`, `\z`, in any
//! mode) become line anchors, which hold around `T` in the run only when `T` is the whole line:
//! with such a pattern, plain lines must also be *tight* (no line starts or ends with a space,
//! TAB or `\r`). So if the search finds no match, no line of the run is important, and if it
//! finds one, every line before the line where it starts is not (the match found is the
//! leftmost one). A match the lines would not give (across lines, or on a blank line) only
//! sends more lines to the exact path.
//!
//! **`digest`**: a run of dropped lines records its first and last non-blank lines
//! ([`first_and_last`]); the lines between change nothing but the count.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Capture, Hir, HirKind, Look, Repetition};

use super::byte_set::ByteSet;
#[cfg(target_arch = "x86_64")]
use super::bytes::avx512;
#[cfg(target_arch = "x86_64")]
use super::bytes::has_avx2;
use super::bytes::{plain_masks_of, PlainMasks};
use super::fast::{carry_add, LineCount};

use super::line_splitter::PARTIAL_LINE_CAP_UNITS;
use super::prefix_finder::PrefixFinder;

/// `bits` low bits set.
#[inline]
fn below(bits: u32) -> u64 {
  if bits >= 64 {
    !0
  } else {
    (1u64 << bits) - 1
  }
}

/// The length of the longest prefix of `bytes` (which starts a line) made of complete plain
/// lines, each ending in `\n` (with `tight`, no line of it starts or ends with a space, TAB or
/// `\r`; see the module documentation), and the [`LineCount`] of those lines: what
/// [`count_lines`] gives for them, found in the same pass. Plain lines are never cut (they are
/// at most the cap long), and one is non-blank when it holds a byte other than space, TAB and
/// `\r` (the printable bytes `count_lines` calls text).
///
/// [`count_lines`]: crate::text::count_lines
pub fn plain_lines_counted(bytes: &[u8], tight: bool) -> (usize, LineCount) {
  #[cfg(target_arch = "x86_64")]
  if avx512::available() {
    // SAFETY: the CPU has the features.
    return unsafe { plain_lines_avx512(bytes, tight) };
  }
  #[cfg(target_arch = "x86_64")]
  if has_avx2() {
    // SAFETY: the CPU has the features.
    return unsafe { plain_lines_avx2(bytes, tight) };
  }
  plain_lines_with::<false, false>(bytes, tight)
}

/// [`plain_lines_counted`] compiled for CPUs with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,lzcnt,bmi1,bmi2")]
fn plain_lines_avx2(bytes: &[u8], tight: bool) -> (usize, LineCount) {
  plain_lines_with::<true, false>(bytes, tight)
}

/// [`plain_lines_counted`] compiled for CPUs with AVX-512 (F, BW) and AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,popcnt,lzcnt,bmi1,bmi2")]
fn plain_lines_avx512(bytes: &[u8], tight: bool) -> (usize, LineCount) {
  plain_lines_with::<true, true>(bytes, tight)
}

/// [`PlainMasks`] of a block, with the widest instructions the caller was
/// compiled for.
#[inline(always)]
fn masks_of<const AVX2: bool, const AVX512: bool>(block: &[u8]) -> PlainMasks {
  #[cfg(target_arch = "x86_64")]
  if AVX512 && block.len() == 64 {
    // SAFETY: `AVX512` is true only behind `avx512::available()`.
    return unsafe { avx512::plain_masks_64(block) };
  }
  plain_masks_of::<AVX2>(block)
}

/// Where a run of plain lines stands between blocks.
#[derive(Clone, Copy)]
struct RunState {
  /// The next block's start.
  at: usize,
  /// The start of the line running into it.
  line_start: usize,
  /// Whether that line has text so far.
  carry: bool,
  lines: u64,
  non_blank: u64,
}

impl RunState {
  fn at(at: usize, line_start: usize, carry: bool, count: LineCount) -> Self {
    Self {
      at,
      line_start,
      carry,
      lines: count.lines,
      non_blank: count.non_blank,
    }
  }

  /// `at`, `line_start`, `carry`, `lines`, `non_blank`.
  fn parts(&self) -> (usize, usize, bool, u64, u64) {
    (
      self.at,
      self.line_start,
      self.carry,
      self.lines,
      self.non_blank,
    )
  }

  /// The run, ended at the line running into the next block.
  fn ended(&self, count: LineCount) -> (usize, LineCount) {
    let count = LineCount {
      lines: self.lines,
      non_blank: self.non_blank,
      ..count
    };
    (self.line_start, count)
  }
}

/// Takes the common block at `state.at` (`masks` are its masks): a whole 64-byte block of plain
/// bytes, newlines and blanks only (no `\r`, which needs the byte after it), so every line
/// ending in it is taken. False when a line runs past the cap (the run ends at
/// `state.line_start`).
#[inline(always)]
fn take_common_block(state: &mut RunState, masks: &PlainMasks) -> bool {
  let end = state.at + 64;
  let newline = masks.newline;
  if state.at + newline.trailing_zeros() as usize - state.line_start > PARTIAL_LINE_CAP_UNITS {
    return false;
  }
  let (sum, out) = carry_add(newline, !(newline | masks.blank), state.carry);
  state.lines += u64::from(newline.count_ones());
  state.non_blank += u64::from((sum & newline).count_ones());
  state.carry = out;
  if newline != 0 {
    state.line_start = end - newline.leading_zeros() as usize;
  }
  state.at = end;
  true
}

/// The common blocks from `state.at` on ([`take_common_block`]), in a loop of their own whose
/// few live values stay in registers (with AVX-512 the masks come straight from the compares;
/// with AVX2 the same loop compiles worse than the one in [`plain_lines_with`]). Stops before
/// the first other block; `Err` when a line runs past the cap.
#[inline(always)]
fn common_blocks<const AVX2: bool, const AVX512: bool>(
  bytes: &[u8],
  mut state: RunState,
) -> Result<RunState, RunState> {
  while state.at + 64 <= bytes.len() {
    let masks = masks_of::<AVX2, AVX512>(&bytes[state.at..state.at + 64]);
    if masks.other | masks.carriage_return != 0 {
      break;
    }
    if !take_common_block(&mut state, &masks) {
      return Err(state);
    }
  }
  Ok(state)
}

#[inline(always)]
fn plain_lines_with<const AVX2: bool, const AVX512: bool>(
  bytes: &[u8],
  tight: bool,
) -> (usize, LineCount) {
  let mut count = LineCount::default();
  // Whether the line running into the next block has text so far.
  let mut carry = false;
  let mut line_start = 0;
  let mut at = 0;
  while at < bytes.len() {
    if AVX512 && !tight {
      let state =
        match common_blocks::<AVX2, AVX512>(bytes, RunState::at(at, line_start, carry, count)) {
          Ok(state) => state,
          Err(capped) => return capped.ended(count),
        };
      (at, line_start, carry, count.lines, count.non_blank) = state.parts();
      if at == bytes.len() {
        break;
      }
    }
    let end = bytes.len().min(at + 64);
    let block = &bytes[at..end];
    let masks = masks_of::<AVX2, AVX512>(block);
    if !tight && block.len() == 64 && masks.other | masks.carriage_return == 0 {
      let mut state = RunState::at(at, line_start, carry, count);
      if !take_common_block(&mut state, &masks) {
        return state.ended(count);
      }
      (at, line_start, carry, count.lines, count.non_blank) = state.parts();
      continue;
    }
    let next_newline = u64::from(bytes.get(end) == Some(&b'\n')) << 63;
    let before_newline = (masks.newline >> 1) | next_newline;
    // A `\r` that does not end a line is removed by the sanitiser: not plain.
    let mut stop = masks.other | (masks.carriage_return & !before_newline);
    if tight {
      let after_newline = (masks.newline << 1) | u64::from(at == 0 || bytes[at - 1] == b'\n');
      let edge = (masks.blank & (after_newline | before_newline)) | masks.carriage_return;
      stop |= edge;
    }
    let valid = below(block.len() as u32);
    stop &= valid;
    let newline = masks.newline;
    // Where the line running into this block ends (64: not in it), and its length.
    let first_newline = newline.trailing_zeros();
    if (at + first_newline.min(block.len() as u32) as usize) - line_start > PARTIAL_LINE_CAP_UNITS {
      return (line_start, count);
    }
    let text = valid & !(newline | masks.blank | masks.carriage_return);
    // The lines that end in this block and are taken: all, or those before the stop.
    let taken = if stop == 0 {
      newline
    } else {
      newline & below(stop.trailing_zeros())
    };
    if taken != 0 {
      let through = below(64 - taken.leading_zeros());
      let (sum, out) = carry_add(taken, text & through, carry);
      count.lines += u64::from(taken.count_ones());
      count.non_blank += u64::from((sum & taken).count_ones());
      carry = out;
      line_start = at + 64 - taken.leading_zeros() as usize;
    }
    if stop != 0 {
      return (line_start, count);
    }
    if newline == 0 {
      carry |= text != 0;
    } else {
      // The text after the block's last line end starts the next line.
      carry = text & !below(64 - newline.leading_zeros()) != 0;
    }
    at = end;
  }
  (line_start, count)
}

/// The trimmed text of a plain line (its bytes without the `\n`).
fn trimmed(line: &[u8]) -> &str {
  let start = line
    .iter()
    .position(|&b| !matches!(b, b' ' | b'\t' | b'\r'))
    .unwrap_or(line.len());
  let end = line
    .iter()
    .rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r'))
    .map_or(start, |i| i + 1);
  std::str::from_utf8(&line[start..end]).expect("plain lines are ASCII")
}

/// Each line of `lines` (complete plain lines), trimmed as the splitter gives them (a blank
/// line is `""`), in order; from the back with `.rev()`.
pub fn plain_line_texts(lines: &[u8]) -> impl DoubleEndedIterator<Item = &str> {
  let body = lines.strip_suffix(b"\n").unwrap_or(lines);
  body
    .split(|&b| b == b'\n')
    .filter(move |_| !lines.is_empty())
    .map(trimmed)
}

/// [`plain_line_texts`] from the last line back, found with a vectorised search for newlines.
pub fn plain_line_texts_rev(lines: &[u8]) -> impl Iterator<Item = &str> {
  let body = lines.strip_suffix(b"\n").unwrap_or(lines);
  let mut end = Some(body.len());
  let mut newlines = memchr::memrchr_iter(b'\n', body);
  std::iter::from_fn(move || {
    if lines.is_empty() {
      return None;
    }
    let line_end = end?;
    let start = match newlines.next() {
      Some(newline) => {
        end = Some(newline);
        newline + 1
      }
      None => {
        end = None;
        0
      }
    };
    Some(trimmed(&body[start..line_end]))
  })
}

/// The first and the last non-blank line of `lines` (complete plain lines), trimmed as the
/// splitter gives them; `None` when all are blank.
pub fn first_and_last(lines: &[u8]) -> Option<(&str, &str)> {
  let body = lines.strip_suffix(b"\n").unwrap_or(lines);
  let first = body
    .split(|&b| b == b'\n')
    .map(trimmed)
    .find(|line| !line.is_empty())?;
  let last = body
    .rsplit(|&b| b == b'\n')
    .map(trimmed)
    .find(|line| !line.is_empty())?;
  Some((first, last))
}

/// The `important` pattern, for runs of plain lines. See the module documentation.
#[derive(Debug, Clone)]
pub struct PlainImportant {
  regex: regex::bytes::Regex,
  tight: bool,
  /// The bytes every match starts with ([`first_bytes`]): the search starts at the first of
  /// them in a run, and a run without any is not searched. `None`: no such set.
  first_bytes: Option<ByteSet>,
  /// The search for the pattern's prefixes ([`PrefixFinder`]): where it applies, candidates
  /// are checked one line at a time and the regex never scans a whole run. `None`: no such
  /// search.
  prefixes: Option<PrefixFinder>,
}

impl PlainImportant {
  /// `None` when the pattern cannot be searched this way (never for a pattern the `regex`
  /// crate compiled): its lines then always take the exact path.
  pub fn new(pattern: &str) -> Option<Self> {
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let tight = hir.properties().look_set().contains_anchor();
    let hir = line_anchors(hir);
    let regex = regex::bytes::RegexBuilder::new(&hir.to_string())
      .build()
      .ok()?;
    let first_bytes = first_bytes(&hir);
    let prefixes = PrefixFinder::new(&hir);
    Some(Self {
      regex,
      tight,
      first_bytes,
      prefixes,
    })
  }

  /// True when the runs searched must be of tight lines (the pattern has anchors).
  pub fn needs_tight_lines(&self) -> bool {
    self.tight
  }

  /// Where, in `lines` (complete plain lines, tight if [`Self::needs_tight_lines`]), the first
  /// line that may be important starts: every line before it is not. `None`: no line is.
  pub fn first_candidate(&self, lines: &[u8]) -> Option<usize> {
    let line_start = |at: usize| {
      lines[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |newline| newline + 1)
    };
    if let Some(prefixes) = self
      .prefixes
      .as_ref()
      .filter(|_| PrefixFinder::is_vectorized())
    {
      // Every match starts at a candidate. A candidate is checked on its own line (a match
      // that only the run gives, across lines, is no line's): the regex searches from it to
      // the line's end, which also finds a later match on that line; the lines before the
      // next candidate then hold no match.
      let mut from = 0;
      while let Some(at) = prefixes.find(lines, from) {
        let line_end = lines[at..]
          .iter()
          .position(|&b| b == b'\n')
          .map_or(lines.len(), |newline| at + newline + 1);
        if let Some(found) = self.regex.find_at(&lines[..line_end], at) {
          return Some(line_start(found.start()));
        }
        from = line_end;
      }
      return None;
    }
    // No match starts before the first byte a match can start with; the search from there
    // still sees the bytes before it (for `\b` and the line anchors). Without AVX2 the regex's
    // own literal search is faster than looking for that byte first.
    let from = match &self.first_bytes {
      Some(set) if ByteSet::is_vectorized() => set.find_in(lines)?,
      _ => 0,
    };
    let found = self.regex.find_at(lines, from)?;
    Some(line_start(found.start()))
  }
}

/// The bytes every match of `hir` starts with: the first bytes of its prefix literals, when
/// they are a finite set and none is empty (a pattern that may match the empty string, or whose
/// first character is drawn from a large class, has no such set).
fn first_bytes(hir: &Hir) -> Option<ByteSet> {
  let mut prefixes = Extractor::new()
    .kind(ExtractKind::Prefix)
    .limit_class(64)
    .limit_literal_len(1)
    .extract(hir);
  prefixes.keep_first_bytes(1);
  let literals = prefixes.literals()?;
  let firsts = literals
    .iter()
    .map(|literal| literal.as_bytes().first().copied())
    .collect::<Option<Vec<u8>>>()?;
  Some(ByteSet::new(firsts))
}

/// `hir` with every text or line anchor made a `\n` line anchor.
fn line_anchors(hir: Hir) -> Hir {
  if !hir.properties().look_set().contains_anchor() {
    return hir;
  }
  match hir.into_kind() {
    HirKind::Look(Look::Start | Look::StartLF | Look::StartCRLF) => Hir::look(Look::StartLF),
    HirKind::Look(Look::End | Look::EndLF | Look::EndCRLF) => Hir::look(Look::EndLF),
    HirKind::Look(look) => Hir::look(look),
    HirKind::Repetition(rep) => Hir::repetition(Repetition {
      sub: Box::new(line_anchors(*rep.sub)),
      ..rep
    }),
    HirKind::Capture(cap) => Hir::capture(Capture {
      sub: Box::new(line_anchors(*cap.sub)),
      ..cap
    }),
    HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(line_anchors).collect()),
    HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(line_anchors).collect()),
    HirKind::Empty => Hir::empty(),
    HirKind::Literal(literal) => Hir::literal(literal.0),
    HirKind::Class(class) => Hir::class(class),
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::text::test_support::XorShift;
  use crate::text::{count_lines, ecma_trim, sanitize_monitor_line, Source};
  use regex::Regex;

  /// The backward iterator gives the forward one's lines in reverse.
  #[test]
  fn line_texts_backwards_are_the_forward_ones_reversed() {
    for lines in [
      &b""[..],
      b"\n",
      b"a\n",
      b"  a  \n\n b\r\n",
      b"one\ntwo\n\nthree\n",
      b"x\n\n\n",
    ] {
      let forward: Vec<&str> = plain_line_texts(lines).collect();
      let mut backward: Vec<&str> = plain_line_texts_rev(lines).collect();
      backward.reverse();
      assert_eq!(forward, backward, "{:?}", String::from_utf8_lossy(lines));
    }
  }

  /// The run's length alone.
  fn plain_lines(bytes: &[u8], tight: bool) -> usize {
    plain_lines_counted(bytes, tight).0
  }

  /// The plain-line rule, line by line.
  fn is_plain_line(line: &[u8], tight: bool) -> bool {
    let body = line.strip_suffix(b"\r").unwrap_or(line);
    let bytes_ok = body
      .iter()
      .all(|&b| ((0x20..0x80).contains(&b) && b != b'<') || b == b'\t');
    let edges_ok = !tight
      || (!line.starts_with(b" ")
        && !line.starts_with(b"\t")
        && !line.ends_with(b" ")
        && !line.ends_with(b"\t")
        && !line.ends_with(b"\r"));
    bytes_ok && edges_ok && line.len() <= PARTIAL_LINE_CAP_UNITS
  }

  fn expected_plain_lines(bytes: &[u8], tight: bool) -> usize {
    let mut at = 0;
    while let Some(newline) = bytes[at..].iter().position(|&b| b == b'\n') {
      if !is_plain_line(&bytes[at..at + newline], tight) {
        break;
      }
      at += newline + 1;
    }
    at
  }

  fn random_text(rng: &mut XorShift) -> Vec<u8> {
    let pieces: [&[u8]; 16] = [
      b"y\n",
      b"\n",
      b" ",
      b"\t",
      b"\r",
      b"\r\n",
      b"a",
      b"<",
      b"\x01",
      b"\x1b",
      b"\x7f",
      "é".as_bytes(),
      b"error",
      b"Ready\n",
      b" x \n",
      b"word",
    ];
    let mut text = Vec::new();
    let len = [10, 100, 1000][rng.below(3)];
    while text.len() < len {
      if rng.below(200) == 0 {
        text.extend(std::iter::repeat_n(b'l', 4090 + rng.below(12)));
      }
      text.extend_from_slice(pieces[rng.below(pieces.len())]);
    }
    text
  }

  /// Mostly plain lines, in runs of whole 64-byte blocks, with a rare piece that is not.
  fn random_plain_text(rng: &mut XorShift) -> Vec<u8> {
    let pieces: [&[u8]; 10] = [
      b"y\n",
      b"\n",
      b" ",
      b"\t",
      b"a",
      b"error",
      b"Ready\n",
      b" x \n",
      b"word",
      b"firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN\n",
    ];
    let mut text = Vec::new();
    let len = [100, 1000, 5000][rng.below(3)];
    while text.len() < len {
      if rng.below(300) == 0 {
        text.extend(random_text(rng).into_iter().take(4));
      } else if rng.below(300) == 0 {
        text.extend(std::iter::repeat_n(b'l', 4090 + rng.below(12)));
      }
      text.extend_from_slice(pieces[rng.below(pieces.len())]);
    }
    text
  }

  /// [`random_text`] in even rounds, [`random_plain_text`] in odd ones.
  fn text_of_round(rng: &mut XorShift, round: usize) -> Vec<u8> {
    if round.is_multiple_of(2) {
      random_text(rng)
    } else {
      random_plain_text(rng)
    }
  }

  #[test]
  fn plain_lines_stop_before_the_first_line_that_is_not() {
    let mut rng = XorShift(0x9_1A1E);
    for round in 0..3000 {
      let text = text_of_round(&mut rng, round);
      for tight in [false, true] {
        for start in [0, 1, 7] {
          let start = start.min(text.len());
          // Starting mid-text (after a `\n` or not): the first line is judged from there.
          let bytes = &text[start..];
          let (end, count) = plain_lines_counted(bytes, tight);
          assert_eq!(
            end,
            expected_plain_lines(bytes, tight),
            "{:?}, tight {tight}",
            String::from_utf8_lossy(bytes)
          );
          // The count of the same pass is what count_lines gives for those lines.
          assert_eq!(
            (count, end),
            count_lines(&bytes[..end], PARTIAL_LINE_CAP_UNITS, Source::Raw),
            "{:?}, tight {tight}",
            String::from_utf8_lossy(bytes)
          );
        }
      }
    }
    let exact_cap = format!("{}\nb\n", "a".repeat(PARTIAL_LINE_CAP_UNITS));
    assert_eq!(plain_lines(exact_cap.as_bytes(), true), exact_cap.len());
    let over = format!("b\n{}\nb\n", "a".repeat(PARTIAL_LINE_CAP_UNITS + 1));
    assert_eq!(plain_lines(over.as_bytes(), false), 2);
  }

  #[test]
  fn first_and_last_are_the_non_blank_lines_trimmed() {
    assert_eq!(first_and_last(b"\n  \n\t\r\n"), None);
    assert_eq!(first_and_last(b" a \nb\n\n c\r\n \n"), Some(("a", "c")));
    assert_eq!(first_and_last(b"y\n"), Some(("y", "y")));
  }

  /// What the lane asks of each line: the pattern on the sanitised, trimmed line.
  fn important_lines(regex: &Regex, lines: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut at = 0;
    for line in lines.split_inclusive(|&b| b == b'\n') {
      let text = ecma_trim(std::str::from_utf8(line).unwrap());
      if !text.is_empty() && regex.is_match(&sanitize_monitor_line(text)) {
        found.push(at);
      }
      at += line.len();
    }
    found
  }

  /// On runs of plain lines cut anywhere at a line start, the search never misses an important
  /// line: no line before the first candidate is important.
  #[test]
  fn the_block_search_never_misses_an_important_line() {
    let patterns = [
      "(?i)error|fail|exception|panic|listening|ready",
      "^y$",
      "^error",
      "word$",
      r"\Aa",
      r"a\z",
      "(?m)^x$",
      "(?Rm)^ x$",
      r"\bor\b",
      r"\Bor",
      r"\b{start}word\b{end}",
      r"\b{start-half}a",
      r"(?-u:\b)a(?-u:\B)",
      "^$",
      "^ *y",
      r"y\s*$",
      "a|^(b|c$)+",
      "x*",
      r"\t",
      "(?x) a b # comment",
      "(?s).{3}",
      "[^y]",
      "(?P<name>e)r",
      "é",
    ];
    let mut rng = XorShift(0x1_4907_7A47);
    let mut with_important = 0;
    for pattern in patterns {
      let regex = Regex::new(pattern).unwrap();
      let plain = PlainImportant::new(pattern).expect(pattern);
      for round in 0..400 {
        let text = text_of_round(&mut rng, round);
        let lines = &text[..plain_lines(&text, plain.needs_tight_lines())];
        let important = important_lines(&regex, lines);
        let candidate = plain.first_candidate(lines);
        with_important += usize::from(!important.is_empty());
        match (important.first(), candidate) {
          (None, _) => {}
          (Some(&first), Some(candidate)) => assert!(
            candidate <= first,
            "{pattern}: {first} important, candidate {candidate} in {:?}",
            String::from_utf8_lossy(lines)
          ),
          (Some(&first), None) => panic!(
            "{pattern}: line at {first} missed in {:?}",
            String::from_utf8_lossy(lines)
          ),
        }
      }
    }
    assert!(
      with_important > 500,
      "{with_important} runs with an important line"
    );
  }

  /// Starting the search at the first byte a match can start with changes nothing: the line
  /// found is the one the search of the whole run finds.
  #[test]
  fn the_search_from_the_first_possible_byte_finds_what_the_whole_search_finds() {
    let patterns = [
      "(?i)error|fail|exception|panic|listening|ready",
      r"\bor\b",
      r"\Bor",
      "^error",
      "word$",
      "(?m)^x$",
      r"\b{start}word\b{end}",
      "(?i)k",
      "[a-c]x|y",
      r"\t",
      "<",
    ];
    let mut rng = XorShift(0xF1_857B);
    let mut skipped = 0;
    for pattern in patterns {
      let plain = PlainImportant::new(pattern).expect(pattern);
      assert!(plain.first_bytes.is_some(), "{pattern}");
      for round in 0..400 {
        let text = text_of_round(&mut rng, round);
        let lines = &text[..plain_lines(&text, plain.needs_tight_lines())];
        let whole = plain.regex.find(lines).map(|found| {
          lines[..found.start()]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |newline| newline + 1)
        });
        assert_eq!(
          plain.first_candidate(lines),
          whole,
          "{pattern} in {:?}",
          String::from_utf8_lossy(lines)
        );
        skipped += usize::from(
          plain
            .first_bytes
            .as_ref()
            .unwrap()
            .find_in(lines)
            .is_none_or(|at| at > 0),
        );
      }
    }
    assert!(
      skipped > 1000,
      "{skipped} searches started late or were skipped"
    );
  }

  #[test]
  fn the_bytes_a_match_starts_with() {
    let bytes = |pattern: &str| {
      PlainImportant::new(pattern)
        .unwrap()
        .first_bytes
        .map(|set| String::from_utf8_lossy(&set.bytes().collect::<Vec<_>>()).into_owned())
    };
    assert_eq!(
      bytes("(?i)error|fail|exception|panic|listening|ready").as_deref(),
      Some("EFLPReflpr")
    );
    assert_eq!(bytes(r"\berror\b|^panic").as_deref(), Some("ep"));
    assert_eq!(bytes("[0-9]+ failed").as_deref(), Some("0123456789"));
    // (?i)k also matches the Kelvin sign, whose UTF-8 starts with 0xE2.
    let kelvin = PlainImportant::new("(?i)k").unwrap().first_bytes.unwrap();
    assert_eq!(kelvin.bytes().collect::<Vec<_>>(), vec![b'K', b'k', 0xE2]);
    // No set: the pattern may match the empty string, or starts with a large class.
    for pattern in ["x*", "^$", r"(?m)^", r"\w+error", "(?s).{3}", "[^y]", "a?"] {
      assert_eq!(bytes(pattern), None, "{pattern}");
    }
  }

  #[test]
  fn anchors_need_tight_lines_and_word_boundaries_do_not() {
    for (pattern, tight) in [
      ("(?i)error|fail", false),
      (r"\berror\b", false),
      ("^error", true),
      ("error$", true),
      (r"\Aerror", true),
      ("(?m)^error", true),
    ] {
      assert_eq!(
        PlainImportant::new(pattern).unwrap().needs_tight_lines(),
        tight,
        "{pattern}"
      );
    }
    // `^` searched in a run finds a line that starts with the word, not one in the middle.
    let plain = PlainImportant::new("^error").unwrap();
    assert_eq!(plain.first_candidate(b"ok\nan error\nerror x\n"), Some(12));
    assert_eq!(plain.first_candidate(b"ok\nan error\n"), None);
  }
}
