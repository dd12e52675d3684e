//! Context lines (API.md §6.7 `contextBefore`, `contextAfter`): the lines around an important
//! line that travel with it. Pure bookkeeping for [`super::lane::SignalLane`], which decides
//! where lines go.
//!
//! * A line *repeats* when its template ([`template_hash`]) is among those of the last
//!   [`RECENT`] non-blank lines: that is the ordinary stream (access logs, `Compiling …`), not
//!   the detail of an error (frames, `Expected:`/`Received:`, `--> file:line`), which does not
//!   repeat.
//! * **Before:** the lane parks each line it would drop (at most `contextBefore`, the oldest
//!   leaving as dropped). When an important line is admitted, the parked lines after the last
//!   one that repeats become its context, in order; the rest are dropped. A blank line, or a
//!   line that reaches the model, drops what is parked (context is contiguous).
//! * **After:** up to `contextAfter` lines after an important line join it, where it went (its
//!   window, or the held lines), until a line repeats, a blank line comes, or that place is
//!   gone (the window closed, the held lines left).

use std::collections::VecDeque;

use super::template::template_hash;

/// Templates remembered for the repeat test.
pub const RECENT: usize = 32;

/// Where the last important line went, for its after-context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
  /// The delivered window of this number (windows are numbered as they open).
  Window(u64),
  /// The held lines.
  Held,
}

#[derive(Debug)]
struct Parked {
  text: String,
  repeats: bool,
}

#[derive(Debug)]
pub struct Context {
  before: usize,
  after: u32,
  recent: [u64; RECENT],
  recent_len: usize,
  recent_next: usize,
  parked: VecDeque<Parked>,
  after_left: u32,
  after_place: Option<Place>,
}

impl Context {
  pub fn new(before: u32, after: u32) -> Self {
    Self {
      before: before as usize,
      after,
      recent: [0; RECENT],
      recent_len: 0,
      recent_next: 0,
      parked: VecDeque::with_capacity(before as usize),
      after_left: 0,
      after_place: None,
    }
  }

  /// A non-blank line arrives: whether it repeats a recent template; it is then remembered.
  pub fn observe(&mut self, line: &str) -> bool {
    self.observe_hash(template_hash(line))
  }

  /// A line the lane would drop is parked instead; the line that no longer fits (or `text`
  /// itself without `contextBefore`) is returned, to be dropped.
  pub fn park(&mut self, text: String, repeats: bool) -> Option<String> {
    if self.before == 0 {
      return Some(text);
    }
    self.parked.push_back(Parked { text, repeats });
    if self.parked.len() > self.before {
      return self.parked.pop_front().map(|p| p.text);
    }
    None
  }

  /// The parked lines, oldest first (to drop them before [`Self::replace_parked`]).
  pub fn parked_texts(&self) -> impl Iterator<Item = &str> {
    self.parked.iter().map(|p| p.text.as_str())
  }

  /// Replaces the parked lines with `tail` (at most `contextBefore`, with whether each
  /// repeats), reusing their buffers: a run of counted lines parks its last lines at no
  /// allocation once the buffers have their size. The old ones must have been dropped.
  pub fn replace_parked(&mut self, tail: &[&str], repeats: &[bool]) {
    debug_assert!(tail.len() <= self.before && tail.len() == repeats.len());
    for (index, (line, &repeats)) in tail.iter().zip(repeats).enumerate() {
      match self.parked.get_mut(index) {
        Some(parked) => {
          parked.text.clear();
          parked.text.push_str(line);
          parked.repeats = repeats;
        }
        None => self.parked.push_back(Parked {
          text: (*line).to_owned(),
          repeats,
        }),
      }
    }
    self.parked.truncate(tail.len());
  }

  /// [`Self::observe`] for a line whose template hash is known.
  pub fn observe_hash(&mut self, hash: u64) -> bool {
    let repeats = self.recent[..self.recent_len].contains(&hash);
    self.recent[self.recent_next] = hash;
    self.recent_next = (self.recent_next + 1) % RECENT;
    self.recent_len = (self.recent_len + 1).min(RECENT);
    repeats
  }

  /// Lines parked, to be dropped now (a blank line, a line that reaches the model, the end).
  pub fn unpark(&mut self) -> impl Iterator<Item = String> + '_ {
    self.parked.drain(..).map(|p| p.text)
  }

  /// Whether lines are parked at all (`contextBefore` > 0).
  pub fn wants_parked(&self) -> bool {
    self.before > 0
  }

  /// At most this many lines are parked (`contextBefore`).
  pub fn parked_capacity(&self) -> usize {
    self.before
  }

  /// An important line is admitted at `place`: its before-context (in order) and the parked
  /// lines that are not (to drop); its after-context starts.
  pub fn important(&mut self, place: Place) -> (Vec<String>, Vec<String>) {
    let keep = self.parked.iter().rev().take_while(|p| !p.repeats).count();
    let split = self.parked.len() - keep;
    let context: Vec<String> = self.parked.drain(split..).map(|p| p.text).collect();
    let dropped: Vec<String> = self.parked.drain(..).map(|p| p.text).collect();
    self.after_left = self.after;
    self.after_place = Some(place);
    (context, dropped)
  }

  /// A non-important line that `repeats` (or not): where it joins as after-context, if it does;
  /// `open` tells whether a place still takes lines.
  pub fn after_context(&mut self, repeats: bool, open: impl Fn(Place) -> bool) -> Option<Place> {
    let place = self.after_place.filter(|_| self.after_left > 0)?;
    if repeats || !open(place) {
      self.end_after();
      return None;
    }
    self.after_left -= 1;
    Some(place)
  }

  /// Whether lines may still join as after-context (the fast paths must then stay off).
  pub fn after_open(&self) -> bool {
    self.after_left > 0
  }

  /// A blank line: the after-context ends; the parked lines are returned to drop.
  pub fn blank(&mut self) -> impl Iterator<Item = String> + '_ {
    self.end_after();
    self.unpark()
  }

  fn end_after(&mut self) {
    self.after_left = 0;
    self.after_place = None;
  }

  /// The held lines moved into the window `number`: after-context follows them there.
  pub fn held_moved(&mut self, number: u64) {
    if self.after_place == Some(Place::Held) {
      self.after_place = Some(Place::Window(number));
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn repeats_are_recent_templates() {
    let mut c = Context::new(3, 3);
    assert!(!c.observe("GET /items/1 200"));
    assert!(c.observe("GET /items/2 200"));
    assert!(!c.observe("ERROR boom"));
    assert!(!c.observe("  at main (app.js:3:7)"));
    // Forgotten after RECENT other lines.
    for i in 0..RECENT {
      c.observe(&format!("other{}", "x".repeat(i)));
    }
    assert!(!c.observe("GET /items/3 200"));
  }

  #[test]
  fn before_context_stops_at_the_ordinary_stream() {
    let mut c = Context::new(3, 0);
    assert_eq!(c.park("INFO a".into(), true), None);
    assert_eq!(c.park("Traceback".into(), false), None);
    assert_eq!(c.park("  File x".into(), false), None);
    // A fourth line pushes the oldest out.
    assert_eq!(c.park("  File y".into(), false), Some("INFO a".into()));
    let (context, dropped) = c.important(Place::Held);
    assert_eq!(context, ["Traceback", "  File x", "  File y"]);
    assert!(dropped.is_empty());
    c.park("INFO b".into(), true);
    c.park("detail".into(), false);
    let (context, dropped) = c.important(Place::Held);
    assert_eq!(context, ["detail"]);
    assert_eq!(dropped, ["INFO b"]);
    // Without contextBefore nothing is parked.
    let mut c = Context::new(0, 2);
    assert_eq!(c.park("x".into(), false), Some("x".into()));
  }

  #[test]
  fn after_context_counts_and_ends() {
    let mut c = Context::new(0, 2);
    c.important(Place::Window(4));
    assert_eq!(c.after_context(false, |_| true), Some(Place::Window(4)));
    assert!(c.after_open());
    assert_eq!(c.after_context(false, |_| true), Some(Place::Window(4)));
    assert_eq!(c.after_context(false, |_| true), None);
    // A repeat ends it.
    c.important(Place::Held);
    assert_eq!(c.after_context(true, |_| true), None);
    assert_eq!(c.after_context(false, |_| true), None);
    // A closed place ends it; held lines that moved take it along.
    c.important(Place::Held);
    c.held_moved(7);
    assert_eq!(
      c.after_context(false, |p| p == Place::Window(7)),
      Some(Place::Window(7))
    );
    assert_eq!(c.after_context(false, |_| false), None);
    assert!(!c.after_open());
    // A blank line ends it.
    c.important(Place::Held);
    assert_eq!(c.blank().count(), 0);
    assert_eq!(c.after_context(false, |_| true), None);
  }
}
