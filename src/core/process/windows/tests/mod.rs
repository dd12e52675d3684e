//! Containment on Windows with real processes (run under Wine on the Linux
//! CI machine by `npm run test:windows`, natively by the Windows CI job).
//! `ping -n N 127.0.0.1` is the sleeper: Windows and Wine both have it, and
//! it waits about N - 1 seconds.

use std::io::Read;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{
  OpenProcess, WaitForSingleObject, PROCESS_QUERY_INFORMATION, PROCESS_SYNCHRONIZE,
};

use super::job::STOPPED_EXIT_CODE;
use crate::process::{
  child_env, kill_now, new_task_tag, shell_config, spawn, terminate, tracked_groups, tree_alive,
  EnvOptions, ExitStatusInfo, ProcessGroup, SpawnRequest, SpawnedProcess,
};

/// Kills a test's tree when the test ends, passed or failed, and waits
/// (up to 30 s) until the job has no member left: nothing a test started
/// outlives it (under Wine a member still being created can miss one
/// `TerminateJobObject`, so the job is terminated again while one lives).
pub(super) struct KillOnDrop(pub(super) ProcessGroup);

impl Drop for KillOnDrop {
  fn drop(&mut self) {
    kill_now(&self.0);
    let job = self.0.job();
    wait_until(Duration::from_secs(30), || {
      let empty = job.active_processes().map_or(true, |n| n == 0);
      if !empty {
        let _ = job.terminate();
      }
      empty
    });
  }
}

pub(super) fn cmd() -> PathBuf {
  let shell = shell_config();
  crate::process::resolve_program(&shell.program, std::env::var_os("PATH").as_deref())
    .expect("cmd.exe is found")
}

/// The request `executeBackground` would make for `command`.
pub(super) fn request(command: &str) -> SpawnRequest {
  let shell = shell_config();
  let mut args = shell.args_prefix;
  args.push(command.to_owned());
  let task_tag = new_task_tag();
  SpawnRequest {
    program: cmd(),
    args,
    cwd: std::env::temp_dir(),
    env: child_env(
      std::env::vars_os(),
      &EnvOptions {
        remove: Vec::new(),
        term: "dumb",
        overrides: Vec::new(),
        task_tag: task_tag.clone(),
      },
    ),
    task_tag,
    terminal: None,
    limits: None,
  }
}

pub(super) fn run(command: &str) -> SpawnedProcess {
  spawn(request(command)).expect("spawn")
}

/// Both streams to EOF, on two threads (a full pipe must never block the child).
pub(super) fn read_both(spawned: &mut SpawnedProcess) -> (String, String) {
  let mut stderr = spawned.stderr.try_clone().unwrap();
  let other = std::thread::spawn(move || {
    let mut text = String::new();
    stderr.read_to_string(&mut text).unwrap();
    text
  });
  let mut out = String::new();
  spawned.stdout.read_to_string(&mut out).unwrap();
  (out, other.join().unwrap())
}

pub(super) fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
  let started = Instant::now();
  while started.elapsed() < limit {
    if done() {
      return true;
    }
    std::thread::sleep(Duration::from_millis(25));
  }
  done()
}

/// A handle that can wait for process `pid` (`None` if it is gone already).
pub(super) fn open_process(pid: u32) -> Option<OwnedHandle> {
  // SAFETY: a plain call; a null result means no such process.
  let raw = unsafe { OpenProcess(PROCESS_SYNCHRONIZE | PROCESS_QUERY_INFORMATION, 0, pid) };
  // SAFETY: a new handle we own.
  (!raw.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(raw as _) })
}

pub(super) fn exits_within(process: &OwnedHandle, limit: Duration) -> bool {
  // SAFETY: an open process handle.
  unsafe {
    WaitForSingleObject(process.as_raw_handle() as HANDLE, limit.as_millis() as u32)
      == WAIT_OBJECT_0
  }
}

#[test]
fn windows_spawn_runs_the_command_inside_its_own_job() {
  let mut spawned = run("echo out-line & echo err-line 1>&2");
  let _kill = KillOnDrop(spawned.group.clone());
  assert_eq!(spawned.group.pid, spawned.pid);
  assert!(tracked_groups().contains(&spawned.group));
  let leader = open_process(spawned.pid);
  if let Some(leader) = &leader {
    // Assigned before it was resumed: it can only be a member (or gone).
    let member = spawned
      .group
      .job()
      .contains(leader.as_raw_handle() as HANDLE)
      .unwrap();
    assert!(member || exits_within(leader, Duration::ZERO));
  }
  let (out, err) = read_both(&mut spawned);
  assert_eq!(out.trim_end(), "out-line");
  assert_eq!(err.trim_end(), "err-line");
  let status = spawned.child.wait().unwrap();
  assert_eq!(
    ExitStatusInfo::from(status),
    ExitStatusInfo {
      code: Some(0),
      signal: None
    }
  );
  assert!(wait_until(Duration::from_secs(5), || !tree_alive(
    &spawned.group
  )));
}

#[test]
fn windows_job_members_inherit_it_and_cannot_break_away() {
  // A nested cmd and a ping it starts are members too; a child asking for
  // CREATE_BREAKAWAY_FROM_JOB (`start` does not, so check the count) stays.
  let spawned = run("cmd /d /c ping -n 30 127.0.0.1 >NUL");
  let _kill = KillOnDrop(spawned.group.clone());
  assert!(
    wait_until(Duration::from_secs(10), || spawned
      .group
      .job()
      .active_processes()
      .unwrap()
      >= 3),
    "cmd, the nested cmd and ping are in the job: {:?}",
    spawned.group.job().process_ids()
  );
  assert!(spawned
    .group
    .job()
    .process_ids()
    .unwrap()
    .contains(&spawned.pid));
}

#[test]
fn windows_cancel_kills_grandchildren_through_the_job() {
  // `start /b` detaches a ping from cmd's wait; a nested cmd runs another.
  let mut spawned = run("start /b ping -n 60 127.0.0.1 >NUL & cmd /d /c ping -n 60 127.0.0.1 >NUL");
  let _kill = KillOnDrop(spawned.group.clone());
  let job = spawned.group.job();
  // Listing the job and opening its members are two steps, and a member
  // may exit between them (Wine's `start` is a program of its own that
  // exits once it started its ping): list and open again until four live
  // members are held.
  let mut members: Vec<(u32, OwnedHandle)> = Vec::new();
  assert!(
    wait_until(Duration::from_secs(20), || {
      members = job
        .process_ids()
        .unwrap()
        .into_iter()
        .filter_map(|pid| open_process(pid).map(|h| (pid, h)))
        .filter(|(_, h)| !exits_within(h, Duration::ZERO))
        .collect();
      members.len() >= 4
    }),
    "cmd, two pings and the nested cmd: {} members opened of {:?}",
    members.len(),
    job.process_ids()
  );
  terminate(&spawned.group);
  // Each would otherwise run for a minute.
  for (pid, handle) in &members {
    assert!(
      exits_within(handle, Duration::from_secs(20)),
      "member {pid} survived the stop"
    );
  }
  // Members started while the stop ran are caught by its re-checks.
  assert!(
    wait_until(Duration::from_secs(20), || job.active_processes().unwrap()
      == 0),
    "left alive: {:?}",
    job.process_ids()
  );
  let status = spawned.child.wait().unwrap();
  assert_eq!(status.code(), Some(STOPPED_EXIT_CODE as i32));
  let (out, _) = read_both(&mut spawned);
  assert_eq!(out, "");
}

#[test]
fn windows_exit_codes_map_without_signals() {
  for (command, code) in [
    ("exit 0", 0),
    ("exit 3", 3),
    ("exit 255", 255),
    ("exit -1073741510", -1073741510),
  ] {
    let mut spawned = run(command);
    let _kill = KillOnDrop(spawned.group.clone());
    let _ = read_both(&mut spawned);
    let exit = ExitStatusInfo::from(spawned.child.wait().unwrap());
    assert_eq!(
      exit,
      ExitStatusInfo {
        code: Some(code),
        signal: None
      },
      "{command}"
    );
  }
}

#[test]
fn windows_cmd_sees_the_command_verbatim() {
  let mut spawned = run(r#"echo "two  spaces" ^& "a&b" %TASKSTREAM_TASK_ID:~0,0%done"#);
  let _kill = KillOnDrop(spawned.group.clone());
  let (out, _) = read_both(&mut spawned);
  assert_eq!(out.trim_end(), r#""two  spaces" & "a&b" done"#);
}

#[test]
fn windows_children_get_the_given_environment_and_directory() {
  let mut req = request("echo %TASKSTREAM_TASK_ID%^|%TERM%^|%CD%");
  let dir = std::env::temp_dir();
  req.cwd = dir.clone();
  let tag = req.task_tag.clone();
  let mut spawned = spawn(req).unwrap();
  let _kill = KillOnDrop(spawned.group.clone());
  let (out, _) = read_both(&mut spawned);
  let fields: Vec<&str> = out.trim_end().split('|').collect();
  assert_eq!(fields[..2], [tag.as_str(), "dumb"]);
  let same_dir = |a: &str, b: &std::path::Path| {
    a.trim_end_matches('\\')
      .eq_ignore_ascii_case(b.to_string_lossy().trim_end_matches('\\'))
  };
  assert!(same_dir(fields[2], &dir), "{out:?} vs {dir:?}");
}

#[test]
fn windows_bad_input_is_refused_before_anything_runs() {
  let kind = |req: SpawnRequest| spawn(req).map(|_| ()).unwrap_err();
  let mut nul = request("echo x");
  nul.args.push("a\0b".into());
  assert_eq!(kind(nul).kind(), std::io::ErrorKind::InvalidInput);
  let mut tag = request("echo x");
  tag.task_tag = "bad tag".into();
  assert_eq!(kind(tag).kind(), std::io::ErrorKind::InvalidInput);
  let mut env = request("echo x");
  env.env.push(("A=B".into(), "x".into()));
  assert_eq!(kind(env).kind(), std::io::ErrorKind::InvalidInput);
  let mut terminal = request("echo x");
  terminal.terminal = Some(crate::terminal::TerminalSize { cols: 0, rows: 5 });
  assert_eq!(kind(terminal).kind(), std::io::ErrorKind::InvalidInput);
  let mut missing = request("echo x");
  missing.program = std::env::temp_dir().join("no-such-program-taskstream.exe");
  assert!(spawn(missing).is_err());
  let mut bare = request("echo x");
  bare.program = "no-such-program-taskstream".into();
  assert_eq!(kind(bare).kind(), std::io::ErrorKind::NotFound);
  let mut cwd = request("echo x");
  cwd.cwd = std::env::temp_dir().join("no-such-dir-taskstream");
  assert!(spawn(cwd).is_err());
}

/// The helper of [`job_kill_on_close_kills_members_when_the_owner_dies`]:
/// run as its own process (it is a no-op in a normal test run), it starts a
/// long task, prints the leader's pid and waits to be killed.
#[test]
fn job_owner_helper() {
  if std::env::var_os(HELPER_VAR).is_none() {
    return;
  }
  let spawned = run("ping -n 120 127.0.0.1 >NUL");
  println!("LEADER {}", spawned.pid);
  std::thread::sleep(Duration::from_secs(120));
}

const HELPER_VAR: &str = "TASKSTREAM_JOB_OWNER_HELPER";

#[test]
fn job_kill_on_close_kills_members_when_the_owner_dies() {
  let exe = std::env::current_exe().unwrap();
  let mut command = std::process::Command::new(exe);
  command
    .args([
      "--exact",
      "process::windows::tests::job_owner_helper",
      "--nocapture",
      "--test-threads=1",
    ])
    .env(HELPER_VAR, "1")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null());
  // Under our spawn lock: std's spawn inherits every inheritable handle, and a task spawn of a
  // test running beside this one makes its pipe ends inheritable for a moment.
  let mut helper = crate::process::spawn_serialized(|| command.spawn()).unwrap();
  let mut stdout = helper.stdout.take().unwrap();
  let (tx, rx) = mpsc::channel();
  std::thread::spawn(move || {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while stdout.read(&mut byte).unwrap_or(0) == 1 {
      seen.push(byte[0]);
      // The harness prints `test … ... ` before the helper's own line.
      let text = String::from_utf8_lossy(&seen);
      if let Some(rest) = text.split("LEADER ").nth(1).filter(|r| r.ends_with('\n')) {
        let _ = tx.send(rest.trim().parse::<u32>().unwrap());
        return;
      }
    }
  });
  let pid = rx
    .recv_timeout(Duration::from_secs(60))
    .expect("the helper reports its task");
  let leader = open_process(pid).expect("the task runs");
  assert!(
    !exits_within(&leader, Duration::from_millis(500)),
    "the task runs while its owner lives"
  );
  // The owner dies hard (TerminateProcess: no exit hook, nothing of ours runs).
  helper.kill().unwrap();
  helper.wait().unwrap();
  assert!(
    exits_within(&leader, Duration::from_secs(10)),
    "the kernel killed the job's members when its last handle closed"
  );
}

mod runner {
  use std::sync::mpsc;
  use std::time::Duration;

  use super::{exits_within, open_process, run, KillOnDrop};
  use crate::end::TaskEnd;
  use crate::shell::{
    write_status_sidecar, OutputWriter, ShellOutcome, ShellRegistration, ShellRegistry, ShellRun,
    ShellVerdict, DEFAULT_MAX_OUTPUT_BYTES, MAX_RETAINED_TERMINAL_SHELLS,
  };

  fn temp_dir(label: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("taskstream-win-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
  }

  fn start(
    command: &str,
    path: &std::path::Path,
  ) -> (
    std::sync::Arc<ShellRun>,
    mpsc::Receiver<ShellOutcome>,
    KillOnDrop,
  ) {
    let spawned = run(command);
    let kill = KillOnDrop(spawned.group.clone());
    let writer = OutputWriter::create(path, DEFAULT_MAX_OUTPUT_BYTES).unwrap();
    let (tx, rx) = mpsc::channel();
    let run = ShellRun::start(
      spawned,
      writer,
      Box::new(move |outcome| {
        let _ = tx.send(outcome);
      }),
    )
    .unwrap();
    (run, rx, kill)
  }

  #[test]
  fn windows_shell_run_writes_its_output_file_and_sidecar() {
    let dir = temp_dir("run");
    let path = dir.join("shell-win.output");
    let command = "echo out-line & echo err-line 1>&2 & exit 3";
    let (run, settled, _kill) = start(command, &path);
    let outcome = settled
      .recv_timeout(Duration::from_secs(20))
      .expect("settles");
    assert_eq!(outcome.exit.code, Some(3));
    assert_eq!(
      outcome.verdict(),
      ShellVerdict::Failed("exited with code 3".into())
    );
    let output = std::fs::read_to_string(&path).unwrap();
    assert!(
      output.contains("out-line") && output.contains("err-line"),
      "{output:?}"
    );

    let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, std::process::id());
    registry
      .register(ShellRegistration {
        shell_id: "win".into(),
        command: command.into(),
        cwd: dir.to_string_lossy().into_owned(),
        start_time: 1_700_000_000_000.0,
        output_path: path.to_string_lossy().into_owned(),
        pid: Some(run.pid()),
        todo_work_chain_id: None,
      })
      .unwrap();
    let token = registry.track_run("win");
    registry.finish_run(
      "win",
      token,
      outcome.verdict(),
      outcome.end(),
      1_700_000_001_000.0,
    );
    write_status_sidecar(registry.get("win").unwrap(), std::process::id());
    let sidecar = std::fs::read_to_string(dir.join("shell-win.status")).expect("sidecar");
    let json: serde_json::Value = serde_json::from_str(&sidecar).unwrap();
    assert_eq!(json["status"], "failed");
    assert_eq!(json["error"], "exited with code 3");
    assert_eq!(json["pid"], run.pid());
    assert_eq!(outcome.end(), TaskEnd::exited(Some(3)));
    let _ = std::fs::remove_dir_all(&dir);
  }

  #[test]
  fn windows_shell_run_cancel_is_cancelled_and_kills_the_job() {
    let dir = temp_dir("cancel");
    let path = dir.join("shell-cancel.output");
    let (run, settled, kill) = start(
      "echo started & start /b ping -n 60 127.0.0.1 >NUL & ping -n 60 127.0.0.1 >NUL",
      &path,
    );
    let job = kill.0.job();
    assert!(super::wait_until(Duration::from_secs(10), || job
      .active_processes()
      .unwrap()
      >= 3));
    let members: Vec<_> = job
      .process_ids()
      .unwrap()
      .into_iter()
      .filter_map(open_process)
      .collect();
    run.cancel();
    let outcome = settled
      .recv_timeout(Duration::from_secs(20))
      .expect("settles");
    assert!(outcome.aborted);
    assert_eq!(outcome.verdict(), ShellVerdict::Cancelled);
    for member in &members {
      assert!(exits_within(member, Duration::from_secs(5)));
    }
    assert!(std::fs::read_to_string(&path).unwrap().contains("started"));
    let _ = std::fs::remove_dir_all(&dir);
  }
}

mod conpty;

/// The helper of [`a_listening_process_of_the_tree_is_found_and_no_other`]: run as its own
/// process (a no-op in a normal test run), it listens on a free port, prints it, and waits.
#[test]
fn port_listener_helper() {
  if std::env::var_os(LISTENER_VAR).is_none() {
    return;
  }
  let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
  println!("PORT {}", listener.local_addr().unwrap().port());
  std::thread::sleep(Duration::from_secs(120));
}

const LISTENER_VAR: &str = "TASKSTREAM_PORT_LISTENER_HELPER";

/// `ports` (API.md §6.8): a task whose child listens is found by its port, from the Job
/// Object's processes and the TCP table; a port this test process listens on is not its.
#[test]
fn a_listening_process_of_the_tree_is_found_and_no_other() {
  let ours = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
  let our_port = ours.local_addr().unwrap().port();
  let exe = std::env::current_exe().unwrap();
  let mut req = request("unused");
  req.program = exe;
  req.args = [
    "--exact",
    "process::windows::tests::port_listener_helper",
    "--nocapture",
    "--test-threads=1",
  ]
  .map(String::from)
  .to_vec();
  req
    .env
    .push((LISTENER_VAR.into(), std::ffi::OsString::from("1")));
  let mut spawned = spawn(req).expect("spawn the listener");
  let mut stdout = spawned.stdout.try_clone().unwrap();
  let (tx, rx) = mpsc::channel();
  std::thread::spawn(move || {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while stdout.read(&mut byte).unwrap_or(0) == 1 {
      seen.push(byte[0]);
      let text = String::from_utf8_lossy(&seen);
      if let Some(rest) = text.split("PORT ").nth(1).filter(|r| r.ends_with('\n')) {
        let _ = tx.send(rest.trim().parse::<u16>().unwrap());
        return;
      }
    }
  });
  let port = rx
    .recv_timeout(Duration::from_secs(60))
    .expect("the helper reports its port");
  let mut found = Vec::new();
  let listed = wait_until(Duration::from_secs(10), || {
    found = crate::process::listening_ports(&spawned.group)
      .expect("ports are supported on Windows")
      .expect("the TCP table is read");
    found.contains(&port)
  });
  kill_now(&spawned.group);
  let _ = spawned.child.wait();
  assert!(listed, "{port} in {found:?}");
  assert!(!found.contains(&our_port), "{our_port} in {found:?}");
}
