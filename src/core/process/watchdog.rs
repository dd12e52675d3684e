//! Orphan protection for host deaths that run no JavaScript: SIGKILL of Node,
//! an unhandled SIGTERM, the OOM killer (CONTRACT.md §4 item 6, §2.15 item 12).
//!
//! A small `bash` process in its own session reads one line per group on a
//! pipe whose only write end is in the host. When every write end is closed,
//! the host is gone and the watchdog SIGKILLs every registered group and every
//! tagged process, then exits.

use std::io::{self, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use nix::sys::signal::Signal;

use super::group::ProcessGroup;
use super::pre_exec;
use super::shell::resolve_program;

/// The watchdog program, run as `bash -c SCRIPT taskstream-watchdog`. Only
/// builtins are used (no `PATH` lookups) and it stays bash 3.2 compatible.
pub(super) const SCRIPT: &str = r#"
# taskstream watchdog. Input lines: "+<pgid> <leader start time or 0> <tag>"
# registers a process group, "-<pgid> <start time>" forgets it. EOF means the
# host process is gone, however it died. Processes are chosen by pgid plus
# start time or by exact environment tag, never by name.
pg=() st=() tg=()
while read -r op start tag; do
  case $op in
    +[0-9]*) pg+=("${op#+}"); st+=("$start"); tg+=("$tag") ;;
    -[0-9]*) for i in "${!pg[@]}"; do
        [ "${pg[i]} ${st[i]}" = "${op#-} $start" ] && unset "pg[i]" "st[i]" "tg[i]"
      done ;;
  esac
done

# Sets G (pgid, field 5) and S (start time, field 22) from /proc/$1/stat; the
# command name may contain spaces, so fields are counted after the last ") ".
proc_stat() {
  local line
  { read -r line < "/proc/$1/stat"; } 2>/dev/null || return 1
  set -- ${line##*") "}
  G=$3 S=${20}
}

procfs=
[ -r "/proc/$$/stat" ] && procfs=1

# Each group whose leader is still the process we registered. Without procfs
# (macOS) the pgid cannot be checked and is trusted.
for i in "${!pg[@]}"; do
  p=${pg[i]}
  [ "$p" -gt 1 ] || continue
  if proc_stat "$p"; then
    [ "${st[i]}" != 0 ] && [ "$S" = "${st[i]}" ] && kill -KILL -- "-$p"
  elif [ -z "$procfs" ]; then
    kill -KILL -- "-$p"
  fi
done 2>/dev/null

# Every process tagged TASKSTREAM_TASK_ID=<registered tag>, including those
# that left their group. A group whose leader is gone is killed only if it
# still holds such a process: its pgid cannot be reused while it does.
scan() {
  local f pid e i
  for f in /proc/[0-9]*/environ; do
    pid=${f#/proc/}; pid=${pid%/environ}
    [ "$pid" -gt 1 ] && [ "$pid" != "$$" ] || continue
    while IFS= read -r -d '' e; do
      case $e in TASKSTREAM_TASK_ID=*) ;; *) continue ;; esac
      for i in "${!tg[@]}"; do
        [ "${tg[i]}" = "${e#*=}" ] || continue
        proc_stat "$pid" && [ "$G" = "${pg[i]}" ] && [ ! -e "/proc/$G" ] && kill -KILL -- "-$G"
        kill -KILL "$pid"
      done
    done < "$f"
  done 2>/dev/null
}
# Twice: the second pass catches children forked during the first.
[ -n "$procfs" ] && { scan; scan; }
exit 0
"#;

/// A running watchdog and the write end of its stdin (CLOEXEC, as std
/// creates it, so no child ever inherits it).
struct Watchdog {
  child: Child,
  stdin: ChildStdin,
}

enum State {
  NotStarted,
  Running(Watchdog),
  /// Could not start (logged once); spawning continues without it.
  Failed,
}

/// The host's connection to its watchdog, owned by the tracker so that
/// messages are ordered with the tracker's own changes.
pub(super) struct Link {
  state: State,
}

impl Link {
  pub(super) const fn new() -> Link {
    Link {
      state: State::NotStarted,
    }
  }

  /// Starts the watchdog if it never ran, announcing every `tracked` group.
  pub(super) fn ensure_started(&mut self, tracked: &[ProcessGroup]) {
    if let State::NotStarted = self.state {
      self.state = start_with(tracked);
    }
  }

  /// Announces a new group; `tracked` already includes it.
  pub(super) fn added(&mut self, group: &ProcessGroup, tracked: &[ProcessGroup]) {
    self.send(&added_line(group), tracked);
  }

  /// Withdraws a dead group; `tracked` no longer includes it.
  pub(super) fn removed(&mut self, group: &ProcessGroup, tracked: &[ProcessGroup]) {
    let line = format!("-{} {}\n", group.pgid, group.leader_start_time.unwrap_or(0));
    self.send(&line, tracked);
  }

  /// Writes `line`. If the watchdog died (EPIPE), a new one is started once
  /// and told about every `tracked` group, which already reflects `line`.
  fn send(&mut self, line: &str, tracked: &[ProcessGroup]) {
    self.ensure_started(tracked);
    let State::Running(watchdog) = &mut self.state else {
      return;
    };
    if let Err(error) = watchdog.stdin.write_all(line.as_bytes()) {
      tracing::warn!("taskstream: watchdog lost ({error}); starting a new one");
      watchdog.reap();
      self.state = start_with(tracked);
    }
  }
}

fn added_line(group: &ProcessGroup) -> String {
  let start = group.leader_start_time.unwrap_or(0);
  format!("+{} {} {}\n", group.pgid, start, group.task_tag)
}

fn start_with(tracked: &[ProcessGroup]) -> State {
  let started = Watchdog::start().and_then(|mut watchdog| {
    let lines: String = tracked.iter().map(added_line).collect();
    match watchdog.stdin.write_all(lines.as_bytes()) {
      Ok(()) => Ok(watchdog),
      Err(error) => {
        watchdog.reap();
        Err(error)
      }
    }
  });
  match started {
    Ok(watchdog) => State::Running(watchdog),
    Err(error) => {
      tracing::warn!("taskstream: cannot start the orphan watchdog: {error}");
      State::Failed
    }
  }
}

impl Watchdog {
  fn start() -> io::Result<Watchdog> {
    let path = std::env::var_os("PATH");
    let bash = resolve_program("bash", path.as_deref())
      .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "bash not found on PATH"))?;
    let mut command = Command::new(bash);
    command
      .args(["-c", SCRIPT, "taskstream-watchdog"])
      .env_clear()
      .current_dir("/")
      .stdin(Stdio::piped())
      .stdout(Stdio::null())
      .stderr(Stdio::null());
    // SAFETY: `setup` only makes async-signal-safe calls (see pre_exec.rs).
    unsafe {
      std::os::unix::process::CommandExt::pre_exec(&mut command, setup);
    }
    let mut child = command.spawn()?;
    let stdin = child.stdin.take().expect("stdin is piped");
    Ok(Watchdog { child, stdin })
  }

  /// Collects a watchdog whose stdin broke: it has exited (or is about to,
  /// after SIGKILL through our own unreaped child handle).
  fn reap(&mut self) {
    let _ = self.child.kill();
    let _ = self.child.wait();
  }
}

/// Own session (a Ctrl+C to the terminal's group or a kill of Node's group
/// does not reach it), and the usual termination signals ignored, so only
/// SIGKILL can take it down with the host.
fn setup() -> io::Result<()> {
  pre_exec::new_session()?;
  pre_exec::reset_signals();
  pre_exec::ignore_signals(&[
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGTERM,
    Signal::SIGQUIT,
  ]);
  pre_exec::close_inherited_fds_on_exec();
  Ok(())
}
