//! The Unix backend of the reactor (mio: epoll on Linux, kqueue on macOS).

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};
use once_cell::sync::Lazy;

use crate::process::{self, Child, EnlargedPipe};
use crate::sync::lock;

use super::coalesce;
use super::exit_watch;
use super::handlers::{ExitHandler, PipeHandler, PipeKey, READS_PER_TURN, READ_CHUNK};

/// Most reactor threads, whatever the number of cores.
pub(super) const MAX_REACTORS: usize = 4;
/// Most events one wait returns.
const MAX_EVENTS: usize = 256;
/// The waker's token; source keys start at 1.
const WAKE: Token = Token(0);

type Job = Box<dyn FnOnce() + Send>;

enum Command {
  AddPipe {
    key: u64,
    file: File,
    tag: u8,
    handler: Arc<dyn PipeHandler>,
  },
  ClosePipe(u64),
  AddExit {
    key: u64,
    pidfd: File,
    child: Child,
    handler: Arc<dyn ExitHandler>,
  },
  Timer {
    at: Instant,
    job: Job,
  },
}

enum Source {
  Pipe {
    file: File,
    tag: u8,
    handler: Arc<dyn PipeHandler>,
    /// Held while reading (the enlarged-pipe budget); whether it holds 1 MiB.
    enlarged: EnlargedPipe,
    /// The last turn that read it: a pipe both unfinished and reported again
    /// is read once per turn.
    served: u64,
  },
  Exit {
    pidfd: File,
    child: Child,
    handler: Arc<dyn ExitHandler>,
  },
}

/// One reactor thread's handle.
pub struct Reactor {
  commands: Mutex<Vec<Command>>,
  waker: mio::Waker,
  /// Sources registered with this reactor and not closed yet.
  load: AtomicUsize,
}

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// The reactor threads, started on first use; `None` where none could start
/// (then callers fall back to threads of their own).
static REACTORS: Lazy<Vec<Arc<Reactor>>> = Lazy::new(|| {
  let count = std::thread::available_parallelism()
    .map(|n| n.get())
    .unwrap_or(1)
    .clamp(1, MAX_REACTORS);
  (0..count).filter_map(|i| Reactor::start(i).ok()).collect()
});

impl Reactor {
  fn start(index: usize) -> io::Result<Arc<Reactor>> {
    let poll = Poll::new()?;
    let waker = mio::Waker::new(poll.registry(), WAKE)?;
    let reactor = Arc::new(Reactor {
      commands: Mutex::new(Vec::new()),
      waker,
      load: AtomicUsize::new(0),
    });
    let thread_side = Arc::clone(&reactor);
    std::thread::Builder::new()
      .name(format!("taskstream-reactor-{index}"))
      .spawn(move || run(&thread_side, poll))?;
    Ok(reactor)
  }

  /// The least loaded reactor, for all the sources of one new task.
  pub fn pick() -> io::Result<Arc<Reactor>> {
    REACTORS
      .iter()
      .min_by_key(|r| r.load.load(Ordering::Relaxed))
      .cloned()
      .ok_or_else(|| io::Error::other("no reactor thread could be started"))
  }

  fn send(&self, command: Command) {
    lock(&self.commands).push(command);
    if let Err(error) = self.waker.wake() {
      tracing::warn!(%error, "taskstream: reactor wake failed");
    }
  }

  /// Reads `file` (a pipe's read end) until EOF, handing every read to
  /// `handler` with `tag`. The pipe is made non-blocking and, within a small
  /// process-wide budget, enlarged (see [`process::enlarge_pipe`]).
  pub fn watch_pipe(&self, file: File, tag: u8, handler: Arc<dyn PipeHandler>) -> PipeKey {
    set_nonblocking(&file);
    let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
    self.load.fetch_add(1, Ordering::Relaxed);
    self.send(Command::AddPipe {
      key,
      file,
      tag,
      handler,
    });
    PipeKey(key)
  }

  /// Stops reading a pipe and closes it (its handler hears no more of it).
  pub fn close_pipe(&self, key: PipeKey) {
    self.send(Command::ClosePipe(key.0));
  }

  /// Reaps `child` when it exits and tells `handler`. Where no pidfd can be
  /// had, a waiter thread of its own does it.
  pub fn watch_exit(&self, child: Child, handler: Arc<dyn ExitHandler>) -> io::Result<()> {
    match exit_watch::pidfd(child.id()) {
      Some(pidfd) => {
        let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
        self.load.fetch_add(1, Ordering::Relaxed);
        self.send(Command::AddExit {
          key,
          pidfd,
          child,
          handler,
        });
        Ok(())
      }
      None => exit_watch::on_thread(child, handler),
    }
  }

  /// Runs `job` on this reactor's thread once `delay` has passed.
  pub fn after(&self, delay: Duration, job: impl FnOnce() + Send + 'static) {
    self.send(Command::Timer {
      at: Instant::now() + delay,
      job: Box::new(job),
    });
  }
}

/// Sets `O_NONBLOCK` on our end of a pipe (the child's end is another open
/// file description).
fn set_nonblocking(file: &File) {
  let fd = file.as_raw_fd();
  // SAFETY: fcntl on a descriptor we own; F_GETFL/F_SETFL touch no memory.
  unsafe {
    let flags = libc::fcntl(fd, libc::F_GETFL);
    if flags >= 0 {
      libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
  }
}

struct Timer {
  at: Instant,
  sequence: u64,
  job: Job,
}

impl PartialEq for Timer {
  fn eq(&self, other: &Self) -> bool {
    self.at == other.at && self.sequence == other.sequence
  }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
  fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
    Some(self.cmp(other))
  }
}
impl Ord for Timer {
  /// Reversed: the earliest deadline is the greatest (a max-heap pops it first).
  fn cmp(&self, other: &Self) -> CmpOrdering {
    (other.at, other.sequence).cmp(&(self.at, self.sequence))
  }
}

/// The reactor thread's own state.
struct Loop {
  sources: HashMap<u64, Source>,
  /// Pipes whose last turn ended before they were read dry: the kernel will
  /// not report them again, so the next turn serves them.
  unfinished: Vec<u64>,
  /// The turn being served (see `Source::Pipe::served`).
  turn: u64,
  timers: BinaryHeap<Timer>,
  next_sequence: u64,
  buffer: Vec<u8>,
  coalescer: coalesce::Coalescer,
}

fn run(reactor: &Reactor, mut poll: Poll) {
  process::lower_current_thread_priority();
  let mut state = Loop {
    sources: HashMap::new(),
    unfinished: Vec::new(),
    turn: 0,
    timers: BinaryHeap::new(),
    next_sequence: 0,
    buffer: vec![0u8; READ_CHUNK],
    coalescer: coalesce::Coalescer::default(),
  };
  let mut events = Events::with_capacity(MAX_EVENTS);
  let mut ready: Vec<u64> = Vec::new();
  loop {
    if let Some(nap) = state.coalescer.take_nap() {
      std::thread::sleep(nap);
    }
    let commands = std::mem::take(&mut *lock(&reactor.commands));
    for command in commands {
      state.apply(reactor, poll.registry(), command);
    }
    state.run_due_timers();
    let timeout = if state.unfinished.is_empty() {
      state
        .timers
        .peek()
        .map(|t| t.at.saturating_duration_since(Instant::now()))
    } else {
      Some(Duration::ZERO)
    };
    if let Err(error) = poll.poll(&mut events, timeout) {
      if error.kind() != ErrorKind::Interrupted {
        tracing::warn!(%error, "taskstream: reactor wait failed");
        std::thread::sleep(Duration::from_millis(10));
        continue;
      }
      // A wait interrupted by a signal is an empty wait; unfinished pipes
      // still get their turn.
      events.clear();
    }
    state.turn += 1;
    ready.clear();
    ready.append(&mut state.unfinished);
    ready.extend(
      events
        .iter()
        .map(|event| event.token())
        .filter(|&token| token != WAKE)
        .map(|token| token.0 as u64),
    );
    for &key in &ready {
      state.ready(reactor, poll.registry(), key);
    }
  }
}

impl Loop {
  fn apply(&mut self, reactor: &Reactor, registry: &Registry, command: Command) {
    match command {
      Command::AddPipe {
        key,
        file,
        tag,
        handler,
      } => {
        if let Err(error) = register(registry, &file, key) {
          reactor.load.fetch_sub(1, Ordering::Relaxed);
          guarded(|| handler.closed(tag, Some(error)));
          return;
        }
        let enlarged = process::enlarge_pipe(&file);
        self.sources.insert(
          key,
          Source::Pipe {
            file,
            tag,
            handler,
            enlarged,
            served: 0,
          },
        );
        // Bytes already in the pipe are reported at registration (epoll and
        // kqueue both check readiness then); the first turn reads anyway,
        // rather than rely on that for an edge that would never come again.
        self.unfinished.push(key);
      }
      Command::ClosePipe(key) => {
        if matches!(self.sources.get(&key), Some(Source::Pipe { .. })) {
          self.remove(reactor, registry, key);
        }
      }
      Command::AddExit {
        key,
        pidfd,
        child,
        handler,
      } => {
        if register(registry, &pidfd, key).is_err() {
          reactor.load.fetch_sub(1, Ordering::Relaxed);
          if let Err(error) = exit_watch::on_thread(child, Arc::clone(&handler)) {
            guarded(|| handler.exited(Err(error)));
          }
          return;
        }
        self.sources.insert(
          key,
          Source::Exit {
            pidfd,
            child,
            handler,
          },
        );
      }
      Command::Timer { at, job } => {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.timers.push(Timer { at, sequence, job });
      }
    }
  }

  fn run_due_timers(&mut self) {
    let now = Instant::now();
    while self.timers.peek().is_some_and(|t| t.at <= now) {
      let timer = self.timers.pop().expect("peeked");
      guarded(timer.job);
    }
  }

  fn remove(&mut self, reactor: &Reactor, registry: &Registry, key: u64) -> Option<Source> {
    let source = self.sources.remove(&key)?;
    let fd = match &source {
      Source::Pipe { file, .. } => file.as_raw_fd(),
      Source::Exit { pidfd, .. } => pidfd.as_raw_fd(),
    };
    // Closing the descriptor (when `source` drops) would unregister it too;
    // an explicit deregister keeps that true if it was ever duplicated.
    let _ = registry.deregister(&mut SourceFd(&fd));
    reactor.load.fetch_sub(1, Ordering::Relaxed);
    Some(source)
  }

  fn ready(&mut self, reactor: &Reactor, registry: &Registry, key: u64) {
    let turn = self.turn;
    match self.sources.get_mut(&key) {
      Some(Source::Pipe {
        file,
        tag,
        handler,
        enlarged,
        served,
      }) => {
        if *served == turn {
          return;
        }
        *served = turn;
        let (tag, handler) = (*tag, Arc::clone(handler));
        let enlarged = enlarged.is_enlarged();
        let mut end: Option<Option<io::Error>> = None;
        let mut dry = false;
        let mut turn_bytes = 0;
        for _ in 0..READS_PER_TURN {
          match file.read(&mut self.buffer) {
            Ok(0) => {
              end = Some(None);
              break;
            }
            Ok(n) => {
              turn_bytes += n;
              let bytes = &self.buffer[..n];
              guarded(|| handler.data(tag, bytes));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
              dry = true;
              break;
            }
            // A terminal's master fails with EIO once every process closed
            // the terminal: that is its EOF. A pipe never fails so.
            Err(e) if e.raw_os_error() == Some(libc::EIO) => {
              end = Some(None);
              break;
            }
            Err(e) => {
              end = Some(Some(e));
              break;
            }
          }
        }
        if let Some(error) = end {
          self.remove(reactor, registry, key);
          guarded(|| handler.closed(tag, error));
        } else {
          if !dry {
            self.unfinished.push(key);
          }
          self.coalescer.on_turn(turn_bytes, enlarged, Instant::now());
        }
      }
      Some(Source::Exit { child, pidfd, .. }) => match child.try_wait() {
        Ok(None) => {
          // Reported before it could be reaped: registering it again
          // re-arms the edge, so a pidfd still readable is reported anew.
          let _ = registry.reregister(
            &mut SourceFd(&pidfd.as_raw_fd()),
            Token(key as usize),
            Interest::READABLE,
          );
        }
        result => {
          let status = result.map(|s| s.expect("not None"));
          if let Some(Source::Exit { handler, .. }) = self.remove(reactor, registry, key) {
            guarded(|| handler.exited(status));
          }
        }
      },
      None => {}
    }
  }
}

/// Registers `file` for readability under the token `key`.
fn register(registry: &Registry, file: &File, key: u64) -> io::Result<()> {
  registry.register(
    &mut SourceFd(&file.as_raw_fd()),
    Token(key as usize),
    Interest::READABLE,
  )
}

/// Runs a handler; a panic is logged and does not stop the reactor.
fn guarded(f: impl FnOnce()) {
  if catch_unwind(AssertUnwindSafe(f)).is_err() {
    tracing::error!("taskstream: a reactor handler panicked");
  }
}

/// The number of reactor threads running (for tests and benchmarks).
pub fn reactor_count() -> usize {
  REACTORS.len()
}
