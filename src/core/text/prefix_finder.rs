//! Where, in a run of plain lines, a match of an `important` pattern may start: a search for
//! the pattern's prefix literals, for [`super::PlainImportant`] on a firehose.
//!
//! The `regex` crate searches `(?i)error|fail|…` with its own prefilter, which expands each
//! case-insensitive prefix into its case variants (`err`, `eRr`, `ERR`, … and the Unicode
//! folds of `s` and `k`): about fifty literals, too many for the fast form of its SIMD
//! search. In a plain run every byte is ASCII, so the variants of one prefix differ only in
//! the case of ASCII letters, and an ASCII letter and its other case share their low
//! nibble and differ in one bit of the high one. One prefix and its variants therefore fit
//! one *bucket* of a nibble-table search (Teddy, as in the `aho-corasick` crate): for each of
//! the first [`PREFIX_LEN`] positions, a byte is in the bucket when its low nibble and its
//! high nibble both are. With at most eight buckets a 32-byte lane is tested with six table
//! lookups and no false positive but those of a bucket's own combinations of cases.
//!
//! What the finder reports is a *candidate*: every match of the pattern in a plain run starts
//! at a position the finder reports (its first bytes are one of the prefix literals), and a
//! candidate is then checked with the regex itself.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::Hir;

/// How many bytes of each prefix literal the search tests.
pub const PREFIX_LEN: usize = 3;

/// The most buckets (distinct prefixes up to ASCII case) a finder holds: one bit each.
const MAX_BUCKETS: usize = 8;

/// A nibble-table search for at most [`MAX_BUCKETS`] prefixes of at most [`PREFIX_LEN`]
/// bytes, each byte of each prefix exact or either case of an ASCII letter.
#[derive(Clone, PartialEq, Eq)]
pub struct PrefixFinder {
  /// `low[k][n]`: the buckets whose byte at position `k` may have low nibble `n`.
  low: [[u8; 16]; PREFIX_LEN],
  /// `high[k][n]`: the same for high nibble `n`.
  high: [[u8; 16]; PREFIX_LEN],
  /// `short[k]`: the buckets whose prefix is at most `k` bytes long (any byte, or none, may
  /// follow them at position `k`).
  short: [u8; PREFIX_LEN],
}

impl PrefixFinder {
  /// The finder for `hir`'s matches in plain runs (bytes `0x20..=0x7F` but `<`, TAB, `\r`,
  /// `\n`):
  /// `None` when its matches have no finite set of non-empty prefixes, or more than
  /// [`MAX_BUCKETS`] of them up to ASCII case.
  pub fn new(hir: &Hir) -> Option<Self> {
    let mut prefixes = Extractor::new()
      .kind(ExtractKind::Prefix)
      .limit_class(16)
      .limit_literal_len(PREFIX_LEN)
      .limit_total(256)
      .extract(hir);
    prefixes.keep_first_bytes(PREFIX_LEN);
    let literals = prefixes.literals()?;
    let mut buckets: Vec<(Vec<u8>, [Vec<u8>; PREFIX_LEN])> = Vec::new();
    for literal in literals {
      let bytes = literal.as_bytes();
      if bytes.is_empty() {
        // A match may start anywhere.
        return None;
      }
      if !bytes.iter().all(|&b| in_plain_run(b)) {
        // Never found in a plain run.
        continue;
      }
      let folded = bytes.to_ascii_lowercase();
      let at = match buckets.iter().position(|(key, _)| *key == folded) {
        Some(at) => at,
        None => {
          buckets.push((folded, Default::default()));
          buckets.len() - 1
        }
      };
      for (k, &b) in bytes.iter().enumerate() {
        let variants = &mut buckets[at].1[k];
        if !variants.contains(&b) {
          variants.push(b);
        }
      }
    }
    if buckets.len() > MAX_BUCKETS {
      return None;
    }
    let mut finder = Self {
      low: [[0; 16]; PREFIX_LEN],
      high: [[0; 16]; PREFIX_LEN],
      short: [0; PREFIX_LEN],
    };
    for (bucket, (key, variants)) in buckets.iter().enumerate() {
      let bit = 1u8 << bucket;
      for (k, bytes) in variants.iter().enumerate() {
        if k >= key.len() {
          finder.short[k] |= bit;
          finder.low[k].iter_mut().for_each(|entry| *entry |= bit);
          finder.high[k].iter_mut().for_each(|entry| *entry |= bit);
          continue;
        }
        for &b in bytes {
          finder.low[k][usize::from(b & 0x0F)] |= bit;
          finder.high[k][usize::from(b >> 4)] |= bit;
        }
      }
    }
    Some(finder)
  }

  /// True when the search is vectorized on this CPU (otherwise the regex's own prefilter is
  /// the faster one).
  pub fn is_vectorized() -> bool {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2() {
      return true;
    }
    false
  }

  /// The first candidate at or after `from` in `haystack`.
  pub fn find(&self, haystack: &[u8], from: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if super::bytes::avx512::available() {
      // SAFETY: the CPU has the features.
      return unsafe { self.find_avx512(haystack, from) };
    }
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2() {
      // SAFETY: the CPU has the features.
      return unsafe { self.find_avx2(haystack, from) };
    }
    self.find_scalar(haystack, from)
  }

  /// The buckets the bytes at `at..` may start, byte by byte; past the end of `haystack`
  /// only the prefixes that are already complete.
  #[inline]
  fn buckets_at(&self, haystack: &[u8], at: usize) -> u8 {
    let mut buckets = !0u8;
    for k in 0..PREFIX_LEN {
      buckets &= match haystack.get(at + k) {
        Some(&b) => self.low[k][usize::from(b & 0x0F)] & self.high[k][usize::from(b >> 4)],
        None => self.short[k],
      };
    }
    buckets
  }

  /// [`Self::find`], one byte at a time: the definition the vectorized search is tested
  /// against.
  pub fn find_scalar(&self, haystack: &[u8], from: usize) -> Option<usize> {
    (from..haystack.len()).find(|&at| self.buckets_at(haystack, at) != 0)
  }

  /// [`Self::find_avx2`], 64 bytes at a time.
  #[cfg(target_arch = "x86_64")]
  #[target_feature(enable = "avx512f,avx512bw,avx2,bmi1")]
  fn find_avx512(&self, haystack: &[u8], from: usize) -> Option<usize> {
    use std::arch::x86_64::{__m512i, _mm512_and_si512, _mm512_set1_epi8, _mm512_test_epi8_mask};

    use crate::text::bytes::avx512::{load, nibble_classes, nibble_table};

    let low: [__m512i; PREFIX_LEN] = std::array::from_fn(|k| nibble_table(&self.low[k]));
    let high: [__m512i; PREFIX_LEN] = std::array::from_fn(|k| nibble_table(&self.high[k]));
    let mut at = from;
    // Each block reads bytes `at..at + 64 + PREFIX_LEN - 1`.
    while at + 64 + PREFIX_LEN - 1 <= haystack.len() {
      let mut buckets = _mm512_set1_epi8(-1);
      for k in 0..PREFIX_LEN {
        buckets = _mm512_and_si512(
          buckets,
          nibble_classes(load(haystack, at + k), low[k], high[k]),
        );
      }
      let found = _mm512_test_epi8_mask(buckets, buckets);
      if found != 0 {
        return Some(at + found.trailing_zeros() as usize);
      }
      at += 64;
    }
    self.find_avx2(haystack, at)
  }

  #[cfg(target_arch = "x86_64")]
  #[target_feature(enable = "avx2,bmi1")]
  fn find_avx2(&self, haystack: &[u8], from: usize) -> Option<usize> {
    use std::arch::x86_64::{__m256i, _mm256_and_si256, _mm256_set1_epi8};

    use crate::text::bytes::avx2::{load, nibble_classes, nibble_table, nonzero_bits};

    let low: [__m256i; PREFIX_LEN] = std::array::from_fn(|k| nibble_table(&self.low[k]));
    let high: [__m256i; PREFIX_LEN] = std::array::from_fn(|k| nibble_table(&self.high[k]));
    let mut at = from;
    // Each lane reads bytes `at..at + 32 + PREFIX_LEN - 1`.
    while at + 32 + PREFIX_LEN - 1 <= haystack.len() {
      let mut buckets = _mm256_set1_epi8(-1);
      for k in 0..PREFIX_LEN {
        buckets = _mm256_and_si256(
          buckets,
          nibble_classes(load(haystack, at + k), low[k], high[k]),
        );
      }
      let found = nonzero_bits(buckets);
      if found != 0 {
        return Some(at + found.trailing_zeros() as usize);
      }
      at += 32;
    }
    self.find_scalar(haystack, at)
  }
}

impl std::fmt::Debug for PrefixFinder {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("PrefixFinder")
      .field(
        "buckets",
        &self.low[0].iter().fold(0u8, |all, &b| all | b).count_ones(),
      )
      .finish()
  }
}

/// Bytes a plain run may hold.
fn in_plain_run(b: u8) -> bool {
  (0x20..=0x7F).contains(&b) && b != b'<' || matches!(b, b'\t' | b'\r' | b'\n')
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::text::test_support::XorShift;

  fn finder(pattern: &str) -> Option<PrefixFinder> {
    PrefixFinder::new(&regex_syntax::Parser::new().parse(pattern).unwrap())
  }

  /// Every position where a match of `pattern` may start (the regex's matches at each
  /// position, anchored there by searching the rest of the haystack from it).
  fn match_starts(pattern: &str, haystack: &[u8]) -> Vec<usize> {
    let regex = regex::bytes::Regex::new(&format!("^(?:{pattern})")).unwrap();
    (0..haystack.len())
      .filter(|&at| regex.is_match(&haystack[at..]))
      .collect()
  }

  fn random_plain(rng: &mut XorShift, len: usize) -> Vec<u8> {
    let pieces: [&[u8]; 14] = [
      b"error",
      b"ERR",
      b"eRrOr",
      b"fail",
      b"FA",
      b"ready",
      b"Rea",
      b"list",
      b"LISTENING",
      b" ",
      b"\n",
      b"x",
      b"\t",
      b"e",
    ];
    let mut text = Vec::new();
    while text.len() < len {
      text.extend_from_slice(pieces[rng.below(pieces.len())]);
    }
    text
  }

  #[test]
  fn the_recommended_pattern_has_six_buckets_and_no_false_positive_on_letters() {
    let finder = finder("(?i)error|fail|exception|panic|listening|ready").unwrap();
    assert_eq!(format!("{finder:?}"), "PrefixFinder { buckets: 6 }");
    let text = b"firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN\n".repeat(40);
    assert_eq!(finder.find(&text, 0), None);
    assert_eq!(finder.find_scalar(&text, 0), None);
    for word in [
      "error",
      "ERROR",
      "Fail",
      "exCeption",
      "PANIC",
      "listening",
      "LiStEnInG",
      "ready",
    ] {
      let mut text = text.clone();
      text.splice(1000..1000, word.bytes());
      assert_eq!(finder.find(&text, 0), Some(1000), "{word}");
    }
    // Not a prefix of the pattern, in any case.
    for word in ["erx", "fal", "lst", "pam", "rew"] {
      let mut text = text.clone();
      text.splice(1000..1000, word.bytes());
      assert_eq!(finder.find(&text, 0), None, "{word}");
    }
  }

  /// The vectorized search reports what the byte-by-byte one does, at every start and
  /// length, and no match of the pattern starts before the first candidate.
  #[test]
  fn finds_every_match_start_and_agrees_with_the_scalar_search() {
    let patterns = [
      "(?i)error|fail|exception|panic|listening|ready",
      "(?i)ok|err",
      "ERR|Fail|x",
      r"\berror\b|^panic",
      "(?i)k",
      "a[bc]d",
      "(?i)listening",
      "e",
    ];
    let mut rng = XorShift(0x07ED_D1E5);
    for pattern in patterns {
      let finder = finder(pattern).expect(pattern);
      for round in 0..300 {
        let text = random_plain(&mut rng, [5, 40, 200, 1000][round % 4]);
        let from = rng.below(text.len() + 1);
        let found = finder.find(&text, from);
        assert_eq!(found, finder.find_scalar(&text, from), "{pattern}");
        #[cfg(target_arch = "x86_64")]
        {
          if crate::text::has_avx2() {
            // SAFETY: the CPU has the features.
            let avx2 = unsafe { finder.find_avx2(&text, from) };
            assert_eq!(avx2, found, "{pattern}: avx2");
          }
          if crate::text::bytes::avx512::available() {
            // SAFETY: the CPU has the features.
            let avx512 = unsafe { finder.find_avx512(&text, from) };
            assert_eq!(avx512, found, "{pattern}: avx512");
          }
        }
        let starts = match_starts(pattern, &text);
        if let Some(&first) = starts.iter().find(|&&at| at >= from) {
          let found = found.unwrap_or_else(|| panic!("{pattern}: match at {first} missed"));
          assert!(
            found <= first,
            "{pattern}: candidate {found} after match {first}"
          );
        }
      }
    }
  }

  #[test]
  fn no_finder_without_a_finite_set_of_prefixes() {
    for pattern in ["x*", "^$", r"\w+error", "(?s).{3}", "[^y]", "a?", "[a-j]x"] {
      assert_eq!(finder(pattern), None, "{pattern}");
    }
    // Prefixes that cannot occur in a plain run leave a finder that finds nothing.
    let none = finder("é|<x>").unwrap();
    assert_eq!(none.find(b"\xc3\xa9 <x> e x", 0), None);
  }
}
