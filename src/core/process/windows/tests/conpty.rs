//! Terminal mode on Windows (ConPTY, conpty.rs) with real processes: under
//! Wine by `npm run test:windows`, natively by the Windows CI job.
//!
//! The commands read and write the console device `CON` explicitly. On
//! Windows a program attached to a pseudo console with null standard
//! handles gets the console's; Wine 8 leaves them null (its console
//! connection does not fill them in), so `echo x` alone would print nothing
//! there. `CON` is the attached console on both.

use std::fs::File;
use std::io::Read;
use std::sync::mpsc;
use std::time::Duration;

use super::{request, wait_until, KillOnDrop};
use crate::process::{spawn, tree_alive, ExitStatusInfo, SpawnRequest, SpawnedProcess};
use crate::terminal::{TerminalError, TerminalSize};

fn terminal_request(command: &str) -> SpawnRequest {
  let mut request = request(command);
  request.terminal = Some(TerminalSize { cols: 80, rows: 25 });
  request
}

/// Reads `stream` to EOF on a thread; `None` if EOF does not come within `limit`.
fn read_to_eof(stream: &File, limit: Duration) -> Option<String> {
  let mut stream = stream.try_clone().unwrap();
  let (sent, received) = mpsc::channel();
  std::thread::spawn(move || {
    let mut bytes = Vec::new();
    let result = stream.read_to_end(&mut bytes).map(|_| bytes);
    let _ = sent.send(result);
  });
  let bytes = received
    .recv_timeout(limit)
    .ok()?
    .expect("the read fails only at EOF");
  Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Collects `stream` on a thread; the receiver gets every read.
fn reader(stream: &File) -> mpsc::Receiver<Vec<u8>> {
  let mut stream = stream.try_clone().unwrap();
  let (sent, received) = mpsc::channel();
  std::thread::spawn(move || {
    let mut buffer = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buffer) {
      if n == 0 || sent.send(buffer[..n].to_vec()).is_err() {
        break;
      }
    }
  });
  received
}

/// What `received` has given within `limit`, stopping once it contains `needle`.
fn read_until(received: &mpsc::Receiver<Vec<u8>>, needle: &str, limit: Duration) -> String {
  let started = std::time::Instant::now();
  let mut text = Vec::new();
  while !String::from_utf8_lossy(&text).contains(needle) {
    let Some(left) = limit.checked_sub(started.elapsed()) else {
      break;
    };
    match received.recv_timeout(left) {
      Ok(bytes) => text.extend(bytes),
      Err(_) => break,
    }
  }
  String::from_utf8_lossy(&text).into_owned()
}

/// Whether the reader behind `received` reaches EOF within `limit` (reads before it are skipped).
fn reaches_eof(received: &mpsc::Receiver<Vec<u8>>, limit: Duration) -> bool {
  let started = std::time::Instant::now();
  loop {
    let Some(left) = limit.checked_sub(started.elapsed()) else {
      return false;
    };
    match received.recv_timeout(left) {
      Ok(_) => {}
      Err(mpsc::RecvTimeoutError::Disconnected) => return true,
      Err(mpsc::RecvTimeoutError::Timeout) => return false,
    }
  }
}

fn spawn_terminal(command: &str) -> SpawnedProcess {
  spawn(terminal_request(command)).expect("terminal spawn")
}

#[test]
fn windows_terminal_output_comes_from_the_console_and_ends_at_eof() {
  let mut spawned = spawn_terminal("echo hello from the console> CON & exit /b 4");
  let _kill = KillOnDrop(spawned.group.clone());
  let terminal = spawned.terminal.clone().expect("a terminal handle");
  assert_eq!(terminal.size(), TerminalSize { cols: 80, rows: 25 });
  // The console's rendering, VT sequences and all; EOF once the job emptied
  // and the pseudo console was closed.
  let out = read_to_eof(&spawned.stdout, Duration::from_secs(30)).expect("EOF on the output");
  assert!(out.contains("hello from the console"), "{out:?}");
  assert!(out.contains('\u{1b}'), "a VT rendering: {out:?}");
  // stderr is a pipe already at EOF (both streams are the console's).
  assert_eq!(
    read_to_eof(&spawned.stderr, Duration::from_secs(5)).as_deref(),
    Some("")
  );
  let status = spawned.child.wait().unwrap();
  assert_eq!(
    ExitStatusInfo::from(status),
    ExitStatusInfo {
      code: Some(4),
      signal: None
    }
  );
  // The console closed with the job: input and size are over.
  assert!(terminal.is_ended());
  assert!(matches!(
    terminal.write(b"late\r"),
    Err(TerminalError::Ended)
  ));
  assert!(matches!(
    terminal.resize(TerminalSize { cols: 90, rows: 30 }),
    Err(TerminalError::Ended)
  ));
}

#[test]
fn windows_terminal_write_answers_a_prompt() {
  // `call echo %name%`: expanded after `set /p` read the line.
  let spawned = spawn_terminal("echo ready> CON & set /p name=<CON & call echo got %name%> CON");
  let _kill = KillOnDrop(spawned.group.clone());
  let terminal = spawned.terminal.clone().unwrap();
  let received = reader(&spawned.stdout);
  let start = read_until(&received, "ready", Duration::from_secs(30));
  assert!(start.contains("ready"), "{start:?}");
  terminal.write(b"alice\r").unwrap();
  let answer = read_until(&received, "got alice", Duration::from_secs(30));
  assert!(answer.contains("got alice"), "{answer:?}");
}

#[test]
fn windows_terminal_resize_reaches_the_console() {
  // `mode con` prints the console's size; after resize() the new one.
  let spawned =
    spawn_terminal("ping -n 3 127.0.0.1 > NUL & mode con > CON & ping -n 30 127.0.0.1 > NUL");
  let _kill = KillOnDrop(spawned.group.clone());
  let terminal = spawned.terminal.clone().unwrap();
  let received = reader(&spawned.stdout);
  terminal
    .resize(TerminalSize {
      cols: 100,
      rows: 30,
    })
    .unwrap();
  assert_eq!(
    terminal.size(),
    TerminalSize {
      cols: 100,
      rows: 30
    }
  );
  let text = read_until(&received, "100", Duration::from_secs(30));
  assert!(text.contains("100"), "{text:?}");
}

#[test]
fn windows_terminal_close_ends_input_and_the_console() {
  let spawned = spawn_terminal("ping -n 30 127.0.0.1 > NUL");
  let _kill = KillOnDrop(spawned.group.clone());
  let terminal = spawned.terminal.clone().unwrap();
  // Read before closing: before Windows 11 24H2, ClosePseudoConsole waits for the host, which
  // may wait for room in the output pipe.
  let received = reader(&spawned.stdout);
  terminal.write(b"typed ahead\r").unwrap();
  terminal.close();
  assert!(terminal.is_ended());
  assert!(matches!(terminal.write(b"x"), Err(TerminalError::Ended)));
  assert!(matches!(
    terminal.resize(TerminalSize { cols: 90, rows: 30 }),
    Err(TerminalError::Ended)
  ));
  // The console's host exited: its output reaches EOF (on Windows the
  // processes attached to it are ended too, as a Unix terminal's hang-up).
  assert!(reaches_eof(&received, Duration::from_secs(30)));
}

#[test]
fn windows_terminal_input_queue_is_bounded() {
  // Nothing reads the console's input: the queue fills and a write past the
  // limit is refused whole, without blocking.
  let spawned = spawn_terminal("ping -n 30 127.0.0.1 > NUL");
  let _kill = KillOnDrop(spawned.group.clone());
  let terminal = spawned.terminal.clone().unwrap();
  let _output = reader(&spawned.stdout);
  let limit = crate::terminal::INPUT_QUEUE_LIMIT;
  let too_much = vec![b'x'; limit + 1];
  match terminal.write(&too_much) {
    Err(TerminalError::QueueFull { queued, limit: l }) => {
      assert_eq!(l, limit);
      assert!(queued <= limit);
    }
    other => panic!("expected QueueFull, got {other:?}"),
  }
  terminal.write(b"fits\r").unwrap();
}

#[test]
fn windows_terminal_cancel_kills_the_job_and_ends_the_output() {
  let spawned = spawn_terminal(
    "echo started> CON & start /b ping -n 60 127.0.0.1 > NUL & ping -n 60 127.0.0.1 > NUL",
  );
  let _kill = KillOnDrop(spawned.group.clone());
  let received = reader(&spawned.stdout);
  let start = read_until(&received, "started", Duration::from_secs(30));
  assert!(start.contains("started"), "{start:?}");
  assert!(wait_until(Duration::from_secs(10), || spawned
    .group
    .job()
    .active_processes()
    .unwrap()
    >= 3));
  crate::process::kill_now(&spawned.group);
  // Under Wine a `TerminateJobObject` can miss a member still being created
  // (`start /b`), after kill_now's re-checks have run; a task that settles
  // kills what is left of its tree again, so the test does the same while it
  // waits (a kill that never works still fails it).
  let mut last_kill = std::time::Instant::now();
  assert!(wait_until(Duration::from_secs(30), || {
    if !tree_alive(&spawned.group) {
      return true;
    }
    if last_kill.elapsed() >= Duration::from_secs(3) {
      crate::process::kill_now(&spawned.group);
      last_kill = std::time::Instant::now();
    }
    false
  }));
  // The job emptied, so the console was closed: the output reaches EOF.
  let ended = reaches_eof(&received, Duration::from_secs(15));
  assert!(ended, "the output reached EOF after the cancel");
  assert!(spawned.terminal.as_ref().unwrap().is_ended());
}
