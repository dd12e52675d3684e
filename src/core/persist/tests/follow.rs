//! The follower on real files: missed bytes, then live bytes, then the end.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::clock::{ManualClock, SharedClock};
use crate::end::TaskEnd;
use crate::persist::end_view::EndView;
use crate::persist::follow::{FollowHooks, FollowPaths, FollowSink, Follower};
use crate::persist::link::{read_cursor, write_cursor};

#[derive(Default)]
struct Seen {
  missed: Vec<u8>,
  caught_up_at: Option<usize>,
  live: Vec<u8>,
  end: Option<Result<EndView, String>>,
}

#[derive(Default)]
struct Sink {
  seen: Mutex<Seen>,
  changed: Condvar,
}

impl FollowSink for Sink {
  fn missed(&self, bytes: &[u8]) {
    self.seen.lock().unwrap().missed.extend_from_slice(bytes);
  }
  fn caught_up(&self) {
    let mut seen = self.seen.lock().unwrap();
    assert!(seen.caught_up_at.is_none(), "caught_up twice");
    seen.caught_up_at = Some(seen.live.len());
  }
  fn bytes(&self, bytes: &[u8]) {
    self.seen.lock().unwrap().live.extend_from_slice(bytes);
    self.changed.notify_all();
  }
  fn ended(&self, end: Result<EndView, String>) {
    let mut seen = self.seen.lock().unwrap();
    assert!(seen.end.is_none(), "ended twice");
    seen.end = Some(end);
    self.changed.notify_all();
  }
}

impl Sink {
  fn wait(&self, done: impl Fn(&Seen) -> bool) {
    let mut seen = self.seen.lock().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done(&seen) {
      let left = deadline.saturating_duration_since(std::time::Instant::now());
      assert!(!left.is_zero(), "timed out following");
      seen = self.changed.wait_timeout(seen, left).unwrap().0;
    }
  }
}

/// The end record stands in as a plain file: present means ended with code 0.
fn read_end(path: &std::path::Path) -> Result<Option<EndView>, String> {
  Ok(path.exists().then(|| EndView {
    end_time: 1.0,
    end: TaskEnd::exited(Some(0)),
    exit_code: Some(0),
    output_bytes: 0,
    dropped_bytes: 0,
  }))
}

#[test]
fn follows_from_the_cursor_counts_what_was_missed_then_reads_live_bytes_to_the_end() {
  let dir = tempfile_dir();
  let log = dir.join("t.log");
  let end = dir.join("t.end.json");
  let cursor = dir.join("t.cursor");
  std::fs::write(&log, b"consumed\nmissed 1\nmissed 2\n").unwrap();
  let sink: Arc<Sink> = Arc::default();
  let dyn_sink: Arc<dyn FollowSink> = sink.clone();
  let follower = Follower::start(
    paths_of(&dir, "t", true),
    9,
    27,
    Arc::downgrade(&dyn_sink),
    FollowHooks {
      read_end,
      write_cursor,
      keeper_alive: Box::new(|| true),
      clock: SharedClock::default(),
    },
  )
  .unwrap();
  let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
  file.write_all(b"live 1\n").unwrap();
  sink.wait(|s| s.live.ends_with(b"live 1\n"));
  file.write_all(b"live 2\n").unwrap();
  std::fs::write(&end, b"").unwrap();
  sink.wait(|s| s.end.is_some());
  let seen = sink.seen.lock().unwrap();
  assert_eq!(seen.missed, b"missed 1\nmissed 2\n");
  assert_eq!(seen.caught_up_at, Some(0));
  assert_eq!(seen.live, b"live 1\nlive 2\n");
  assert!(seen.end.as_ref().unwrap().is_ok());
  assert_eq!(follower.offset(), 41);
  assert_eq!(read_cursor(&cursor, "t"), Some(41));
  assert_eq!(read_cursor(&cursor, "other"), None);
  let _ = std::fs::remove_dir_all(&dir);
}

/// Waits (on the condition, up to 10 s) until `counter` reaches `at_least`.
fn wait_count(counter: &AtomicUsize, at_least: usize, what: &str) {
  let deadline = std::time::Instant::now() + Duration::from_secs(10);
  while counter.load(Ordering::SeqCst) < at_least {
    assert!(
      std::time::Instant::now() < deadline,
      "timed out waiting for {what}"
    );
    std::thread::sleep(Duration::from_millis(2));
  }
}

/// Polls of the keeper-check test: each quiet poll reads the end record once.
static KEEPER_TEST_POLLS: AtomicUsize = AtomicUsize::new(0);

fn no_end_counted(_: &std::path::Path) -> Result<Option<EndView>, String> {
  KEEPER_TEST_POLLS.fetch_add(1, Ordering::SeqCst);
  Ok(None)
}

#[test]
fn a_quiet_follower_checks_its_keeper_once_a_second_of_its_clock_and_settles_when_it_is_gone() {
  let dir = tempfile_dir();
  let log = dir.join("k.log");
  std::fs::write(&log, b"").unwrap();
  let sink: Arc<Sink> = Arc::default();
  let dyn_sink: Arc<dyn FollowSink> = sink.clone();
  let clock = ManualClock::new(1_000_000);
  let checks = Arc::new(AtomicUsize::new(0));
  let keeper_checks = Arc::clone(&checks);
  let _follower = Follower::start(
    paths_of(&dir, "k", false),
    0,
    0,
    Arc::downgrade(&dyn_sink),
    FollowHooks {
      read_end: no_end_counted,
      write_cursor,
      keeper_alive: Box::new(move || {
        keeper_checks.fetch_add(1, Ordering::SeqCst);
        false
      }),
      clock: SharedClock::new(clock.clone()),
    },
  )
  .unwrap();
  // However many polls run, the keeper is not asked before a second of the clock has passed.
  wait_count(&KEEPER_TEST_POLLS, 3, "three polls");
  clock.advance(999);
  let polls = KEEPER_TEST_POLLS.load(Ordering::SeqCst);
  wait_count(&KEEPER_TEST_POLLS, polls + 2, "two more polls");
  assert_eq!(checks.load(Ordering::SeqCst), 0);
  assert!(sink.seen.lock().unwrap().end.is_none());
  // One more millisecond: the next poll asks, finds the keeper gone, and settles.
  clock.advance(1);
  sink.wait(|s| s.end.is_some());
  assert_eq!(checks.load(Ordering::SeqCst), 1);
  assert_eq!(
    sink
      .seen
      .lock()
      .unwrap()
      .end
      .as_ref()
      .unwrap()
      .as_ref()
      .err()
      .map(String::as_str),
    Some("its keeper ended without recording an end")
  );
  let _ = std::fs::remove_dir_all(&dir);
}

/// Polls and cursor writes of the cursor test.
static CURSOR_TEST_POLLS: AtomicUsize = AtomicUsize::new(0);
static CURSOR_TEST_WRITES: AtomicUsize = AtomicUsize::new(0);

fn read_end_counted(path: &std::path::Path) -> Result<Option<EndView>, String> {
  CURSOR_TEST_POLLS.fetch_add(1, Ordering::SeqCst);
  read_end(path)
}

fn write_cursor_counted(path: &std::path::Path, id: &str, offset: u64) -> std::io::Result<()> {
  let written = write_cursor(path, id, offset);
  CURSOR_TEST_WRITES.fetch_add(1, Ordering::SeqCst);
  written
}

#[test]
fn a_moving_cursor_is_written_at_most_once_a_second_of_the_clock_and_always_at_the_end() {
  let dir = tempfile_dir();
  let log = dir.join("c.log");
  let end = dir.join("c.end.json");
  let cursor = dir.join("c.cursor");
  std::fs::write(&log, b"a\n").unwrap();
  let sink: Arc<Sink> = Arc::default();
  let dyn_sink: Arc<dyn FollowSink> = sink.clone();
  let clock = ManualClock::new(1_000_000);
  let _follower = Follower::start(
    paths_of(&dir, "c", true),
    0,
    0,
    Arc::downgrade(&dyn_sink),
    FollowHooks {
      read_end: read_end_counted,
      write_cursor: write_cursor_counted,
      keeper_alive: Box::new(|| true),
      clock: SharedClock::new(clock.clone()),
    },
  )
  .unwrap();
  sink.wait(|s| s.live == b"a\n");
  let polls = CURSOR_TEST_POLLS.load(Ordering::SeqCst);
  wait_count(&CURSOR_TEST_POLLS, polls + 2, "two quiet polls");
  assert_eq!(
    CURSOR_TEST_WRITES.load(Ordering::SeqCst),
    0,
    "written before a second passed"
  );
  assert_eq!(read_cursor(&cursor, "c"), None);
  clock.advance(1000);
  wait_count(&CURSOR_TEST_WRITES, 1, "the cursor written");
  assert_eq!(read_cursor(&cursor, "c"), Some(2));
  // It moves again, but the clock does not: no write until the end, which always writes.
  let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
  file.write_all(b"b\n").unwrap();
  sink.wait(|s| s.live == b"a\nb\n");
  let polls = CURSOR_TEST_POLLS.load(Ordering::SeqCst);
  wait_count(&CURSOR_TEST_POLLS, polls + 2, "two more quiet polls");
  assert_eq!(CURSOR_TEST_WRITES.load(Ordering::SeqCst), 1);
  std::fs::write(&end, b"").unwrap();
  sink.wait(|s| s.end.is_some());
  assert_eq!(CURSOR_TEST_WRITES.load(Ordering::SeqCst), 2);
  assert_eq!(read_cursor(&cursor, "c"), Some(4));
  let _ = std::fs::remove_dir_all(&dir);
}

/// The paths of task `id` in `dir` (`<id>.log`, `<id>.end.json`, and `<id>.cursor` when `cursor`).
fn paths_of(dir: &std::path::Path, id: &str, cursor: bool) -> FollowPaths {
  FollowPaths {
    id: id.into(),
    data: dir.join(format!("{id}.log")),
    end: dir.join(format!("{id}.end.json")),
    cursor: cursor.then(|| dir.join(format!("{id}.cursor"))),
  }
}

fn tempfile_dir() -> std::path::PathBuf {
  let dir = std::env::temp_dir().join(format!(
    "taskstream-follow-{}-{}",
    std::process::id(),
    crate::ids::random_hex(8)
  ));
  std::fs::create_dir_all(&dir).unwrap();
  dir
}
