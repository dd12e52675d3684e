//! Host-death tests: this test binary runs itself as a "host" child that
//! spawns through this module, then dies or calls `kill_all_sync`.

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::kill;
use nix::unistd::Pid;

use super::super::test_support::*;
use super::super::*;

/// Set in a host child's environment: run the host half of the named test.
const HOST_ENV: &str = "TASKSTREAM_TEST_HOST";

fn in_host_mode() -> bool {
  std::env::var_os(HOST_ENV).is_some()
}

/// A host child running one test of this binary; SIGKILLed when dropped.
struct Host {
  child: Child,
  lines: Lines<BufReader<ChildStdout>>,
}

impl Host {
  fn start(test: &str) -> Host {
    let module = module_path!().split_once("::").expect("crate::module").1;
    let test = format!("{module}::{test}");
    let args = ["--exact", test.as_str(), "--nocapture", "--test-threads=1"];
    // `/proc/self/exe` is this very binary even if a rebuild replaced the file. Under qemu-user
    // (the arm64 tests), which cannot exec an arm64 binary directly, the binary is run through
    // the program named by TASKSTREAM_TEST_REEXEC_WRAPPER (qemu-aarch64) instead.
    let mut command = match std::env::var_os("TASKSTREAM_TEST_REEXEC_WRAPPER") {
      Some(wrapper) => {
        let mut command = Command::new(wrapper);
        command.arg(std::env::current_exe().expect("current_exe"));
        command
      }
      None => Command::new("/proc/self/exe"),
    };
    let mut child = command
      .args(args)
      .env(HOST_ENV, "1")
      .stdin(Stdio::null())
      .stdout(Stdio::piped())
      .stderr(Stdio::null())
      .spawn()
      .expect("start the host");
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    Host { child, lines }
  }

  /// Reads until a line containing `key` (libtest may print `test … ` before
  /// it on the same line); returns what follows it.
  fn expect_line(&mut self, key: &str) -> String {
    for line in self.lines.by_ref() {
      if let Some((_, rest)) = line.expect("host output").split_once(key) {
        return rest.trim().to_string();
      }
    }
    panic!("the host ended before printing {key}");
  }

  fn expect_pids(&mut self) -> Vec<(u32, u64)> {
    let line = self.expect_line("PIDS");
    line
      .split(' ')
      .map(|pair| {
        let (pid, start) = pair.split_once(':').unwrap();
        (pid.parse().unwrap(), start.parse().unwrap())
      })
      .collect()
  }
}

impl Drop for Host {
  fn drop(&mut self) {
    let _ = self.child.kill();
    let _ = self.child.wait();
  }
}

/// Host half: spawns `script`, waits for `sleepers` tagged sleeps, and prints
/// `PIDS pid:start …` (leader first).
fn host_spawn(script: &str, sleepers: usize) -> (SpawnedProcess, Vec<(u32, u64)>) {
  let p = spawn_script(script);
  let mut pids = vec![(p.pid, p.group.leader_start_time.unwrap())];
  pids.extend(ids(&wait_for_sleepers(&p.group.task_tag, sleepers)));
  (p, pids)
}

fn print_pids(pids: &[(u32, u64)]) {
  let text: Vec<String> = pids
    .iter()
    .map(|(pid, start)| format!("{pid}:{start}"))
    .collect();
  println!("PIDS {}", text.join(" "));
}

/// Kills survivors (checked by start time) so a failing test leaks nothing.
fn sweep(pids: &[(u32, u64)]) {
  for &(pid, start) in pids {
    if proc_table::is_running(pid, start) {
      let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
  }
}

/// CONTRACT.md §4 item 6: a SIGKILLed host runs no code, yet its children die
/// through the watchdog: the leader and the group member by their group, the
/// `setsid` grandchild by its tag. (`posix_spawn` sets no `PR_SET_PDEATHSIG`:
/// the watchdog alone must do it.)
#[test]
fn children_die_when_the_host_is_sigkilled() {
  if in_host_mode() {
    let (_p, pids) = host_spawn("sleep 30 & setsid sleep 30 & wait", 2);
    print_pids(&pids);
    std::thread::sleep(Duration::from_secs(30));
    return;
  }
  let _serial = serial();
  let mut host = Host::start("children_die_when_the_host_is_sigkilled");
  let pids = host.expect_pids();
  host.child.kill().unwrap();
  host.child.wait().unwrap();
  let dead = wait_until(Duration::from_secs(10), || all_dead(&pids));
  sweep(&pids);
  assert!(dead, "survivors of the host: {pids:?}");
}

/// The same for a terminal task (API.md §6.5): its session has a
/// controlling terminal, and the host's death must still end it (the
/// watchdog kills the group; the terminal hangs up with the host).
#[test]
fn terminal_children_die_when_the_host_is_sigkilled() {
  if in_host_mode() {
    let req = SpawnRequest {
      terminal: Some(crate::terminal::TerminalSize::DEFAULT),
      ..request("trap '' HUP; sleep 30 & setsid sleep 30 & wait")
    };
    let p = spawn(req).unwrap();
    let mut pids = vec![(p.pid, p.group.leader_start_time.unwrap())];
    pids.extend(ids(&wait_for_sleepers(&p.group.task_tag, 2)));
    print_pids(&pids);
    std::thread::sleep(Duration::from_secs(30));
    return;
  }
  let _serial = serial();
  let mut host = Host::start("terminal_children_die_when_the_host_is_sigkilled");
  let pids = host.expect_pids();
  host.child.kill().unwrap();
  host.child.wait().unwrap();
  let dead = wait_until(Duration::from_secs(10), || all_dead(&pids));
  sweep(&pids);
  assert!(dead, "survivors of the host: {pids:?}");
}

/// CONTRACT.md §4 item 4: `kill_all_sync` kills every tracked tree while the
/// host is still alive (so neither the watchdog nor PDEATHSIG is involved).
#[test]
fn kill_all_sync_kills_every_tracked_tree() {
  if in_host_mode() {
    let (_a, mut pids) = host_spawn("sleep 30", 1);
    let (_b, more) = host_spawn("sleep 30 & ( setsid sleep 30 & ); wait", 2);
    pids.extend(more);
    print_pids(&pids);
    kill_all_sync();
    println!("KILLED");
    std::thread::sleep(Duration::from_secs(30));
    return;
  }
  let _serial = serial();
  let mut host = Host::start("kill_all_sync_kills_every_tracked_tree");
  let pids = host.expect_pids();
  host.expect_line("KILLED");
  let dead = wait_until(Duration::from_secs(10), || all_dead(&pids));
  let host_alive = host.child.try_wait().unwrap().is_none();
  sweep(&pids);
  assert!(dead, "survivors of kill_all_sync: {pids:?}");
  assert!(host_alive, "the host must still be running");
}

/// The watchdog script alone: a wrong start time or a withdrawn group spares
/// the process; the right registration kills it.
#[test]
fn watchdog_script_checks_start_times() {
  let _serial = serial();
  let mut p = spawn_script("sleep 30");
  let _kill = KillOnDrop(p.group.clone());
  let sleepers = ids(&wait_for_sleepers(&p.group.task_tag, 1));
  let (pgid, start) = (p.pid, p.group.leader_start_time.unwrap());
  let other = new_task_tag();
  run_watchdog_script(&format!("+{pgid} {} {other}\n", start + 1));
  run_watchdog_script(&format!("+{pgid} {start} {other}\n-{pgid} {start}\n"));
  assert!(
    !all_dead(&sleepers),
    "the watchdog killed an unregistered group"
  );
  assert_eq!(p.child.try_wait().unwrap(), None);
  run_watchdog_script(&format!("+{pgid} {start} {other}\n"));
  let status = ExitStatusInfo::from(p.child.wait().unwrap());
  assert_eq!(status.signal, Some(libc::SIGKILL));
}

/// The macOS helper's host-gone line ends the watchdog's reading as EOF
/// does, while the pipe stays open (a write end held elsewhere): the
/// registered group dies all the same.
#[test]
fn watchdog_script_stops_at_the_host_gone_line() {
  use std::io::Write;
  let _serial = serial();
  let mut p = spawn_script("sleep 30");
  let _kill = KillOnDrop(p.group.clone());
  let (pgid, start) = (p.pid, p.group.leader_start_time.unwrap());
  let mut watchdog = Command::new(bash())
    .args(["-c", super::super::watchdog::SCRIPT, "taskstream-watchdog"])
    .env_clear()
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
  let mut stdin = watchdog.stdin.take().unwrap();
  // A line left half written by a dying host, then the helper's line.
  let input = format!("+{pgid} {start} {}\n+12", p.group.task_tag);
  stdin.write_all(input.as_bytes()).unwrap();
  stdin
    .write_all(super::super::watchdog::HOST_GONE_LINE)
    .unwrap();
  let status = ExitStatusInfo::from(p.child.wait().unwrap());
  assert_eq!(status.signal, Some(libc::SIGKILL));
  assert!(wait_until(Duration::from_secs(5), || watchdog
    .try_wait()
    .unwrap()
    .is_some()));
  drop(stdin);
}

fn run_watchdog_script(input: &str) {
  use std::io::Write;
  let mut watchdog = Command::new(bash())
    .args(["-c", super::super::watchdog::SCRIPT, "taskstream-watchdog"])
    .env_clear()
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
  watchdog
    .stdin
    .take()
    .unwrap()
    .write_all(input.as_bytes())
    .unwrap();
  assert!(watchdog.wait().unwrap().success());
}
