//! Running a background shell's process (CONTRACT.md §2.15 steps 8–10 and
//! 12, §2.19, §4 items 10, 11 and 16).
//!
//! The reactor drains stdout and stderr into one [`OutputWriter`], one read
//! at a time, always to EOF, and reaps the leader (see `core::reactor`).
//! Whichever of the three ends last settles the run: the file is finished and
//! closed, and only then does `on_settle` run, exactly once. A descendant
//! that keeps a pipe open keeps the shell running (unlike monitors, which
//! stop draining 1000 ms after the exit).

use std::io;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};

use super::output::{OutputCounters, OutputWriter, Stream};
use super::runs::ShellVerdict;
use crate::core::process::{self, ExitStatusInfo, ProcessGroup, SpawnedProcess};
use crate::core::reactor::{ExitHandler, PipeHandler, Reactor};
use crate::core::sync::lock;
/// What must end before the run settles: the leader, stdout and stderr.
const PARTS: u8 = 3;
/// The exit of a leader that could not be waited for.
const NO_EXIT: ExitStatusInfo = ExitStatusInfo {
  code: None,
  signal: None,
};

/// How a run ended, for the settle step of §2.15 step 9.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellOutcome {
  pub exit: ExitStatusInfo,
  /// [`ShellRun::cancel`] ran before the run settled.
  pub aborted: bool,
  /// A pipe read, wait or output-file write error, by its message.
  pub spawn_or_io_error: Option<String>,
  pub counters: OutputCounters,
}

impl ShellOutcome {
  /// How this end settles the entry (§2.15 step 9, items 3–5): aborted →
  /// cancelled; else a spawn or I/O error, then a signal
  /// (`terminated by signal <n>`), then a non-zero code
  /// (`exited with code <c>`) → failed; else completed.
  pub fn verdict(&self) -> ShellVerdict {
    if self.aborted {
      ShellVerdict::Cancelled
    } else if let Some(error) = &self.spawn_or_io_error {
      ShellVerdict::Failed(error.clone())
    } else if let Some(signal) = self.exit.signal {
      ShellVerdict::Failed(format!("terminated by signal {signal}"))
    } else if let Some(code) = self.exit.code.filter(|c| *c != 0) {
      ShellVerdict::Failed(format!("exited with code {code}"))
    } else {
      ShellVerdict::Completed(self.exit.code.unwrap_or(0))
    }
  }
}

type OnSettle = Box<dyn FnOnce(ShellOutcome) + Send>;

struct RunState {
  parts_left: u8,
  exit: ExitStatusInfo,
  io_error: Option<String>,
  aborted: bool,
  settled: bool,
  on_settle: Option<OnSettle>,
}

/// The process side of one background shell.
pub struct ShellRun {
  pid: u32,
  group: ProcessGroup,
  writer: Mutex<OutputWriter>,
  state: Mutex<RunState>,
}

impl ShellRun {
  /// Hands the pipes and the exit to a reactor. If that cannot be done, the
  /// tree is killed, `on_settle` is dropped uncalled and the error returned;
  /// the caller then fails the entry.
  pub fn start(
    spawned: SpawnedProcess,
    writer: OutputWriter,
    on_settle: Box<dyn FnOnce(ShellOutcome) + Send>,
  ) -> io::Result<Arc<Self>> {
    let SpawnedProcess {
      pid,
      group,
      stdout,
      stderr,
      child,
      ..
    } = spawned;
    let run = Arc::new(Self {
      pid,
      group,
      writer: Mutex::new(writer),
      state: Mutex::new(RunState {
        parts_left: PARTS,
        exit: NO_EXIT,
        io_error: None,
        aborted: false,
        settled: false,
        on_settle: Some(on_settle),
      }),
    });
    let watched = Reactor::pick().and_then(|reactor| {
      for (stream, pipe) in [(Stream::Stdout, stdout), (Stream::Stderr, stderr)] {
        reactor.watch_pipe(pipe, stream as u8, run.clone());
      }
      reactor.watch_exit(child, run.clone())
    });
    if let Err(error) = watched {
      lock(&run.state).on_settle = None;
      process::kill_now(&run.group);
      return Err(error);
    }
    Ok(run)
  }

  /// §2.15 step 10: marks the run aborted and kills the tree (SIGTERM, then
  /// SIGKILL 200 ms later). The run then settles once the pipes close. A
  /// no-op once the run has settled (the settle already terminated whatever
  /// was left of the tree).
  pub fn cancel(&self) {
    let mut state = lock(&self.state);
    if !state.settled && !state.aborted {
      state.aborted = true;
      process::terminate(&self.group);
    }
  }

  pub fn pid(&self) -> u32 {
    self.pid
  }

  pub fn group(&self) -> &ProcessGroup {
    &self.group
  }

  /// Records a finished part; the last one settles: the writer is finished
  /// (flushed and closed) before `on_settle` runs.
  fn part_done(&self, record: impl FnOnce(&mut RunState)) {
    let (exit, aborted, io_error, on_settle) = {
      let mut state = lock(&self.state);
      record(&mut state);
      state.parts_left -= 1;
      if state.parts_left > 0 {
        return;
      }
      state.settled = true;
      (
        state.exit,
        state.aborted,
        state.io_error.take(),
        state.on_settle.take(),
      )
    };
    let counters = {
      let mut writer = lock(&self.writer);
      writer.finish();
      writer.counters()
    };
    let outcome = ShellOutcome {
      exit,
      aborted,
      spawn_or_io_error: io_error.or_else(|| counters.write_error.clone()),
      counters,
    };
    if let Some(on_settle) = on_settle {
      on_settle(outcome);
    }
    // Whatever is left of the tree (a `nohup … &` or a daemon that let go of
    // the pipes) dies with the task, as for monitors; a dead tree is forgotten.
    process::terminate_leftovers(&self.group);
  }
}

/// Reads go straight into the writer; the cap and binary output never stop
/// the reading, so the child never blocks.
impl PipeHandler for ShellRun {
  fn data(&self, tag: u8, bytes: &[u8]) {
    let stream = if tag == Stream::Stderr as u8 {
      Stream::Stderr
    } else {
      Stream::Stdout
    };
    lock(&self.writer).write(stream, bytes);
  }

  fn closed(&self, _tag: u8, error: Option<io::Error>) {
    let error = error.map(|e| e.to_string());
    self.part_done(move |state| {
      state.io_error = state.io_error.take().or(error);
    });
  }
}

impl ExitHandler for ShellRun {
  fn exited(&self, status: io::Result<ExitStatus>) {
    let (exit, error) = match status {
      Ok(status) => (ExitStatusInfo::from(status), None),
      Err(error) => (NO_EXIT, Some(error.to_string())),
    };
    self.part_done(move |state| {
      state.exit = exit;
      state.io_error = state.io_error.take().or(error);
    });
  }
}
