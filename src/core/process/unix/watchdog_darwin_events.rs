//! What the macOS host-exit helper (watchdog_darwin.rs) does with each answer
//! kqueue gives it. Pure, so it is unit-tested on every Unix; the kqueue
//! calls themselves compile on macOS only.

/// What the macOS host-exit helper writes when the host pid exited: the
/// leading newline ends a line the host may have left half written as it
/// died, and the script stops reading at `!` as at EOF.
pub(super) const HOST_GONE_LINE: &[u8] = b"\n!\n";

/// The two processes the helper waits on: the host (Node), whose exit is the
/// second host-death signal, and the watchdog it serves, whose exit makes the
/// helper useless (a replaced watchdog gets a helper of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Watched {
  pub host: u32,
  pub watchdog: u32,
}

/// What the helper does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Verdict {
  /// Keep waiting.
  Wait,
  /// Exit quietly: its write end closes with it, so the pipe's EOF alone
  /// remains (the watchdog is gone, or the host cannot be watched).
  Stop,
  /// The host is gone: write the host-gone line, then exit.
  HostGone,
}

/// A registration receipt (`EV_ADD | EV_RECEIPT`): `error` is its `data`, 0
/// or an errno. `ESRCH` means that process is already gone: for the host that
/// is its death (it can die between the watchdog's fork and the watch), for
/// the watchdog a reason to stop. Any other failure to watch the host leaves
/// the pipe alone; one to watch the watchdog only costs the helper's early
/// exit.
pub(super) fn on_receipt(watched: Watched, ident: u64, error: i64) -> Verdict {
  let gone = error == i64::from(libc::ESRCH);
  match (who(watched, ident), error) {
    (_, 0) => Verdict::Wait,
    (Who::Host, _) if gone => Verdict::HostGone,
    (Who::Host, _) => Verdict::Stop,
    (Who::Watchdog, _) if gone => Verdict::Stop,
    _ => Verdict::Wait,
  }
}

/// An event on a watched pid; `exited` when `NOTE_EXIT` is set in it.
pub(super) fn on_event(watched: Watched, ident: u64, exited: bool) -> Verdict {
  match (who(watched, ident), exited) {
    (Who::Host, true) => Verdict::HostGone,
    (Who::Watchdog, true) => Verdict::Stop,
    _ => Verdict::Wait,
  }
}

/// Several answers from one `kevent` call: the host's death wins over the
/// watchdog's (writing to a pipe nobody reads any more is harmless), and
/// either over waiting.
pub(super) fn combine(a: Verdict, b: Verdict) -> Verdict {
  a.max(b)
}

enum Who {
  Host,
  Watchdog,
  Other,
}

fn who(watched: Watched, ident: u64) -> Who {
  if ident == u64::from(watched.host) {
    Who::Host
  } else if ident == u64::from(watched.watchdog) {
    Who::Watchdog
  } else {
    Who::Other
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  const W: Watched = Watched {
    host: 100,
    watchdog: 200,
  };

  #[test]
  fn host_exit_watch_receipts() {
    let esrch = i64::from(libc::ESRCH);
    assert_eq!(on_receipt(W, 100, 0), Verdict::Wait);
    assert_eq!(on_receipt(W, 200, 0), Verdict::Wait);
    assert_eq!(on_receipt(W, 100, esrch), Verdict::HostGone);
    assert_eq!(on_receipt(W, 100, i64::from(libc::EPERM)), Verdict::Stop);
    assert_eq!(on_receipt(W, 200, esrch), Verdict::Stop);
    assert_eq!(on_receipt(W, 200, i64::from(libc::EPERM)), Verdict::Wait);
    assert_eq!(on_receipt(W, 300, esrch), Verdict::Wait);
  }

  #[test]
  fn host_exit_watch_events() {
    assert_eq!(on_event(W, 100, true), Verdict::HostGone);
    assert_eq!(on_event(W, 200, true), Verdict::Stop);
    assert_eq!(on_event(W, 100, false), Verdict::Wait);
    assert_eq!(on_event(W, 200, false), Verdict::Wait);
    assert_eq!(on_event(W, 300, true), Verdict::Wait);
  }

  #[test]
  fn host_exit_watch_host_death_wins() {
    use Verdict::*;
    for (a, b, both) in [
      (Wait, Wait, Wait),
      (Wait, Stop, Stop),
      (Stop, HostGone, HostGone),
      (HostGone, Stop, HostGone),
      (HostGone, Wait, HostGone),
    ] {
      assert_eq!(combine(a, b), both);
    }
  }
}
