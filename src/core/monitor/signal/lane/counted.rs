//! Counted runs of plain lines (`count_plain`, `count_dropped`): what that many
//! [`SignalLane::offer`] calls would decide, in one step, while no line of the run can pass.

use super::{drop_into, SignalLane, Window};
use crate::monitor::signal::template::template_hash;
use crate::text::{first_and_last, plain_line_texts_rev};

impl SignalLane {
  /// `non_blank` lines at `now_ms`: the non-blank ones of `lines`, complete plain lines none of
  /// which is a candidate of [`Self::plain_important`], decided exactly as that many
  /// [`Self::offer`] calls would while [`Self::counts_plain`] holds: dropped, the digest
  /// recording the first and the last.
  pub fn count_plain(&mut self, non_blank: u64, lines: &[u8], now_ms: i64) {
    debug_assert!(
      self.counts_plain(now_ms),
      "count_plain while a line could pass"
    );
    if non_blank == 0 {
      return;
    }
    if self.context.is_some() {
      self.count_plain_with_context(non_blank, lines);
      return;
    }
    if let Some(digest) = &mut self.digest {
      let (first, last) = first_and_last(lines).expect("non-blank lines");
      digest.record_run_lines(non_blank, lines, first, last);
    }
    self.drop_counted(non_blank, now_ms);
  }

  /// [`Self::count_plain`] with context (and so `sampleLines`: no window changes): every line
  /// is remembered for the repeat test (only the last [`crate::monitor::signal::context::RECENT`] matter), the
  /// lines after the run's last blank line are parked (the last `contextBefore` of them stay
  /// parked), everything else is dropped, as that many [`Self::offer`] calls would.
  fn count_plain_with_context(&mut self, non_blank: u64, lines: &[u8]) {
    let Self {
      context,
      digest,
      dropped,
      ..
    } = self;
    let context = context.as_mut().expect("context");
    // The lines that could still be parked at the end: those after the last blank line, at
    // most `contextBefore` (a blank line drops the parked lines; older ones are pushed out).
    let keep = context.parked_capacity();
    let want_recent = crate::monitor::signal::context::RECENT + keep;
    // One backward pass: the tail, whether a blank line stands before it, and the last
    // RECENT + keep non-blank lines for the repeat test.
    let mut tail: Vec<&str> = Vec::with_capacity(keep);
    let mut tail_open = true;
    let mut tail_blank_before = false;
    let mut recent: Vec<&str> = Vec::with_capacity(want_recent);
    for line in plain_line_texts_rev(lines) {
      if tail_open {
        if line.is_empty() {
          tail_open = false;
          tail_blank_before = true;
        } else if tail.len() < keep {
          tail.push(line);
        } else {
          tail_open = false;
        }
      }
      if !line.is_empty() && recent.len() < want_recent {
        recent.push(line);
      }
      if !tail_open && recent.len() == want_recent {
        break;
      }
    }
    tail.reverse();
    // The repeat test sees every line; only the last RECENT can matter after the run. A line
    // equal to the one before it has its template (a firehose hashes once a run).
    recent.truncate(crate::monitor::signal::context::RECENT + tail.len());
    let mut repeats = Vec::with_capacity(tail.len());
    let mut previous: Option<(&str, u64)> = None;
    for (index, line) in recent.iter().rev().enumerate() {
      let hash = match previous {
        Some((text, hash)) if text == *line => hash,
        _ => template_hash(line),
      };
      previous = Some((line, hash));
      let r = context.observe_hash(hash);
      if index + tail.len() >= recent.len() {
        repeats.push(r);
      }
    }
    let before_tail = non_blank - tail.len() as u64;
    if before_tail > 0 || tail_blank_before {
      // In order: what was parked (pushed out by the run's earlier lines, or dropped by a blank
      // line), then the run's dropped lines; the tail takes the parked lines' place.
      for text in context.parked_texts() {
        drop_into(digest, dropped, text);
      }
      if before_tail > 0 {
        *dropped += before_tail;
        if let Some(digest) = digest {
          let head = &lines[..tail_start(lines, tail.len()).unwrap_or(0)];
          if let Some((first, last)) = first_and_last(head) {
            digest.record_run_lines(before_tail, head, first, last);
          }
        }
      }
      context.replace_parked(&tail, &repeats);
      return;
    }
    // The whole run joins the parked lines, pushing the oldest out.
    for (line, r) in tail.iter().zip(repeats) {
      if let Some(text) = context.park((*line).to_owned(), r) {
        drop_into(digest, dropped, &text);
      }
    }
  }

  /// `lines` non-blank lines at `now_ms`, exactly as that many [`Self::offer`] calls would
  /// decide them while [`Self::counts_only`] holds (windows opened, filled and closed, the
  /// bucket's refill point moved), in O(1).
  pub fn count_dropped(&mut self, lines: u64, now_ms: i64) {
    debug_assert!(
      self.counts_only(now_ms),
      "count_dropped while a line could pass"
    );
    self.drop_counted(lines, now_ms);
  }

  /// [`Self::count_dropped`] without the check (the digest is the caller's).
  fn drop_counted(&mut self, lines: u64, now_ms: i64) {
    if lines == 0 {
      return;
    }
    self.dropped += lines;
    if self.config.sample_lines.is_some() {
      // Sampling: a dropped line opens no window, joins none and asks the bucket nothing (it
      // is counted only while no token may go to it).
      return;
    }
    let Some(batch_ms) = self.config.batch_ms else {
      // Each line's failing `try_take`; after the first, the others change nothing.
      self.fail_main_take(now_ms);
      return;
    };
    let max = u64::from(self.config.max_batch_lines);
    let mut rest = lines;
    if let Some(window) = &mut self.window {
      if now_ms.saturating_sub(window.opened_ms) < batch_ms as i64 {
        let room = max - u64::from(window.count);
        if rest < room {
          window.count += rest as u32;
          return;
        }
        rest -= room;
      }
      // Full, or due: it closes (a dropped window sends nothing).
      self.window = None;
    }
    if rest == 0 {
      return;
    }
    // Every later window opens on the empty bucket: dropped windows of `max` lines, the last
    // one left open with the remainder.
    self.fail_main_take(now_ms);
    let open = rest % max;
    if open > 0 {
      self.window = Some(Window {
        opened_ms: now_ms,
        delivered: false,
        count: open as u32,
        lines: Vec::new(),
        marks: Vec::new(),
        ordinary: 0,
        number: self.windows_opened,
      });
      self.windows_opened += 1;
    }
  }
}

/// Where the last `tail` non-blank lines of `lines` (complete plain lines, no blank line among
/// them) start.
fn tail_start(lines: &[u8], tail: usize) -> Option<usize> {
  if tail == 0 {
    return Some(lines.len());
  }
  let body = lines.strip_suffix(b"\n").unwrap_or(lines);
  let mut seen = 0;
  for (index, &b) in body.iter().enumerate().rev() {
    if b == b'\n' {
      seen += 1;
      if seen == tail {
        return Some(index + 1);
      }
    }
  }
  (seen + 1 == tail).then_some(0)
}
