//! Native monitors: a spawned command streamed by Rust threads (CONTRACT.md
//! §2.10). Two reader threads (stdout, stderr) feed one [`LinePipeline`];
//! a supervisor thread waits for the leader, drains the pipes (until EOF, or
//! 1000 ms after the exit when a descendant still holds one), flushes, settles
//! through the hub and kills whatever of the tree is left.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::hub::{Clock, MonitorHub, NativeTask};
use super::pipeline::{LinePipeline, LineSink, Stream};
use super::registry::{AbortKind, Effect, ExitInfo, MonitorRegistry};
use super::throttle::ThrottleConfig;
use crate::core::process::{self, ExitStatusInfo, ProcessGroup, SpawnedProcess};
use crate::core::sync::lock;

/// How long a monitor keeps reading after its leader exited (§2.10 "Exit and settle").
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(1000);
/// One read takes at most this many bytes (§2.10 "Reading").
const READ_CHUNK: usize = 64 * 1024;
/// How often a blocked reader checks whether it should stop.
const READER_POLL_MS: i32 = 250;

/// Collects a batch of pipeline decisions, applied to the registry at once.
#[derive(Default)]
struct Batch {
  accepted: Vec<String>,
  dropped: u64,
}

impl Batch {
  /// Runs the accepted lines through `emitEvent` and counts the dropped ones.
  fn apply(&self, r: &mut MonitorRegistry, id: &str, wall_ms: f64, mono_ms: i64) -> Vec<Effect> {
    let mut effects = Vec::new();
    for line in &self.accepted {
      effects.extend(r.emit_event(id, line, wall_ms, mono_ms));
    }
    r.record_dropped(id, self.dropped);
    effects
  }
}

impl LineSink for Batch {
  fn accepted(&mut self, line: &str) {
    self.accepted.push(line.to_owned());
  }
  fn dropped(&mut self) {
    self.dropped += 1;
  }
}

/// The process side of one native monitor.
pub struct NativeMonitor<C: Clock> {
  id: String,
  group: ProcessGroup,
  pipeline: Mutex<LinePipeline>,
  clock: C,
  aborted: AtomicBool,
  killed: AtomicBool,
  /// Set after the monitor settled and its tree was killed: readers stop.
  stop_readers: AtomicBool,
  /// Number of pipes that reached EOF (or failed), with a condvar for the supervisor.
  eof: (Mutex<u8>, Condvar),
}

impl<C: Clock + Send + Sync + 'static> NativeMonitor<C> {
  /// Wraps a spawned process whose entry is already registered in `hub`, adds it
  /// to the hub and starts its threads.
  pub fn start(
    hub: &Arc<MonitorHub>,
    id: &str,
    spawned: SpawnedProcess,
    throttle: Option<ThrottleConfig>,
    clock: C,
  ) -> std::io::Result<Arc<Self>> {
    let SpawnedProcess {
      group,
      stdout,
      stderr,
      child,
      ..
    } = spawned;
    let monitor = Arc::new(Self {
      id: id.to_owned(),
      group,
      pipeline: Mutex::new(LinePipeline::new(throttle, clock.mono_ms())),
      clock,
      aborted: AtomicBool::new(false),
      killed: AtomicBool::new(false),
      stop_readers: AtomicBool::new(false),
      eof: (Mutex::new(0), Condvar::new()),
    });
    hub.add_native(id, monitor.clone());
    for (stream, file) in [(Stream::Stdout, stdout), (Stream::Stderr, stderr)] {
      let (monitor, hub) = (monitor.clone(), hub.clone());
      std::thread::Builder::new()
        .name(format!("taskstream-read-{}", stream as u8))
        .spawn(move || monitor.read_loop(&hub, stream, file))?;
    }
    let (supervisor, hub) = (monitor.clone(), hub.clone());
    std::thread::Builder::new()
      .name("taskstream-wait".into())
      .spawn(move || supervisor.supervise(&hub, child))?;
    Ok(monitor)
  }

  fn read_loop(&self, hub: &MonitorHub, stream: Stream, mut file: File) {
    process::lower_current_thread_priority();
    let _enlarged = process::enlarge_pipe(&file);
    // Non-blocking: a reader that keeps up reads straight away and waits in
    // poll (which also watches `stop_readers`) only when the pipe is empty.
    let nonblocking = set_nonblocking(&file);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
      if !nonblocking && !wait_readable(&file, &self.stop_readers) {
        break;
      }
      if self.stop_readers.load(Ordering::Acquire) {
        break;
      }
      match file.read(&mut buf) {
        Ok(0) => break,
        Ok(n) => self.ingest(hub, stream, &buf[..n]),
        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
        Err(e) if e.kind() == ErrorKind::WouldBlock => {
          if !wait_readable(&file, &self.stop_readers) {
            break;
          }
        }
        Err(e) => {
          tracing::debug!(id = %self.id, error = %e, "taskstream: monitor pipe read failed");
          break;
        }
      }
    }
    let (count, condvar) = &self.eof;
    *lock(count) += 1;
    condvar.notify_all();
  }

  /// One read: bytes counted (the idle deadline moves), lines decided, then the
  /// accepted ones run through `emitEvent`, all under the pipeline lock so the
  /// two streams' effects reach the outbox in the order their lines completed.
  fn ingest(&self, hub: &MonitorHub, stream: Stream, bytes: &[u8]) {
    let now = self.clock.mono_ms();
    let mut settled_now = false;
    {
      let mut pipeline = lock(&self.pipeline);
      if pipeline.is_closed() {
        return;
      }
      let mut batch = Batch::default();
      pipeline.feed(stream, bytes, now, &mut batch);
      let (lines_seen, truncated) = (pipeline.lines_seen(), pipeline.truncated_bytes());
      let wall = self.clock.wall_ms();
      hub.apply(|r| {
        r.record_bytes(&self.id, bytes.len() as u64, now);
        r.record_splitter_counts(&self.id, lines_seen, truncated);
        let effects = batch.apply(r, &self.id, wall, now);
        settled_now = !r.is_running(&self.id);
        effects
      });
    }
    if settled_now {
      // Max events: the kill must not wait for the JavaScript thread.
      self.abort(hub, AbortKind::Flush);
    }
    hub.wake_js();
  }

  fn supervise(&self, hub: &MonitorHub, mut child: process::Child) {
    let status = match child.wait() {
      Ok(status) => ExitStatusInfo::from(status),
      Err(e) => {
        tracing::warn!(id = %self.id, error = %e, "taskstream: waiting for a monitor failed");
        ExitStatusInfo {
          code: None,
          signal: None,
        }
      }
    };
    let deadline = Instant::now() + DRAIN_AFTER_EXIT;
    let (count, condvar) = &self.eof;
    let mut eofs = lock(count);
    while *eofs < 2 {
      let left = deadline.saturating_duration_since(Instant::now());
      if left.is_zero() {
        break;
      }
      eofs = condvar
        .wait_timeout(eofs, left)
        .map(|(guard, _)| guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner().0);
    }
    drop(eofs);
    self.cleanup(hub);
    let exit = ExitInfo {
      code: status.code,
      signal: status.signal.map(process::signal_name),
    };
    let aborted = self.aborted.load(Ordering::Acquire);
    let wall = self.clock.wall_ms();
    hub.apply(|r| r.settle_from_exit(&self.id, &exit, aborted, wall));
    hub.wake_js();
    // Off this thread, batched with other settles: a dead tree is forgotten
    // (the tracked set stays small), a live one is killed.
    process::terminate_leftovers(&self.group);
    self.stop_readers.store(true, Ordering::Release);
  }

  /// `cleanup()`, at most once: flush what was read, then close the pipeline.
  fn cleanup(&self, hub: &MonitorHub) {
    let mut pipeline = lock(&self.pipeline);
    if !pipeline.is_closed() {
      self.flush_locked(hub, &mut pipeline);
      pipeline.close();
    }
  }

  fn flush_locked(&self, hub: &MonitorHub, pipeline: &mut LinePipeline) {
    let now = self.clock.mono_ms();
    let mut batch = Batch::default();
    pipeline.flush(now, &mut batch);
    let (lines_seen, truncated) = (pipeline.lines_seen(), pipeline.truncated_bytes());
    let wall = self.clock.wall_ms();
    hub.apply(|r| {
      r.record_splitter_counts(&self.id, lines_seen, truncated);
      batch.apply(r, &self.id, wall, now)
    });
    let dropped = hub.registry().get(&self.id).map_or(0, |e| e.dropped_lines);
    if dropped > 0 {
      tracing::debug!(
        "Monitor {} dropped {dropped} lines due to throttling",
        self.id
      );
    }
  }
}

impl<C: Clock + Send + Sync + 'static> NativeTask for NativeMonitor<C> {
  fn stop_reading(&self, hub: &MonitorHub, kind: AbortKind) {
    if self.aborted.swap(true, Ordering::AcqRel) {
      return;
    }
    let mut pipeline = lock(&self.pipeline);
    if !pipeline.is_closed() {
      if kind == AbortKind::Flush {
        self.flush_locked(hub, &mut pipeline);
      }
      pipeline.close();
    }
  }

  fn kill(&self) {
    if !self.killed.swap(true, Ordering::AcqRel) {
      process::terminate(&self.group);
    }
  }
}

/// Sets `O_NONBLOCK` on our end of a pipe (the child's end is a different
/// open file description); false when that failed.
fn set_nonblocking(file: &File) -> bool {
  let fd = file.as_raw_fd();
  // SAFETY: fcntl on a descriptor we own; F_GETFL/F_SETFL touch no memory.
  unsafe {
    let flags = libc::fcntl(fd, libc::F_GETFL);
    flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
  }
}

/// Waits until `file` is readable (or at EOF). False once `stop` is set.
fn wait_readable(file: &File, stop: &AtomicBool) -> bool {
  loop {
    if stop.load(Ordering::Acquire) {
      return false;
    }
    let mut fds = [libc::pollfd {
      fd: file.as_raw_fd(),
      events: libc::POLLIN,
      revents: 0,
    }];
    // SAFETY: `fds` is a valid array of one pollfd for the duration of the call.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, READER_POLL_MS) };
    if ready > 0 {
      return true;
    }
    if ready < 0 && std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
      return true; // let read() report the error
    }
  }
}
