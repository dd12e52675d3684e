//! One global timer thread with a deadline queue. It carries out the kills of
//! CONTRACT.md §4 items 4 and 5 in Rust (the SIGTERM tree walk, the SIGKILL
//! escalation, the check for leftovers after a task settled), so they happen
//! even when the JavaScript thread is busy or exiting and never cost it a
//! `/proc` scan, without a thread per kill; it also prunes the tracked set.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;

type Job = Box<dyn FnOnce() + Send>;

struct Entry {
  at: Instant,
  sequence: u64,
  job: Job,
}

#[derive(Default)]
struct Queue {
  entries: BinaryHeap<Entry>,
  next_sequence: u64,
}

struct Timer {
  queue: Mutex<Queue>,
  wake: Condvar,
  /// Whether the timer thread could be started.
  running: bool,
}

static TIMER: Lazy<Timer> = Lazy::new(|| {
  let started = std::thread::Builder::new()
    .name("taskstream-timer".into())
    .spawn(run);
  if let Err(error) = &started {
    tracing::warn!("taskstream: cannot start the timer thread: {error}");
  }
  Timer {
    queue: Mutex::new(Queue::default()),
    wake: Condvar::new(),
    running: started.is_ok(),
  }
});

/// Runs `job` on the timer thread once `delay` has passed. Jobs run one at a
/// time, in deadline order (ties in scheduling order); a panicking job is
/// logged and does not stop the thread. If the thread could not be started,
/// the job runs at once: an early kill is better than none.
pub(crate) fn schedule(delay: Duration, job: impl FnOnce() + Send + 'static) {
  let timer = &*TIMER;
  if !timer.running {
    return run_job(Box::new(job));
  }
  let mut queue = lock(&timer.queue);
  let sequence = queue.next_sequence;
  queue.next_sequence += 1;
  queue.entries.push(Entry {
    at: Instant::now() + delay,
    sequence,
    job: Box::new(job),
  });
  timer.wake.notify_one();
}

fn run() {
  let timer = &*TIMER;
  let mut queue = lock(&timer.queue);
  loop {
    let now = Instant::now();
    match queue.entries.peek().map(|e| e.at) {
      Some(at) if at <= now => {
        let entry = queue.entries.pop().expect("peeked");
        drop(queue);
        run_job(entry.job);
        queue = lock(&timer.queue);
      }
      Some(at) => queue = wait(timer, queue, Some(at - now)),
      None => queue = wait(timer, queue, None),
    }
  }
}

fn wait<'a>(
  timer: &'a Timer,
  queue: std::sync::MutexGuard<'a, Queue>,
  timeout: Option<Duration>,
) -> std::sync::MutexGuard<'a, Queue> {
  match timeout {
    Some(t) => {
      timer
        .wake
        .wait_timeout(queue, t)
        .unwrap_or_else(|e| e.into_inner())
        .0
    }
    None => timer.wake.wait(queue).unwrap_or_else(|e| e.into_inner()),
  }
}

fn run_job(job: Job) {
  if catch_unwind(AssertUnwindSafe(job)).is_err() {
    tracing::warn!("taskstream: a timer job panicked");
  }
}

fn lock(queue: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
  crate::sync::lock(queue)
}

// `BinaryHeap` is a max-heap: the earliest deadline must compare greatest.
impl Ord for Entry {
  fn cmp(&self, other: &Self) -> Ordering {
    (other.at, other.sequence).cmp(&(self.at, self.sequence))
  }
}

impl PartialOrd for Entry {
  fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
    Some(self.cmp(other))
  }
}

impl PartialEq for Entry {
  fn eq(&self, other: &Self) -> bool {
    (self.at, self.sequence) == (other.at, other.sequence)
  }
}

impl Eq for Entry {}
