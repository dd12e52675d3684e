//! Following a persisted task through its files: new bytes of the task's
//! log (or output file) are handed to a sink exactly where pipe bytes go for
//! an own task; once the keeper's end record is there and the file is read
//! to its end, the sink settles with it. Runs on a reactor's timers: a poll
//! every 20 ms while data flows, backing off to 250 ms when quiet. The
//! consumed offset is written to `<id>.cursor` at least every second while
//! it moves, and at the end.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::end_view::EndView;
use crate::clock::{Clock, SharedClock};
use crate::reactor::Reactor;
use crate::sync::{lock, SelfRef};

/// Poll delay while bytes keep arriving.
pub const BUSY_POLL: Duration = Duration::from_millis(20);
/// Longest poll delay when nothing arrives.
pub const QUIET_POLL: Duration = Duration::from_millis(250);
/// Bytes read per poll at most (the rest on the next, busy, poll).
const MAX_PER_POLL: usize = 1 << 20;
const CHUNK: usize = 64 * 1024;

/// Where followed bytes go.
pub trait FollowSink: Send + Sync {
  /// Bytes written while no host followed (recovered tasks): from the cursor
  /// to the file's end at adoption. Counted, not replayed.
  fn missed(&self, _bytes: &[u8]) {}
  /// The missed bytes are all handed over (called once, before any `bytes`).
  fn caught_up(&self) {}
  /// New bytes, in order.
  fn bytes(&self, bytes: &[u8]);
  /// The keeper's end record (or why it could not be read); the file was
  /// read to its end first. Called at most once.
  fn ended(&self, end: Result<EndView, String>);
}

/// Reads a record; `Ok(None)` while it does not exist.
pub type ReadEnd = fn(&std::path::Path) -> Result<Option<EndView>, String>;
/// Writes the cursor record.
pub type WriteCursor = fn(&std::path::Path, &str, u64) -> io::Result<()>;
/// Whether the keeper still runs (checked about once a second while no end is recorded).
pub type KeeperAlive = Box<dyn Fn() -> bool + Send + Sync>;

/// How often a quiet follower checks that the keeper still runs (monotonic ms).
const KEEPER_CHECK_MS: i64 = 1000;
/// How often a moving cursor is written at most (monotonic ms).
const CURSOR_EVERY_MS: i64 = 1000;

/// How a follower reads its task's records and the time: the keeper's end record, the cursor
/// writer, the keeper's liveness, and the clock its once-a-second checks run on (the real one
/// in a host; a [`crate::clock::ManualClock`] in tests).
pub struct FollowHooks {
  pub read_end: ReadEnd,
  pub write_cursor: WriteCursor,
  pub keeper_alive: KeeperAlive,
  pub clock: SharedClock,
}

/// What a follower needs to know about its task's files.
pub struct FollowPaths {
  pub id: String,
  /// The log (monitors) or the output file (shells).
  pub data: PathBuf,
  pub end: PathBuf,
  /// `<id>.cursor`, when the offset must be kept (monitors).
  pub cursor: Option<PathBuf>,
}

struct State {
  file: Option<File>,
  offset: u64,
  /// Bytes before this offset were missed (recovered tasks).
  missed_until: u64,
  caught_up: bool,
  quiet: Duration,
  cursor_written: u64,
  /// When the cursor was last written (the clock's monotonic ms).
  cursor_at: i64,
  /// When the keeper was last checked (the clock's monotonic ms).
  keeper_checked: i64,
  done: bool,
}

pub struct Follower {
  me: SelfRef<Self>,
  paths: FollowPaths,
  reactor: Arc<Reactor>,
  sink: Weak<dyn FollowSink>,
  read_end: ReadEnd,
  write_cursor: WriteCursor,
  keeper_alive: KeeperAlive,
  clock: SharedClock,
  state: Mutex<State>,
  /// The sink, held strongly once its task is being stopped, so the end is
  /// still read and its state forgotten after the owner let go (a reset, a
  /// pruned entry). Its own lock: the sink asks for it from inside a poll.
  held: Mutex<Option<Arc<dyn FollowSink>>>,
  /// Set once the end was handed over (read without the state lock).
  finished: AtomicBool,
}

impl Follower {
  /// Starts following from `offset`; bytes up to `missed_until` (the file's
  /// size at adoption) go to [`FollowSink::missed`].
  pub fn start(
    paths: FollowPaths,
    offset: u64,
    missed_until: u64,
    sink: Weak<dyn FollowSink>,
    hooks: FollowHooks,
  ) -> io::Result<Arc<Self>> {
    let reactor = Reactor::pick()?;
    let FollowHooks {
      read_end,
      write_cursor,
      keeper_alive,
      clock,
    } = hooks;
    let now = clock.mono_ms();
    let follower = Arc::new_cyclic(|me| Self {
      me: SelfRef::new(me),
      paths,
      reactor,
      sink,
      read_end,
      write_cursor,
      keeper_alive,
      clock,
      held: Mutex::new(None),
      finished: AtomicBool::new(false),
      state: Mutex::new(State {
        file: None,
        offset,
        missed_until: missed_until.max(offset),
        caught_up: missed_until <= offset,
        quiet: BUSY_POLL,
        cursor_written: offset,
        cursor_at: now,
        keeper_checked: now,
        done: false,
      }),
    });
    follower.schedule(Duration::ZERO);
    Ok(follower)
  }

  /// Stops following (the sink hears nothing more).
  pub fn stop(&self) {
    lock(&self.state).done = true;
    lock(&self.held).take();
  }

  /// Keeps the sink alive until the end is read (its task is being stopped).
  pub fn hold_until_end(&self) {
    *lock(&self.held) = self.sink.upgrade();
    if self.finished.load(Ordering::Acquire) {
      lock(&self.held).take();
    }
  }

  /// The reactor its polls run on (for the owner's own timers).
  pub fn reactor(&self) -> Arc<Reactor> {
    Arc::clone(&self.reactor)
  }

  /// The offset consumed so far.
  pub fn offset(&self) -> u64 {
    lock(&self.state).offset
  }

  fn schedule(&self, delay: Duration) {
    let me = self.me.for_timer();
    self.reactor.after(delay, move || {
      if let Some(me) = me.upgrade() {
        me.poll();
      }
    });
  }

  /// Reads what is new (at most [`MAX_PER_POLL`]); returns how much.
  fn read_new(&self, sink: &Arc<dyn FollowSink>, state: &mut State) -> usize {
    if state.file.is_none() {
      match File::open(&self.paths.data) {
        Ok(file) => state.file = Some(file),
        Err(_) => return 0,
      }
    }
    let mut total = 0;
    let mut buf = vec![0u8; CHUNK];
    while total < MAX_PER_POLL {
      let Some(file) = state.file.as_mut() else {
        break;
      };
      if file.seek(SeekFrom::Start(state.offset)).is_err() {
        break;
      }
      let want = if state.caught_up {
        CHUNK
      } else {
        CHUNK.min((state.missed_until - state.offset) as usize)
      };
      let n = match file.read(&mut buf[..want]) {
        Ok(n) => n,
        Err(error) => {
          tracing::debug!(%error, id = %self.paths.id, "taskstream: following a task failed");
          0
        }
      };
      if n > 0 {
        if state.caught_up {
          sink.bytes(&buf[..n]);
        } else {
          sink.missed(&buf[..n]);
        }
        state.offset += n as u64;
        total += n;
      }
      if !state.caught_up && (state.offset >= state.missed_until || n == 0) {
        state.caught_up = true;
        sink.caught_up();
        continue;
      }
      if n == 0 {
        break;
      }
    }
    total
  }

  fn poll(&self) {
    let Some(sink) = self.sink.upgrade() else {
      return;
    };
    let mut state = lock(&self.state);
    if state.done {
      return;
    }
    let read = self.read_new(&sink, &mut state);
    if read > 0 {
      state.quiet = BUSY_POLL;
      self.keep_cursor(&mut state, false);
      drop(state);
      self.schedule(BUSY_POLL);
      return;
    }
    let mut end = (self.read_end)(&self.paths.end);
    let now = self.clock.mono_ms();
    if matches!(end, Ok(None)) && now - state.keeper_checked >= KEEPER_CHECK_MS {
      state.keeper_checked = now;
      // A keeper that died without an end record (SIGKILL, a crash) took
      // its task along: settle rather than follow forever. Its end record
      // may have landed meanwhile.
      if !(self.keeper_alive)() {
        end = match (self.read_end)(&self.paths.end) {
          Ok(None) => Err("its keeper ended without recording an end".to_owned()),
          other => other,
        };
      }
    }
    match end {
      Ok(None) => {
        self.keep_cursor(&mut state, false);
        state.quiet = (state.quiet * 2).min(QUIET_POLL);
        let delay = state.quiet;
        drop(state);
        self.schedule(delay);
      }
      end => {
        // The keeper wrote its end after the file was complete: read the rest.
        while self.read_new(&sink, &mut state) > 0 {}
        // Closed before the sink settles, which forgets the task's files: on Windows a file
        // removed while a handle is open keeps its name until the handle closes.
        state.file = None;
        state.done = true;
        self.finished.store(true, Ordering::Release);
        self.keep_cursor(&mut state, true);
        drop(state);
        sink.ended(end.and_then(|e| e.ok_or_else(|| "no end record".to_owned())));
        lock(&self.held).take();
      }
    }
  }

  fn keep_cursor(&self, state: &mut State, force: bool) {
    let Some(path) = &self.paths.cursor else {
      return;
    };
    if state.offset == state.cursor_written {
      return;
    }
    let now = self.clock.mono_ms();
    if !force && now - state.cursor_at < CURSOR_EVERY_MS {
      return;
    }
    if let Err(error) = (self.write_cursor)(path, &self.paths.id, state.offset) {
      tracing::debug!(%error, id = %self.paths.id, "taskstream: writing a cursor failed");
      return;
    }
    state.cursor_written = state.offset;
    state.cursor_at = now;
  }
}
