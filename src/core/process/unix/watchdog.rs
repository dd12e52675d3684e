//! Orphan protection for host deaths that run no JavaScript: SIGKILL of Node,
//! an unhandled SIGTERM, the OOM killer (CONTRACT.md §4 item 6, §2.15 item 12).
//!
//! A small `bash` process in its own session reads one line per group on a
//! pipe whose only write end is in the host. When every write end is closed,
//! the host is gone and the watchdog SIGKILLs every registered group and every
//! tagged process, then exits.
//!
//! It reads the process table itself. On Linux that is procfs: a group is
//! killed when its leader has the registered start time (field 22), and every
//! process whose `/proc/<pid>/environ` holds a registered tag is killed.
//! macOS has no procfs, so the host passes `/bin/ps` (by absolute path: the
//! watchdog never searches `PATH`) and the watchdog reads one table per pass
//! with `ps -AEww -o pid=,ppid=,pgid=,lstart=,command=`: `lstart` (printed in
//! UTC) gives the start second, which must equal the second of the leader's
//! registered start (microseconds since the epoch on macOS), and `-E` appends
//! the environment each process started with, where the tag is. The same
//! rules as on Linux then pick the processes, plus their descendants by
//! parent links. If `ps` yields nothing, every registered pgid is trusted and
//! killed, as before.
//!
//! macOS also has a second host-death signal beside the pipe's EOF, which
//! needs every write end closed (one leaked into a process forked by another
//! library would hold it open): bash cannot wait on a kqueue, so a helper
//! forked from the watchdog before it execs bash waits on kqueue
//! `EVFILT_PROC`/`NOTE_EXIT` for the host pid and, when it fires, writes the
//! `HOST_GONE_LINE` (watchdog_darwin_events.rs) into the pipe; the script stops reading at that line
//! exactly as at EOF. Whichever comes first runs the same kills
//! (watchdog_darwin.rs).

use std::io::{self, PipeWriter, Write};
use std::process::{Command, Stdio};

use nix::sys::signal::Signal;

use super::pre_exec;
use super::shell::resolve_program;
use crate::process::group::ProcessGroup;

/// What the macOS host-exit helper writes when the host pid exited (defined
/// beside the helper's pure event logic), here for the tests that play it.
#[cfg(test)]
pub(super) use super::watchdog_darwin_events::HOST_GONE_LINE;

/// The watchdog's macOS half: shell functions that read the process table
/// with `ps` (see the module comment). A macro, so that [`SCRIPT`] includes
/// it and [`PS_FUNCTIONS`] exposes it to tests.
macro_rules! ps_functions {
  () => {
    r#"
# Sets T to the seconds since the epoch of a UTC date as `ps -o lstart`
# prints it in the C locale ("Tue Mar  5 14:03:07 2024"): $1 the month's
# name, $2 the day, $3 HH:MM:SS, $4 the year.
epoch() {
  local m y d h mi s
  case $1 in
    Jan) m=1 ;; Feb) m=2 ;; Mar) m=3 ;; Apr) m=4 ;; May) m=5 ;; Jun) m=6 ;;
    Jul) m=7 ;; Aug) m=8 ;; Sep) m=9 ;; Oct) m=10 ;; Nov) m=11 ;; Dec) m=12 ;;
    *) return 1 ;;
  esac
  case $2:$3:$4 in
    [0-9]:[0-9][0-9]:[0-9][0-9]:[0-9][0-9]:[0-9][0-9][0-9][0-9]) ;;
    [0-9][0-9]:[0-9][0-9]:[0-9][0-9]:[0-9][0-9]:[0-9][0-9][0-9][0-9]) ;;
    *) return 1 ;;
  esac
  h=${3%%:*} s=${3##*:} mi=${3#*:}
  mi=${mi%:*}
  # Days from 1970-01-01 of a proleptic Gregorian date, years counted from
  # March so that the leap day ends the year.
  y=$((10#$4 - (m <= 2)))
  d=$((365 * y + y / 4 - y / 100 + y / 400 + (153 * ((m + 9) % 12) + 2) / 5 + 10#$2 - 719469))
  T=$((d * 86400 + 10#$h * 3600 + 10#$mi * 60 + 10#$s))
}

# One pass over the table printed by $1 (ps, by absolute path): kills each
# group whose leader is the registered process (same start second) or,
# leader gone, that still holds a process with the group's tag (its pgid
# cannot be reused while it does); every process tagged with a registered
# tag (the environment, which -E appends to the command line, holds
# "TASKSTREAM_TASK_ID=<tag>"); and every descendant of those by parent
# links. Never pid 0, 1 or itself. Returns 1 if the table is empty.
ps_sweep() {
  local -a par grp beg has mark
  local pid ppid pgid wd mon day hms year rest v i p ours more rows=
  while read -r pid ppid pgid wd mon day hms year rest; do
    case $pid:$ppid:$pgid in *[!0-9:]*|:*|*::*|*:) continue ;; esac
    rows=1
    par[pid]=$ppid grp[pid]=$pgid T=
    epoch "$mon" "$day" "$hms" "$year"
    beg[pid]=$T
    # The registered tags this process carries, as " <index> …".
    case $rest in *TASKSTREAM_TASK_ID=*) ;; *) continue ;; esac
    rest=" $rest "
    while :; do
      case $rest in *" TASKSTREAM_TASK_ID="*) ;; *) break ;; esac
      rest=${rest#*" TASKSTREAM_TASK_ID="}
      v=${rest%%" "*}
      for i in "${!tg[@]}"; do
        [ "${tg[i]}" = "$v" ] && has[pid]="${has[pid]} $i "
      done
    done
  done < <(TZ=UTC0 LC_ALL=C "$1" -AEww -o pid=,ppid=,pgid=,lstart=,command= 2>/dev/null)
  [ -n "$rows" ] || return 1

  for pid in "${!has[@]}"; do mark[pid]=1; done
  for i in "${!pg[@]}"; do
    p=${pg[i]} ours=
    [ "$p" -gt 1 ] || continue
    if [ -n "${par[p]}" ]; then
      [ "${st[i]}" -gt 0 ] && [ -n "${beg[p]}" ] &&
        [ "${beg[p]}" = "$(( st[i] / 1000000 ))" ] && ours=1
    else
      for pid in "${!has[@]}"; do
        [ "${grp[pid]}" = "$p" ] && case ${has[pid]} in *" $i "*) ours=1 ;; esac
      done
    fi
    [ -n "$ours" ] || continue
    kill -KILL -- "-$p"
    for pid in "${!grp[@]}"; do
      [ "${grp[pid]}" = "$p" ] && mark[pid]=1
    done
  done

  more=1
  while [ -n "$more" ]; do
    more=
    for pid in "${!par[@]}"; do
      [ -z "${mark[pid]}" ] && [ -n "${mark[${par[pid]}]}" ] && mark[pid]=1 more=1
    done
  done
  for pid in "${!mark[@]}"; do
    [ "$pid" -gt 1 ] && [ "$pid" != "$$" ] && kill -KILL "$pid"
  done
  return 0
}
"#
  };
}

/// The `ps` functions of [`SCRIPT`], for tests.
#[cfg(test)]
pub(super) const PS_FUNCTIONS: &str = ps_functions!();

/// The watchdog program, run as `bash -c SCRIPT taskstream-watchdog
/// <cgroup dir> <ps>`. Only builtins are used (no `PATH` lookups; `ps` comes
/// by absolute path) and it stays bash 3.2 compatible.
pub(super) const SCRIPT: &str = concat!(
  r#"
# taskstream watchdog. Input lines: "+<pgid> <leader start time or 0> <tag>
# [<cgroup dir>]" registers a task, "-<pgid> <start time>" forgets it. EOF
# means the host process is gone, however it died; so does a "!" line (on
# macOS, from the helper that waits on kqueue NOTE_EXIT for the host pid). Processes are chosen by
# cgroup, by pgid plus start time or by exact environment tag, never by name.
# $1 is the host's directory of task cgroups, removed at the end if empty.
# $2, without procfs (macOS), is ps by absolute path, to read the process
# table with instead.
pg=() st=() tg=() cg=()
while read -r op start tag cgroup; do
  case $op in
    '!') break ;;
    +[0-9]*) pg+=("${op#+}"); st+=("$start"); tg+=("$tag"); cg+=("$cgroup") ;;
    -[0-9]*) for i in "${!pg[@]}"; do
        [ "${pg[i]} ${st[i]}" = "${op#-} $start" ] && unset "pg[i]" "st[i]" "tg[i]" "cg[i]"
      done ;;
  esac
done

# First every task cgroup: one write kills all of its processes, whatever
# they did to their group, parent or environment.
for i in "${!cg[@]}"; do
  [ -n "${cg[i]}" ] && echo 1 > "${cg[i]}/cgroup.kill"
done 2>/dev/null

# Sets G (pgid, field 5) and S (start time, field 22) from /proc/$1/stat; the
# command name may contain spaces, so fields are counted after the last ") ".
proc_stat() {
  local line
  { read -r line < "/proc/$1/stat"; } 2>/dev/null || return 1
  set -- ${line##*") "}
  G=$3 S=${20}
}

procfs=
[ -z "$2" ] && [ -r "/proc/$$/stat" ] && procfs=1

# Each group whose leader is still the process we registered. With neither
# procfs nor ps the pgid cannot be checked and is trusted.
trust_groups() {
  local i
  for i in "${!pg[@]}"; do
    [ "${pg[i]}" -gt 1 ] && kill -KILL -- "-${pg[i]}"
  done
}
if [ -n "$procfs" ]; then
  for i in "${!pg[@]}"; do
    p=${pg[i]}
    [ "$p" -gt 1 ] || continue
    proc_stat "$p" && [ "${st[i]}" != 0 ] && [ "$S" = "${st[i]}" ] && kill -KILL -- "-$p"
  done
elif [ -z "$2" ]; then
  trust_groups
fi 2>/dev/null

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
"#,
  ps_functions!(),
  r#"
if [ -n "$2" ]; then
  if ps_sweep "$2"; then ps_sweep "$2"; else trust_groups; fi
fi 2>/dev/null

# Remove the emptied cgroups (their processes take a moment to die), at most
# about 2 s; fd 3 is a pipe nobody writes to, for read's timeout.
if [ -n "$1" ] && [ -d "$1" ]; then
  exec 3<> <(:)
  for try in {1..40}; do
    left=
    for i in "${!cg[@]}"; do
      [ -n "${cg[i]}" ] && [ -d "${cg[i]}" ] && { rmdir "${cg[i]}" || left=1; }
    done
    for c in "$1"/*/; do
      [ -d "$c" ] && { rmdir "$c" || left=1; }
    done
    [ -z "$left" ] && break
    read -r -t 0.05 -u 3
  done
  rmdir "$1"
fi 2>/dev/null
exit 0
"#
);

/// A running watchdog and the write end of its stdin (CLOEXEC, so no child
/// ever inherits it; on macOS the host-exit helper holds a copy). Its own guard thread waits for
/// it and reaps it; see [`Watchdog::start`].
struct Watchdog {
  pid: u32,
  stdin: PipeWriter,
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
  /// Called with a watchdog's pid, on its guard thread, when that watchdog
  /// exited (the tracker's `watchdog_exited`, which calls [`Link::exited`]).
  on_exit: fn(u32),
}

impl Link {
  pub(super) const fn new(on_exit: fn(u32)) -> Link {
    Link {
      state: State::NotStarted,
      on_exit,
    }
  }

  /// Starts the watchdog if it never ran, announcing every `tracked` group.
  pub(super) fn ensure_started(&mut self, tracked: &[ProcessGroup]) {
    if let State::NotStarted = self.state {
      self.state = start_with(tracked, self.on_exit);
    }
  }

  /// The running watchdog's pid.
  pub(super) fn pid(&self) -> Option<u32> {
    match &self.state {
      State::Running(watchdog) => Some(watchdog.pid),
      _ => None,
    }
  }

  /// The watchdog with this pid died (its guard thread saw it): if it is the
  /// current one, a new one starts at once and learns every `tracked` group,
  /// so a host that dies later still takes its tasks along.
  pub(super) fn exited(&mut self, pid: u32, tracked: &[ProcessGroup]) {
    if self.pid() == Some(pid) {
      tracing::warn!("taskstream: the orphan watchdog died; starting a new one");
      self.state = start_with(tracked, self.on_exit);
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
      // Its guard thread reaps it (and finds it no longer current).
      tracing::warn!("taskstream: watchdog lost ({error}); starting a new one");
      self.state = start_with(tracked, self.on_exit);
    }
  }
}

fn added_line(group: &ProcessGroup) -> String {
  let start = group.leader_start_time.unwrap_or(0);
  let cgroup = group
    .cgroup
    .as_deref()
    .map(|dir| dir.to_string_lossy().replace('\n', ""))
    .unwrap_or_default();
  format!("+{} {} {} {}\n", group.pgid, start, group.task_tag, cgroup)
}

fn start_with(tracked: &[ProcessGroup], on_exit: fn(u32)) -> State {
  let started = Watchdog::start(on_exit).and_then(|mut watchdog| {
    let lines: String = tracked.iter().map(added_line).collect();
    watchdog
      .stdin
      .write_all(lines.as_bytes())
      .map(|()| watchdog)
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
  /// Starts a watchdog; its guard thread calls `on_exit` with its pid when it exits.
  fn start(on_exit: fn(u32)) -> io::Result<Watchdog> {
    let path = std::env::var_os("PATH");
    let bash = resolve_program("bash", path.as_deref())
      .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "bash not found on PATH"))?;
    let cgroups = super::cgroup::base()
      .map(|b| b.as_os_str().to_owned())
      .unwrap_or_default();
    // Both ends CLOEXEC. The pipe is made here rather than by std so that
    // the macOS helper knows the write end's number.
    let (reader, stdin) = io::pipe()?;
    #[cfg(target_os = "macos")]
    let (host, writer) = (
      std::process::id() as libc::pid_t,
      std::os::fd::AsRawFd::as_raw_fd(&stdin),
    );
    let mut command = Command::new(bash);
    command
      .args(["-c", SCRIPT, "taskstream-watchdog"])
      .arg(cgroups)
      .arg(super::proc_table::WATCHDOG_PS)
      .env_clear()
      .current_dir("/")
      .stdin(reader)
      .stdout(Stdio::null())
      .stderr(Stdio::null());
    // SAFETY: `setup` and the helper's start only make async-signal-safe
    // calls (see pre_exec.rs and watchdog_darwin.rs).
    unsafe {
      std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
        setup()?;
        #[cfg(target_os = "macos")]
        super::watchdog_darwin::start_host_exit_watch(host, writer);
        Ok(())
      });
    }
    let spawned = command.spawn();
    // The read end must not stay open here: a write to a dead watchdog has
    // to fail (EPIPE) for `Link::send` to notice and start a new one.
    drop(command);
    let mut child = spawned?;
    let pid = child.id();
    // The guard notices the watchdog's death at once (an agent's `pkill -9
    // bash`, the OOM killer) and has it replaced, instead of the next spawn
    // finding out, or none: a host SIGKILLed later must still take its tasks.
    let guard = std::thread::Builder::new()
      .name("taskstream-watchdog-guard".into())
      .spawn(move || {
        let _ = child.wait();
        on_exit(pid);
      });
    if let Err(error) = guard {
      tracing::warn!("taskstream: cannot watch the orphan watchdog: {error}");
    }
    Ok(Watchdog { pid, stdin })
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
