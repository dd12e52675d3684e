//! A persisted native monitor (docs/persistence.md): its process is a
//! keeper's child, so instead of pipes and an exit the monitor follows the
//! keeper's raw log from a cursor and settles with the keeper's end record.
//! The bytes go through the same reader as pipe bytes. A recovered monitor
//! first counts the lines it missed while no host ran and reports them in one
//! notification with the signal lane's digest (never replayed).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::{NativeMonitor, Stream};
use crate::monitor::hub::{Clock, MonitorHub};
use crate::monitor::reader::Reader;
use crate::monitor::signal::{DropDigest, SignalConfig};
use crate::monitor::throttle::ThrottleConfig;
use crate::persist::follow::{FollowHooks, FollowPaths, FollowSink, Follower};
use crate::persist::link::{self, KeeperLink};

use crate::persist::EndView;
use crate::reactor::Reactor;
use crate::sync::{lock, SelfRef};

/// Lines a recovered monitor missed, counted as the follower hands them over.
#[derive(Default)]
struct Missed {
  lines: u64,
  first: Option<String>,
  last: Option<String>,
  /// The unterminated end of the missed bytes: it completes with live bytes.
  partial: Vec<u8>,
}

impl Missed {
  fn add(&mut self, bytes: &[u8]) {
    self.partial.extend_from_slice(bytes);
    let Some(end) = self.partial.iter().rposition(|b| *b == b'\n') else {
      return;
    };
    let rest = self.partial.split_off(end + 1);
    let complete = std::mem::replace(&mut self.partial, rest);
    for line in complete[..complete.len() - 1].split(|b| *b == b'\n') {
      let text = String::from_utf8_lossy(&line[..line.len().min(4096)]).into_owned();
      self.lines += 1;
      if self.first.is_none() {
        self.first = Some(text);
      } else {
        self.last = Some(text);
      }
    }
  }
}

/// What a persisted monitor holds besides the common parts.
pub struct Persisted {
  pub link: Arc<KeeperLink>,
  follower: Mutex<Option<Arc<Follower>>>,
  missed: Mutex<Missed>,
}

/// Where a persisted monitor starts following.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FollowFrom {
  /// The cursor: bytes before it were consumed by an earlier host.
  pub offset: u64,
  /// The log's size at adoption: bytes up to it are counted, not replayed.
  pub missed_until: u64,
}

impl Persisted {
  /// Asks the keeper to stop the task; the follower then keeps the monitor
  /// alive until the end is read, so its state is forgotten even if the
  /// entry was removed meanwhile (`reset()`).
  pub fn request_cancel(&self, via: crate::end::EndVia) {
    if let Some(follower) = lock(&self.follower).as_ref() {
      follower.hold_until_end();
    }
    self.link.request_cancel(via);
  }
}

impl<C: Clock + Send + Sync + 'static> NativeMonitor<C> {
  /// A persisted monitor whose entry is already registered in `hub`: follows
  /// the keeper's log through `link`.
  #[allow(clippy::too_many_arguments)] // each is one independent option of the entry
  pub fn start_persisted(
    hub: &Arc<MonitorHub>,
    id: &str,
    link: Arc<KeeperLink>,
    from: FollowFrom,
    throttle: Option<ThrottleConfig>,
    signal: SignalConfig,
    max_events: u64,
    clock: C,
  ) -> std::io::Result<Arc<Self>>
  where
    C: Clone,
  {
    let observing = hub.registry().observation(id);
    let reader = Reader::new(id, throttle, signal, max_events, clock.mono_ms());
    let clock_for_follower = clock.clone();
    if reader.has_lane() {
      hub.registry().set_signal_lane(id);
    }
    let reactor = Reactor::pick()?;
    let files = link.files.clone();
    let keeper_alive = {
      let link = Arc::clone(&link);
      Box::new(move || link.keeper_alive())
    };
    let monitor = Arc::new_cyclic(|me| Self {
      me: SelfRef::new(me),
      id: id.to_owned(),
      group: None,
      persisted: Some(Persisted {
        link,
        follower: Mutex::new(None),
        missed: Mutex::new(Missed::default()),
      }),
      hub: Arc::downgrade(hub),
      reactor,
      reader: Mutex::new(reader),
      clock,
      aborted: AtomicBool::new(false),
      killed: AtomicBool::new(false),
      observing: Mutex::new(observing),
      io: Mutex::new(super::Io::default()),
      terminal: None,
      final_usage: Mutex::new(None),
    });
    hub.add_native(id, monitor.clone());
    let sink: Arc<dyn FollowSink> = monitor.clone();
    let follower = Follower::start(
      FollowPaths {
        id: id.to_owned(),
        data: files.log.clone(),
        end: files.end.clone(),
        cursor: Some(files.cursor.clone()),
      },
      from.offset,
      from.missed_until,
      Arc::downgrade(&sink),
      FollowHooks {
        read_end: crate::persist::link::read_end,
        write_cursor: link::write_cursor,
        keeper_alive,
        clock: crate::clock::SharedClock::new(Arc::new(clock_for_follower)),
      },
    )?;
    if let Some(p) = &monitor.persisted {
      *lock(&p.follower) = Some(follower);
    }
    Ok(monitor)
  }

  /// The keeper recorded the end: flush, settle with it, forget the state.
  fn finish_persisted(&self, end: Result<EndView, String>) {
    {
      let mut io = lock(&self.io);
      if io.finished {
        return;
      }
      io.finished = true;
    }
    let Some(persisted) = &self.persisted else {
      return;
    };
    if let Some(hub) = self.hub.upgrade() {
      self.cleanup(&hub);
      let aborted = self.aborted.load(std::sync::atomic::Ordering::Acquire);
      let wall = self.clock.wall_ms();
      match &end {
        // The end time is the keeper's, when the task really ended.
        Ok(view) => {
          hub.apply(|r| r.settle_from_record(&self.id, &view.end, aborted, view.end_time))
        }
        Err(error) => {
          let message = format!("persisted task: {error}");
          let end = crate::end::TaskEnd::io_error(&message);
          hub.apply(|r| r.fail_with_end(&self.id, &message, end, wall));
        }
      }
      hub.wake_js();
    }
    // Reported either way (a keeper that died without an end fails the
    // entry): the state goes, so no later host reports it again.
    persisted.link.forget_state();
  }
}

impl<C: Clock + Send + Sync + 'static> FollowSink for NativeMonitor<C> {
  fn missed(&self, bytes: &[u8]) {
    if let Some(p) = &self.persisted {
      lock(&p.missed).add(bytes);
    }
  }

  fn caught_up(&self) {
    let Some(p) = &self.persisted else {
      return;
    };
    let missed = std::mem::take(&mut *lock(&p.missed));
    let Some(hub) = self.hub.upgrade() else {
      return;
    };
    if missed.lines > 0 {
      let mut digest = DropDigest::new();
      let first = missed.first.unwrap_or_default();
      let last = missed.last.unwrap_or_else(|| first.clone());
      digest.record_run(missed.lines, &first, &last);
      let note = digest.take();
      let line = match missed.lines {
        1 => "1 line was written while no host was attached (counted, not replayed)".to_owned(),
        n => format!("{n} lines were written while no host was attached (counted, not replayed)"),
      };
      let (wall, mono) = (self.clock.wall_ms(), self.clock.mono_ms());
      hub.apply(|r| r.emit_event_with_digest(&self.id, &line, note, wall, mono));
      hub.wake_js();
    }
    if !missed.partial.is_empty() {
      self.ingest(&hub, Stream::Stdout, &missed.partial);
    }
  }

  fn bytes(&self, bytes: &[u8]) {
    if let Some(hub) = self.hub.upgrade() {
      self.ingest(&hub, Stream::Stdout, bytes);
    }
  }

  fn ended(&self, end: Result<EndView, String>) {
    self.finish_persisted(end);
  }
}

#[cfg(test)]
mod tests {
  use super::Missed;

  #[test]
  fn missed_lines_are_counted_with_the_first_and_the_last_and_a_partial_line_is_kept() {
    let mut missed = Missed::default();
    missed.add(b"one\ntw");
    missed.add(b"o\nthree\nfou");
    assert_eq!(missed.lines, 3);
    assert_eq!(missed.first.as_deref(), Some("one"));
    assert_eq!(missed.last.as_deref(), Some("three"));
    assert_eq!(missed.partial, b"fou");
    let mut one = Missed::default();
    one.add(b"only\n");
    assert_eq!(
      (one.lines, one.first.as_deref(), one.last.as_deref()),
      (1, Some("only"), None)
    );
  }
}
