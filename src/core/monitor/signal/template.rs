//! Line templates (API.md §6.7 `digest: 'templates'`, `contextBefore`/`contextAfter`): a line
//! with every word that holds a digit replaced by `#`, so that lines differing only in numbers,
//! ids or hashes share one template. A word is a maximal run of ASCII letters, digits and `_`;
//! everything else is kept as it is.
//!
//! `INFO  GET /api/items/1234 200 3ms user=7` and `INFO  GET /api/items/99 500 12ms user=3`
//! share the template `INFO  GET /api/items/# # # user=#` (`3ms` is a word holding a digit).
//!
//! Two uses: [`template_hash`] tells the context rules whether a line repeats one just seen (the
//! ordinary stream), and [`TemplateTally`] groups the dropped lines of a digest.

/// The template of `line` ([`template_hash`]'s words, written out), cut to
/// [`TEMPLATE_CHARS`] chars.
pub fn template_text(line: &str) -> String {
  let mut out = String::with_capacity(line.len().min(TEMPLATE_CHARS));
  let mut chars = 0;
  for piece in pieces(line) {
    let text = match piece {
      Piece::Number => "#",
      Piece::Text(text) => text,
    };
    for c in text.chars() {
      if chars == TEMPLATE_CHARS {
        out.push('…');
        return out;
      }
      out.push(c);
      chars += 1;
    }
  }
  out
}

/// Templates quoted in a digest are cut to this many chars (then `…`).
pub const TEMPLATE_CHARS: usize = 120;

/// A 64-bit FNV-1a hash of `line`'s template, computed without building it.
pub fn template_hash(line: &str) -> u64 {
  let mut hash = FNV_OFFSET;
  for piece in pieces(line) {
    let bytes: &[u8] = match piece {
      Piece::Number => b"\x00#",
      Piece::Text(text) => text.as_bytes(),
    };
    for &b in bytes {
      hash ^= u64::from(b);
      hash = hash.wrapping_mul(FNV_PRIME);
    }
  }
  hash
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

enum Piece<'a> {
  /// A word holding a digit.
  Number,
  /// A word without digits, or a run of other chars.
  Text(&'a str),
}

fn is_word(b: u8) -> bool {
  b.is_ascii_alphanumeric() || b == b'_'
}

/// `line` as words and the runs between them.
fn pieces(line: &str) -> impl Iterator<Item = Piece<'_>> {
  let bytes = line.as_bytes();
  let mut at = 0;
  std::iter::from_fn(move || {
    if at >= bytes.len() {
      return None;
    }
    let start = at;
    let word = is_word(bytes[at]);
    while at < bytes.len() && is_word(bytes[at]) == word {
      at += 1;
    }
    // Runs end on ASCII bytes, so the slice is on char boundaries.
    let text = &line[start..at];
    Some(if word && text.bytes().any(|b| b.is_ascii_digit()) {
      Piece::Number
    } else {
      Piece::Text(text)
    })
  })
}

/// Dropped lines grouped by template, for one digest: at most [`TALLY_LINES`] lines are
/// tallied per digest (the rest are only counted by the digest), into at most
/// [`TALLY_TEMPLATES`] templates (a line of another template then counts as untallied too).
#[derive(Debug, Clone, Default)]
pub struct TemplateTally {
  /// (hash, lines, template text), in order of first appearance.
  groups: Vec<(u64, u64, String)>,
  tallied: u64,
}

/// Lines tallied per digest: the cost of templates stays bounded on a firehose.
pub const TALLY_LINES: u64 = 256;
/// Templates kept per digest.
pub const TALLY_TEMPLATES: usize = 16;

impl TemplateTally {
  /// Whether another line would be tallied.
  pub fn wants_more(&self) -> bool {
    self.tallied < TALLY_LINES
  }

  /// One dropped line (sanitised). Ignored past [`TALLY_LINES`] lines.
  pub fn record(&mut self, line: &str) {
    if !self.wants_more() {
      return;
    }
    let hash = template_hash(line);
    if let Some(group) = self.groups.iter_mut().find(|g| g.0 == hash) {
      group.1 += 1;
    } else if self.groups.len() < TALLY_TEMPLATES {
      self.groups.push((hash, 1, template_text(line)));
    } else {
      return;
    }
    self.tallied += 1;
  }

  /// The groups, most lines first (ties: first seen first), and a fresh start.
  pub fn take(&mut self) -> Vec<(u64, String)> {
    let mut groups: Vec<(u64, String)> = std::mem::take(&mut self.groups)
      .into_iter()
      .map(|(_, count, text)| (count, text))
      .collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.0));
    self.tallied = 0;
    groups
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn numbers_ids_and_hashes_become_one_mark() {
    assert_eq!(
      template_text("INFO  GET /api/items/1234 200 3ms user=7"),
      "INFO  GET /api/items/# # # user=#"
    );
    assert_eq!(
      template_text("commit 9f3a2b1c deployed to node-17 in 2.5s"),
      "commit # deployed to node-# in #.#"
    );
    assert_eq!(
      template_text("   Compiling crate_12 v0.3.4"),
      "   Compiling # #.#.#"
    );
    assert_eq!(
      template_text("no digits here, ünïcode"),
      "no digits here, ünïcode"
    );
    assert_eq!(template_text(""), "");
  }

  #[test]
  fn the_hash_is_the_template_s() {
    let a = template_hash("INFO  GET /api/items/1 200 3ms user=1");
    let b = template_hash("INFO  GET /api/items/98765 500 120ms user=16");
    let c = template_hash("ERROR request 1 failed");
    assert_eq!(a, b);
    assert_ne!(a, c);
    // A `#` in the text is not a number.
    assert_ne!(template_hash("a # b"), template_hash("a 1 b"));
  }

  #[test]
  fn long_templates_are_cut() {
    let line = "x".repeat(300);
    let t = template_text(&line);
    assert_eq!(t.chars().count(), TEMPLATE_CHARS + 1);
    assert!(t.ends_with('…'));
  }

  #[test]
  fn the_tally_groups_orders_and_bounds() {
    let mut tally = TemplateTally::default();
    for i in 0..10 {
      tally.record(&format!("GET /items/{i}"));
    }
    tally.record("WARN slow 5ms");
    tally.record("WARN slow 7ms");
    tally.record("ready");
    assert_eq!(
      tally.take(),
      vec![
        (10, "GET /items/#".to_owned()),
        (2, "WARN slow #".to_owned()),
        (1, "ready".to_owned())
      ]
    );
    assert!(tally.take().is_empty());
    for i in 0..(TALLY_LINES + 50) {
      tally.record(&format!("line {i}"));
    }
    assert!(!tally.wants_more());
    assert_eq!(tally.take(), vec![(TALLY_LINES, "line #".to_owned())]);
    for i in 0..(TALLY_TEMPLATES + 3) {
      tally.record(&"k".repeat(i + 1));
    }
    assert_eq!(tally.take().len(), TALLY_TEMPLATES);
  }
}
