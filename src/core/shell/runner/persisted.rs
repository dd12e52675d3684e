//! A persisted background shell (docs/persistence.md): its process is a
//! keeper's child and the keeper writes the output file. The run follows
//! that file for its waits (`match`, `quiet`) and its settled timer, and
//! settles with the keeper's end record.

use std::io;
use std::sync::{Arc, Mutex};

use super::{OnSignal, RunState, ShellOutcome, ShellRun, NO_EXIT, PARTS};
use crate::clock::Clock;
use crate::end::{EndReason, EndVia};
use crate::persist::follow::{FollowHooks, FollowPaths, FollowSink, Follower};
use crate::persist::{EndView, KeeperLink};
use crate::process::ExitStatusInfo;
use crate::shell::output::{OutputCounters, Stream};
use crate::shell::signals::RunSignals;
use crate::sync::{lock, SelfRef};

/// What a persisted run holds besides the common parts.
pub struct ShellPersisted {
  pub link: Arc<KeeperLink>,
  follower: Mutex<Option<Arc<Follower>>>,
}

impl ShellRun {
  /// Follows a keeper's run of a shell: `output` is the output file the
  /// keeper writes (read from `offset`), the end comes from its record.
  pub fn start_persisted(
    pid: u32,
    link: Arc<KeeperLink>,
    output: std::path::PathBuf,
    offset: u64,
    settle_ms: Option<u64>,
    on_signal: OnSignal,
    on_settle: Box<dyn FnOnce(ShellOutcome) + Send>,
  ) -> io::Result<Arc<Self>> {
    let (id, end) = (link.id.clone(), link.files.end.clone());
    let keeper_alive = {
      let link = Arc::clone(&link);
      Box::new(move || link.keeper_alive())
    };
    let run = Arc::new_cyclic(|me| Self {
      me: SelfRef::new(me),
      pid,
      group: None,
      writer: Mutex::new(None),
      persisted: Some(ShellPersisted {
        link,
        follower: Mutex::new(None),
      }),
      state: Mutex::new(RunState {
        parts_left: PARTS,
        exit: NO_EXIT,
        io_error: None,
        aborted: false,
        cancelled_via: None,
        stopped_by: None,
        settled: false,
        on_settle: Some(on_settle),
      }),
      signals: Mutex::new(RunSignals::new(settle_ms)),
      timer_at: Mutex::new(None),
      on_signal,
      clock: crate::clock::SharedClock::default(),
      reactor: Mutex::new(None),
      terminal: None,
      stop_at_cap: std::sync::atomic::AtomicBool::new(false),
      final_usage: Mutex::new(None),
    });
    let sink: Arc<dyn FollowSink> = run.clone();
    let follower = Follower::start(
      FollowPaths {
        id,
        data: output,
        end,
        cursor: None,
      },
      offset,
      offset,
      Arc::downgrade(&sink),
      FollowHooks {
        read_end: crate::persist::link::read_end,
        write_cursor: crate::persist::link::write_cursor,
        keeper_alive,
        clock: run.clock.clone(),
      },
    )?;
    *lock(&run.reactor) = Some(follower.reactor());
    if let Some(p) = &run.persisted {
      *lock(&p.follower) = Some(follower);
    }
    Ok(run)
  }

  /// The end record arrived: settle once with it.
  fn settle_persisted(&self, end: Result<EndView, String>) {
    let (aborted, cancelled_via, on_settle) = {
      let mut state = lock(&self.state);
      if state.settled {
        return;
      }
      state.settled = true;
      (state.aborted, state.cancelled_via, state.on_settle.take())
    };
    lock(&self.signals).stop();
    let outcome = match &end {
      Ok(view) => ShellOutcome::from_record(view, aborted, cancelled_via),
      Err(error) => ShellOutcome {
        exit: NO_EXIT,
        aborted,
        cancelled_via,
        stopped_by: None,
        spawn_or_io_error: Some(format!("persisted task: {error}")),
        counters: OutputCounters::default(),
        recorded_end: None,
        recorded_end_time: None,
      },
    };
    if let Some(on_settle) = on_settle {
      on_settle(outcome);
    }
    // Reported either way (a keeper that died without an end fails the
    // run): the state goes, so no later host reports it again.
    if let Some(p) = &self.persisted {
      p.link.forget_state();
    }
  }
}

impl ShellOutcome {
  /// A persisted run's outcome from its keeper's end record; `aborted` and
  /// `cancelled_via`: what this host asked.
  pub fn from_record(view: &EndView, aborted: bool, cancelled_via: Option<EndVia>) -> Self {
    let recorded = view.end.clone();
    let cancelled = matches!(recorded.reason, EndReason::Cancelled | EndReason::Restarted);
    ShellOutcome {
      exit: ExitStatusInfo {
        code: view.exit_code,
        signal: recorded
          .signal
          .as_deref()
          .and_then(crate::process::signal_number),
      },
      aborted: aborted || cancelled,
      cancelled_via: cancelled_via.or(recorded.via),
      stopped_by: None,
      spawn_or_io_error: None,
      counters: OutputCounters {
        bytes_read: view.output_bytes + view.dropped_bytes,
        bytes_written: view.output_bytes,
        bytes_not_written: view.dropped_bytes,
        binary_detected: false,
        write_error: None,
      },
      recorded_end: Some(recorded),
      recorded_end_time: Some(view.end_time as u64),
    }
  }
}

impl FollowSink for ShellRun {
  fn bytes(&self, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let now = self.clock.mono_ms();
    let mut out = Vec::new();
    let armed = {
      let mut signals = lock(&self.signals);
      if signals.observes_lines() {
        signals.on_text(Stream::Stdout, &text, now, &mut out);
      }
      signals.on_read(now)
    };
    if armed {
      self.schedule_timer();
    }
    for signal in out {
      (self.on_signal)(signal);
    }
  }

  fn ended(&self, end: Result<EndView, String>) {
    self.settle_persisted(end);
  }
}
