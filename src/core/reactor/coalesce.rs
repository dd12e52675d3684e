//! Read coalescing: fewer, fuller reads from a streaming pipe.
//!
//! A writer that streams in small writes (`tr`, `head -c`, a progress bar
//! redrawn with `\r`, most pipelines) makes the kernel wake the reactor for
//! nearly every write, since a pipe wakes its reader whenever it was empty.
//! Each wake-up then carries a few KiB: an `epoll_wait`, a read and two
//! context switches per few KiB, which cost more CPU than reading the bytes
//! (measured in `bench/shapes.mjs`: over half the host CPU of the `\r`-redraw
//! and one-line shapes was the scheduler's).
//!
//! So after a turn in which a pipe gave a small read ([`SMALL_TURN`]) and had
//! given one shortly before ([`STREAK_GAP`]: the writer is streaming, not
//! printing a line now and then), the reactor naps [`NAP`] before it waits
//! again; the pipe fills meanwhile and the next read carries more.
//!
//! A nap never makes a writer block: only pipes enlarged to 1 MiB count (1 MiB
//! holds 200 µs of a 5 GB/s writer), and a turn in which any other pipe gave
//! data vetoes the nap (its writer may have only the default 64 KiB). It
//! never delays the first line after a quiet spell (the streak needs two small
//! reads within a millisecond; the read is handled before the nap), and a nap
//! delays a streaming task's next read, its exit and the reactor's timers by
//! at most [`NAP`]. Stops do not run on reactor threads.

use std::time::{Duration, Instant};

/// How long the reactor naps before its next wait.
pub const NAP: Duration = Duration::from_micros(200);
/// A turn that read less than this from a pipe is small.
pub const SMALL_TURN: usize = 32 * 1024;
/// Two small turns this close together are a stream.
pub const STREAK_GAP: Duration = Duration::from_millis(1);

/// One reactor thread's coalescing state. Pure: times are given.
#[derive(Debug, Default)]
pub struct Coalescer {
  last_small: Option<Instant>,
  nap_due: bool,
  vetoed: bool,
}

impl Coalescer {
  /// A pipe's turn read `bytes` in all; `enlarged`: the pipe holds 1 MiB.
  pub fn on_turn(&mut self, bytes: usize, enlarged: bool, now: Instant) {
    if bytes == 0 {
      return;
    }
    if !enlarged {
      self.vetoed = true;
      return;
    }
    if bytes >= SMALL_TURN {
      return;
    }
    if self
      .last_small
      .is_some_and(|last| now.saturating_duration_since(last) < STREAK_GAP)
    {
      self.nap_due = true;
    }
    self.last_small = Some(now);
  }

  /// Before the reactor waits again: the nap to take, if any (once per turn).
  pub fn take_nap(&mut self) -> Option<Duration> {
    let nap = self.nap_due && !self.vetoed;
    self.nap_due = false;
    self.vetoed = false;
    nap.then_some(NAP)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn at(start: Instant, micros: u64) -> Instant {
    start + Duration::from_micros(micros)
  }

  #[test]
  fn a_streak_of_small_reads_on_an_enlarged_pipe_naps() {
    let t = Instant::now();
    let mut c = Coalescer::default();
    c.on_turn(4096, true, at(t, 0));
    assert_eq!(c.take_nap(), None, "one small read is a line now and then");
    c.on_turn(4096, true, at(t, 300));
    assert_eq!(c.take_nap(), Some(NAP));
    assert_eq!(c.take_nap(), None, "once per turn");
    c.on_turn(8192, true, at(t, 900));
    assert_eq!(c.take_nap(), Some(NAP));
  }

  #[test]
  fn sparse_output_never_naps() {
    let t = Instant::now();
    let mut c = Coalescer::default();
    for i in 0..10 {
      c.on_turn(100, true, at(t, i * 50_000));
      assert_eq!(c.take_nap(), None);
    }
    c.on_turn(100, true, at(t, 600_000));
    c.on_turn(100, true, at(t, 600_000 + 1_000));
    assert_eq!(c.take_nap(), None, "exactly the gap apart is not a stream");
  }

  #[test]
  fn full_reads_and_empty_turns_do_not_nap() {
    let t = Instant::now();
    let mut c = Coalescer::default();
    for i in 0..5 {
      c.on_turn(SMALL_TURN, true, at(t, i * 10));
      c.on_turn(0, true, at(t, i * 10 + 5));
      assert_eq!(c.take_nap(), None);
    }
  }

  #[test]
  fn a_pipe_that_is_not_enlarged_never_naps_and_vetoes_the_turn() {
    let t = Instant::now();
    let mut c = Coalescer::default();
    c.on_turn(100, false, at(t, 0));
    c.on_turn(100, false, at(t, 10));
    assert_eq!(c.take_nap(), None);
    c.on_turn(100, true, at(t, 20));
    c.on_turn(100, true, at(t, 30));
    c.on_turn(100, false, at(t, 40));
    assert_eq!(c.take_nap(), None, "another pipe with data vetoes the nap");
    c.on_turn(100, true, at(t, 50));
    assert_eq!(c.take_nap(), Some(NAP), "the veto lasts one turn");
  }
}
