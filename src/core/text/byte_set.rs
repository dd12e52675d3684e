//! A set of bytes and the search for the first byte of a haystack in it: the skip before a
//! regex search on a run of plain lines (`text::plain`), where every match must start
//! with one of a few bytes. With AVX2 the search looks at 32 bytes per step with two nibble
//! table lookups (the "shufti" technique); elsewhere it is a table lookup per byte.
//!
//! The nibble tables may say "maybe" for a byte that is not in the set (bytes whose high nibbles
//! differ by 8 share a bucket); each such hit is checked against the exact table, so
//! [`ByteSet::find_in`] is exact.

/// A set of bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct ByteSet {
  /// Bit `b % 64` of word `b / 64`: byte `b` is in the set.
  members: [u64; 4],
  /// For low nibble `l`: bit `h % 8` set when byte `h << 4 | l` is in the set for some `h`.
  low: [u8; 16],
  /// For high nibble `h`: bit `h % 8`.
  high: [u8; 16],
}

impl ByteSet {
  /// The set of `bytes`.
  pub fn new(bytes: impl IntoIterator<Item = u8>) -> Self {
    let mut set = Self {
      members: [0; 4],
      low: [0; 16],
      high: std::array::from_fn(|h| 1 << (h % 8)),
    };
    for b in bytes {
      set.members[usize::from(b / 64)] |= 1 << (b % 64);
      set.low[usize::from(b & 0x0F)] |= 1 << ((b >> 4) % 8);
    }
    set
  }

  /// True when `b` is in the set.
  #[inline]
  pub fn contains(&self, b: u8) -> bool {
    self.members[usize::from(b / 64)] & (1 << (b % 64)) != 0
  }

  /// The bytes in the set, in increasing order.
  pub fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
    (0..=255u8).filter(|&b| self.contains(b))
  }

  /// True when [`Self::find_in`] looks at many bytes per step here (AVX2); elsewhere it looks
  /// at one byte at a time, slower than a regex's own literal search, so callers skip it.
  pub fn is_vectorized() -> bool {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2() {
      return true;
    }
    false
  }

  /// Where the first byte of `haystack` that is in the set is.
  pub fn find_in(&self, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2() {
      // SAFETY: the CPU has AVX2.
      return unsafe { self.find_avx2(haystack) };
    }
    self.find_from(haystack, 0)
  }

  /// The exact search from `at`, one byte at a time.
  fn find_from(&self, haystack: &[u8], at: usize) -> Option<usize> {
    haystack[at..]
      .iter()
      .position(|&b| self.contains(b))
      .map(|i| at + i)
  }

  #[cfg(target_arch = "x86_64")]
  #[target_feature(enable = "avx2,bmi1")]
  fn find_avx2(&self, haystack: &[u8]) -> Option<usize> {
    use crate::text::bytes::avx2::{load, nibble_classes, nibble_table, nonzero_bits};

    let low_table = nibble_table(&self.low);
    let high_table = nibble_table(&self.high);
    let mut at = 0;
    while at + 32 <= haystack.len() {
      // Bit `i`: byte `at + i` may be in the set.
      let mut maybe = nonzero_bits(nibble_classes(load(haystack, at), low_table, high_table));
      while maybe != 0 {
        let i = at + maybe.trailing_zeros() as usize;
        if self.contains(haystack[i]) {
          return Some(i);
        }
        maybe &= maybe - 1;
      }
      at += 32;
    }
    self.find_from(haystack, at)
  }
}

impl std::fmt::Debug for ByteSet {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_set()
      .entries(
        self
          .bytes()
          .map(|b| std::ascii::escape_default(b).to_string()),
      )
      .finish()
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::text::test_support::XorShift;

  #[test]
  fn find_in_is_the_first_member_at_every_length_and_offset() {
    let mut rng = XorShift(0x0B17_E5E7);
    for round in 0..400 {
      // Sets of a few bytes, sets sharing buckets (high nibbles 8 apart), and large ones.
      let size = [1, 3, 10, 40, 200][round % 5];
      let set = ByteSet::new((0..size).map(|_| rng.below(256) as u8));
      let exact = |haystack: &[u8]| haystack.iter().position(|&b| set.contains(b));
      let len = rng.below(300);
      let mut haystack: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
      // Keep members rare, so the first one can sit anywhere.
      for b in haystack.iter_mut() {
        if set.contains(*b) && rng.below(20) != 0 {
          *b = (*b).wrapping_add(8 << 4);
          if set.contains(*b) {
            *b = 0;
          }
        }
      }
      for start in 0..haystack.len().min(40) {
        let slice = &haystack[start..];
        assert_eq!(set.find_in(slice), exact(slice), "{set:?} in {slice:?}");
        assert_eq!(
          set.find_from(slice, 0),
          exact(slice),
          "{set:?} in {slice:?}"
        );
      }
    }
  }

  #[test]
  fn a_byte_sharing_a_bucket_with_a_member_is_not_found() {
    // 0x45 ('E') and 0xC5 share the bucket of high nibbles 4 and 12.
    let set = ByteSet::new([b'E']);
    let mut haystack = vec![0xC5; 100];
    assert_eq!(set.find_in(&haystack), None);
    haystack[70] = b'E';
    assert_eq!(set.find_in(&haystack), Some(70));
    assert!(set.contains(b'E') && !set.contains(0xC5));
    assert_eq!(set.bytes().collect::<Vec<_>>(), vec![b'E']);
  }

  #[test]
  fn the_empty_set_finds_nothing() {
    let set = ByteSet::new([]);
    assert_eq!(set.find_in(&[0u8, 1, 255, b'a'].repeat(20)), None);
  }
}
