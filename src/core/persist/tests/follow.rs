//! The follower on real files: missed bytes, then live bytes, then the end.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::end::TaskEnd;
use crate::persist::end_view::EndView;
use crate::persist::follow::{FollowPaths, FollowSink, Follower};
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
    FollowPaths {
      id: "t".into(),
      data: log.clone(),
      end: end.clone(),
      cursor: Some(cursor.clone()),
    },
    9,
    27,
    Arc::downgrade(&dyn_sink),
    read_end,
    write_cursor,
    Box::new(|| true),
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

fn tempfile_dir() -> std::path::PathBuf {
  let dir = std::env::temp_dir().join(format!(
    "taskstream-follow-{}-{}",
    std::process::id(),
    crate::ids::random_hex(8)
  ));
  std::fs::create_dir_all(&dir).unwrap();
  dir
}
