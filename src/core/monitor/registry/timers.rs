//! The registry's timed side: bounded waits on an entry (their matching,
//! quiet and timeout deadlines), settled timers, the signal lane's due
//! settles and the end digest, and the earliest deadline the hub must wake
//! for. The state machine's transitions are in `mod.rs`.

use super::*;

impl MonitorRegistry {
  /// The waits that settles and removals resolved since the last call, as
  /// effects to run after the transition's own (the hub appends them).
  pub fn take_resolved_waits(&mut self) -> Vec<Effect> {
    std::mem::take(&mut self.resolved_waits)
  }

  /// `waitFor` (API.md §6.1): a wait on a settled entry resolves at once with
  /// `exit` (returned); otherwise it is added and resolves through an
  /// [`Effect::WaitResolved`].
  pub fn add_wait(
    &mut self,
    id: &str,
    wait: u64,
    spec: WaitSpec,
    now_mono_ms: i64,
  ) -> Result<Option<WaitOutcome>, UnknownEntry> {
    let Some(entry) = self.get_mut(id) else {
      return Err(UnknownEntry(id.to_owned()));
    };
    if !entry.is_running() || entry.detached {
      let status = if entry.detached {
        MonitorStatus::Cancelled
      } else {
        entry.status
      };
      let mut set = crate::wait::WaitSet::default();
      set.add(wait, spec, now_mono_ms);
      return Ok(set.finish(status, now_mono_ms).pop().map(|(_, o)| o));
    }
    entry.waits.add(wait, spec, now_mono_ms);
    Ok(None)
  }

  /// A wait's signal fired: it resolves `aborted` if still pending.
  pub fn abort_wait(&mut self, id: &str, wait: u64, now_mono_ms: i64) -> Vec<Effect> {
    let Some(entry) = self.get_mut(id) else {
      return Vec::new();
    };
    let status = entry.status;
    match entry.waits.abort(wait, status, now_mono_ms) {
      Some(outcome) => vec![Effect::WaitResolved {
        id: id.to_owned(),
        wait,
        outcome,
      }],
      None => Vec::new(),
    }
  }

  /// Native: sanitised lines the reader built (accepted or dropped), for
  /// waits with `match` and the settled notification's last line.
  pub fn observe_lines(&mut self, id: &str, lines: &[String], now_mono_ms: i64) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id).filter(|e| !e.detached) else {
      return Vec::new();
    };
    let mut effects = Vec::new();
    for line in lines {
      for (wait, outcome) in entry.waits.on_line(line, now_mono_ms) {
        effects.push(Effect::WaitResolved {
          id: id.to_owned(),
          wait,
          outcome,
        });
      }
    }
    if entry.settle.is_some() {
      if let Some(last) = lines.last() {
        entry.last_line = Some(last.clone());
      }
    }
    effects
  }

  /// The last line of a read whose last lines were only counted (see
  /// [`super::pipeline::LineSink::last_line`]): what a settled notification quotes.
  pub fn record_last_line(&mut self, id: &str, line: String) {
    if let Some(entry) = self
      .running_mut(id)
      .filter(|e| !e.detached && e.settle.is_some())
    {
      entry.last_line = Some(line);
    }
  }

  /// Whether the entry's reader must build lines (see [`MonitorEntry::observes_lines`]).
  pub fn observes_lines(&self, id: &str) -> bool {
    self.get(id).is_some_and(MonitorEntry::observes_lines)
  }

  /// Which lines the entry's reader must build (see [`MonitorEntry::observation`]).
  pub fn observation(&self, id: &str) -> Observe {
    self.get(id).map_or(Observe::Off, MonitorEntry::observation)
  }

  /// Compiles the entry's pending `match` patterns for runs of plain lines (see
  /// [`crate::wait::WaitSet::refresh_line_matcher`]); the entry's observation after it.
  pub fn refresh_line_matcher(&mut self, id: &str) -> Observe {
    match self.get_mut(id) {
      Some(entry) => {
        entry.waits.refresh_line_matcher();
        entry.observation()
      }
      None => Observe::Off,
    }
  }

  /// Waits whose quiet period or timeout passed, and settled notifications
  /// whose time came, for every running entry.
  /// Running native entries whose `port` waits want the ports read at `now_mono_ms`.
  pub fn ports_due(&self, now_mono_ms: i64) -> Vec<String> {
    self
      .entries
      .iter()
      .filter(|e| e.is_running() && !e.detached && e.waits.ports_due(now_mono_ms))
      .map(|e| e.id.clone())
      .collect()
  }

  /// The ports `id`'s tree listens on, read at `now_mono_ms`: its `port` waits they satisfy
  /// resolve (API.md §6.8).
  pub fn on_ports(&mut self, id: &str, ports: &[u16], now_mono_ms: i64) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id).filter(|e| !e.detached) else {
      return Vec::new();
    };
    entry
      .waits
      .on_ports(ports, now_mono_ms)
      .into_iter()
      .map(|(wait, outcome)| Effect::WaitResolved {
        id: id.to_owned(),
        wait,
        outcome,
      })
      .collect()
  }

  pub fn take_due_timers(&mut self, now_mono_ms: i64) -> Vec<Effect> {
    let mut effects = Vec::new();
    for entry in self
      .entries
      .iter_mut()
      .filter(|e| e.is_running() && !e.detached)
    {
      for (wait, outcome) in entry.waits.take_due(now_mono_ms) {
        effects.push(Effect::WaitResolved {
          id: entry.id.clone(),
          wait,
          outcome,
        });
      }
      if entry.signal_lane {
        // Its reader flushes the window first ([`Self::fire_settled`]).
        continue;
      }
      let fired = entry.settle.as_mut().and_then(|timer| {
        timer
          .take_fired(now_mono_ms.max(0) as u64)
          .then(|| timer.settle_ms())
      });
      if let Some(settle_ms) = fired {
        effects.push(Effect::Notify(Box::new(settled_notification(
          entry, settle_ms, None,
        ))));
      }
    }
    effects
  }

  /// Native entries with a signal lane (API.md §6.7) whose settled
  /// notification is due: their readers send it ([`Self::fire_settled`])
  /// after flushing the open window.
  pub fn lane_settles_due(&self, now_mono_ms: i64) -> Vec<String> {
    self
      .entries
      .iter()
      .filter(|e| e.signal_lane && e.is_running() && !e.detached)
      .filter(|e| e.settle_deadline().is_some_and(|d| d <= now_mono_ms))
      .map(|e| e.id.clone())
      .collect()
  }

  /// Marks a native entry whose reader has a signal lane: its settled
  /// notifications come through [`Self::fire_settled`].
  pub fn set_signal_lane(&mut self, id: &str) {
    if let Some(entry) = self.get_mut(id) {
      entry.signal_lane = true;
    }
  }

  /// Whether the running entry's settled notification is due at `now_mono_ms`.
  pub fn settle_is_due(&self, id: &str, now_mono_ms: i64) -> bool {
    self.get(id).is_some_and(|e| {
      e.is_running() && !e.detached && e.settle_deadline().is_some_and(|d| d <= now_mono_ms)
    })
  }

  /// The settled notification of a lane entry, with the lines dropped since
  /// the previous notification; when it does not fire (the entry settled
  /// meanwhile), those lines are kept for the terminal notification.
  pub fn fire_settled(
    &mut self,
    id: &str,
    now_mono_ms: i64,
    digest: Option<DigestNote>,
  ) -> Vec<Effect> {
    let Some(entry) = self.get_mut(id) else {
      return Vec::new();
    };
    let fired = match entry.settle.as_mut() {
      Some(timer) if entry.status == MonitorStatus::Running && !entry.detached => timer
        .take_fired(now_mono_ms.max(0) as u64)
        .then(|| timer.settle_ms()),
      _ => None,
    };
    match fired {
      Some(settle_ms) => vec![Effect::Notify(Box::new(settled_notification(
        entry,
        settle_ms,
        digest.as_ref(),
      )))],
      None => {
        self.set_end_digest(id, digest);
        Vec::new()
      }
    }
  }

  /// A terminal task's screen settled (API.md §6.5): its settled
  /// notification, with the screen's text as the result.
  pub fn fire_screen_settled(
    &mut self,
    id: &str,
    settle_ms: u64,
    screen: &str,
    digest: Option<DigestNote>,
  ) -> Vec<Effect> {
    match self.running_mut(id).filter(|e| !e.detached) {
      Some(entry) => vec![Effect::Notify(Box::new(settled_notification_with(
        entry,
        settle_ms,
        Some(screen),
        digest.as_ref(),
      )))],
      None => Vec::new(),
    }
  }

  /// The settled notification will not come (the reader stopped; the terminal one follows).
  pub fn disarm_settle(&mut self, id: &str) {
    if let Some(timer) = self.get_mut(id).and_then(|e| e.settle.as_mut()) {
      timer.disarm();
    }
  }

  /// Lines dropped since the last notification, quoted by the terminal one
  /// (the reader's flush at stop). Kept until that notification is built.
  pub fn set_end_digest(&mut self, id: &str, digest: Option<DigestNote>) {
    let Some(digest) = digest else {
      return;
    };
    if let Some(entry) = self.get_mut(id).filter(|e| !e.notified) {
      entry.end_digest = Some(match entry.end_digest.take() {
        // Two flushes before the terminal notification: one count, the first line of the first.
        Some(earlier) => earlier.merged(digest),
        None => digest,
      });
    }
  }

  /// §6.7: lines a lane let out at stop, for the terminal notification: each counts as an
  /// event (up to `maxEvents`) and is cut as an event line.
  pub fn set_end_lines(
    &mut self,
    id: &str,
    lines: Vec<String>,
    marks: Vec<Mark>,
    now_wall_ms: f64,
  ) {
    if lines.is_empty() {
      return;
    }
    let Some(entry) = self.get_mut(id).filter(|e| !e.notified && !e.detached) else {
      return;
    };
    let room = entry.max_events.saturating_sub(entry.event_count);
    let take = lines.len().min(usize::try_from(room).unwrap_or(usize::MAX));
    if take == 0 {
      return;
    }
    entry.event_count += take as u64;
    entry.last_event_time = now_wall_ms;
    entry.end_lines.extend(
      lines
        .iter()
        .take(take)
        .map(|line| truncate_event_line(line).into_owned()),
    );
    entry.end_marks.extend(marks.into_iter().take(take));
  }

  /// The earliest wait or settle deadline of any running entry.
  pub fn next_timer_deadline(&self) -> Option<i64> {
    self
      .entries
      .iter()
      .filter(|e| e.is_running() && !e.detached)
      .flat_map(|e| [e.waits.next_deadline(), e.settle_deadline()])
      .flatten()
      .min()
  }
}
