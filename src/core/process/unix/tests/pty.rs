//! Terminal mode on real processes: the child's terminal, its size and
//! resizes, input through `TerminalHandle::write` and its errors, the
//! session and controlling terminal, kills, and descriptor hygiene. Each
//! test runs through `spawn` (`posix_spawn` with `addopen` on Linux with
//! glibc ≥ 2.34) and through the fork path (`TIOCSCTTY`), which must agree.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::super::spawn::spawn_forked;
use super::super::test_support::*;
use super::super::*;
use crate::terminal::{Screen, TerminalError, TerminalSize, INPUT_QUEUE_LIMIT};

type Spawner = fn(SpawnRequest) -> io::Result<SpawnedProcess>;

const SPAWNERS: [(&str, Spawner); 2] = [("spawn", spawn), ("fork path", spawn_forked)];

fn terminal_request(script: &str, size: TerminalSize) -> SpawnRequest {
  SpawnRequest {
    terminal: Some(size),
    ..request(script)
  }
}

/// Reads the terminal (non-blocking) for at most `timeout`, until EOF (its
/// `EIO`) or until `done` holds for what was read; returns it all.
fn read_terminal_until(
  file: &File,
  timeout: Duration,
  mut done: impl FnMut(&str) -> bool,
) -> String {
  let deadline = Instant::now() + timeout;
  let mut bytes = Vec::new();
  let mut buffer = [0u8; 4096];
  loop {
    if done(&String::from_utf8_lossy(&bytes)) {
      break;
    }
    match (&*file).read(&mut buffer) {
      Ok(0) => break,
      Ok(n) => bytes.extend_from_slice(&buffer[..n]),
      Err(e) if e.raw_os_error() == Some(libc::EIO) => break,
      Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
      Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
          break;
        }
        let mut pollfd = libc::pollfd {
          fd: file.as_raw_fd(),
          events: libc::POLLIN,
          revents: 0,
        };
        let ms = left.as_millis().min(100) as libc::c_int;
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pollfd, 1, ms) };
      }
      Err(e) => panic!("reading the terminal: {e}"),
    }
  }
  String::from_utf8_lossy(&bytes).into_owned()
}

/// Everything until EOF (at most 10 s).
fn read_terminal(file: &File) -> String {
  read_terminal_until(file, Duration::from_secs(10), |_| false)
}

#[test]
fn only_a_terminal_task_has_a_terminal() {
  let _serial = serial();
  let script = "test -t 0 && test -t 1 && test -t 2 && echo yes || echo no";
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(terminal_request(script, TerminalSize::DEFAULT)).unwrap();
    assert!(p.terminal.is_some(), "{name}");
    // ONLCR: the terminal writes `\n` as `\r\n`.
    assert_eq!(read_terminal(&p.stdout), "yes\r\n", "{name}");
    // stderr is a pipe already at EOF.
    assert_eq!(read_all(&p.stderr), "", "{name}");
    assert!(p.child.wait().unwrap().success());

    let mut p = spawner(request(script)).unwrap();
    assert!(p.terminal.is_none(), "{name}");
    assert_eq!(read_all(&p.stdout), "no\n", "{name}");
    assert!(p.child.wait().unwrap().success());
  }
}

#[test]
fn stty_size_is_the_requested_size() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(terminal_request("stty size", TerminalSize::DEFAULT)).unwrap();
    assert_eq!(read_terminal(&p.stdout), "40 120\r\n", "{name}");
    p.child.wait().unwrap();
    assert_eq!(p.terminal.as_ref().unwrap().size(), TerminalSize::DEFAULT);

    let size = TerminalSize { cols: 33, rows: 7 };
    let mut p = spawner(terminal_request("stty size", size)).unwrap();
    assert_eq!(read_terminal(&p.stdout), "7 33\r\n", "{name}");
    p.child.wait().unwrap();
  }
}

#[test]
fn a_resize_reaches_the_program_with_sigwinch() {
  let _serial = serial();
  // No command substitution after the trap is set: bash 5.2 ran a WINCH trap
  // that arrived during `$(seq 100)` with the substitution's parser state and
  // failed with "unexpected EOF while looking for matching `)'" (seen once in
  // CI). Arithmetic expansion does not go through the parser.
  let script = "trap 'stty size; exit 0' WINCH; echo ready; i=0; while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; echo timeout";
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(terminal_request(script, TerminalSize::DEFAULT)).unwrap();
    let _kill = KillOnDrop(p.group.clone());
    let ready = read_terminal_until(&p.stdout, Duration::from_secs(5), |s| {
      s.contains("ready\r\n")
    });
    assert!(ready.contains("ready"), "{name}: {ready:?}");
    let size = TerminalSize { cols: 90, rows: 20 };
    let terminal = p.terminal.as_ref().unwrap();
    terminal.resize(size).unwrap();
    assert_eq!(terminal.size(), size);
    let rest = read_terminal(&p.stdout);
    assert_eq!(rest, "20 90\r\n", "{name}");
    let zero = TerminalSize { cols: 0, rows: 20 };
    assert!(
      matches!(terminal.resize(zero), Err(TerminalError::Io(_))),
      "{name}"
    );
    assert_eq!(terminal.size(), size);
    assert!(p.child.wait().unwrap().success(), "{name}");
  }
}

#[test]
fn write_answers_a_prompt_and_the_screen_shows_it() {
  let _serial = serial();
  let script = r#"read -p 'name? ' x; echo "hi $x""#;
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(terminal_request(script, TerminalSize::DEFAULT)).unwrap();
    let _kill = KillOnDrop(p.group.clone());
    let mut screen = Screen::new(TerminalSize::DEFAULT, 0);
    let prompt = read_terminal_until(&p.stdout, Duration::from_secs(5), |s| s.contains("name? "));
    assert_eq!(prompt, "name? ", "{name}");
    screen.feed(prompt.as_bytes(), 1);
    let terminal = p.terminal.as_ref().unwrap();
    terminal.write("bob ✓\r".as_bytes()).unwrap();
    let rest = read_terminal(&p.stdout);
    // The terminal echoes the answer, then the program's line.
    assert_eq!(rest, "bob ✓\r\nhi bob ✓\r\n", "{name}");
    screen.feed(rest.as_bytes(), 100);
    let snapshot = screen.snapshot();
    assert_eq!(snapshot.text, "name? bob ✓\nhi bob ✓", "{name}");
    assert_eq!((snapshot.cursor.row, snapshot.cursor.col), (2, 0));
    assert!(p.child.wait().unwrap().success());
    assert_eq!(terminal.queued(), 0);
  }
}

#[test]
fn the_child_leads_a_session_with_the_terminal_as_controlling_terminal() {
  let _serial = serial();
  // Fields 5–8 of /proc/<pid>/stat: pgrp, session, tty_nr, tpgid (the
  // terminal's foreground group); `tty` names the terminal; /dev/tty opens
  // only with a controlling terminal. Under dash too: bash makes its
  // terminal its controlling terminal by itself, dash does not, so only
  // dash shows that the spawn did it.
  let script = "read -r _ _ _ _ pgid sid tty fg _ < /proc/$$/stat; echo $pgid $sid $tty $fg; tty; \
                (exec 3</dev/tty) 2>/dev/null && echo ctty || echo none";
  let path = std::env::var_os("PATH");
  let dash = resolve_program("dash", path.as_deref()).expect("dash on PATH");
  for (name, spawner) in SPAWNERS {
    for shell in [bash(), dash.clone()] {
      let request = SpawnRequest {
        program: shell.clone(),
        ..terminal_request(script, TerminalSize::DEFAULT)
      };
      let mut p = spawner(request).unwrap();
      let output = read_terminal(&p.stdout);
      let lines: Vec<&str> = output.lines().collect();
      let context = format!("{name}, {}: {output:?}", shell.display());
      assert_eq!(lines.len(), 3, "{context}");
      let ids: Vec<i64> = lines[0].split(' ').map(|f| f.parse().unwrap()).collect();
      let pid = i64::from(p.pid);
      assert_eq!(
        (ids[0], ids[1]),
        (pid, pid),
        "{context}: own session and group"
      );
      assert_ne!(ids[2], 0, "{context}: a controlling terminal");
      assert_eq!(ids[3], pid, "{context}: the foreground group");
      assert!(lines[1].starts_with("/dev/pts/"), "{context}");
      assert_eq!(lines[2], "ctty", "{context}");
      assert!(p.child.wait().unwrap().success());
      // Tracked like any task.
      assert_eq!(p.group.pgid, p.pid);
      assert!(!tree_alive(&p.group));
      assert!(forget_if_dead(&p.group));
    }
  }
}

#[test]
fn killing_the_group_ends_the_terminal_task_and_its_descendants() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    for kill in ["kill_now", "terminate"] {
      let script = "sleep 30 & ( setsid sleep 30 & ); sleep 30; wait";
      let mut p = spawner(terminal_request(script, TerminalSize::DEFAULT)).unwrap();
      let _kill = KillOnDrop(p.group.clone());
      let sleepers = ids(&wait_for_sleepers(&p.group.task_tag, 3));
      if kill == "kill_now" {
        kill_now(&p.group);
      } else {
        terminate(&p.group);
      }
      assert!(
        wait_until(Duration::from_secs(10), || all_dead(&sleepers)),
        "{name} {kill}: {sleepers:?}"
      );
      let status = ExitStatusInfo::from(p.child.wait().unwrap());
      assert!(status.signal.is_some(), "{name} {kill}: {status:?}");
      // The terminal hung up: reading it ends (EIO), writing fails.
      read_terminal(&p.stdout);
      let terminal = p.terminal.as_ref().unwrap();
      assert!(
        matches!(terminal.write(b"x"), Err(TerminalError::Ended)),
        "{name} {kill}"
      );
      assert!(!tree_alive(&p.group));
    }
  }
}

#[test]
fn write_errors_queue_full_and_ended() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    // A program that reads nothing, on a terminal whose line discipline
    // buffers only its 4 KiB: the rest of a large write waits in our queue.
    let script = "stty -icanon -echo min 1; echo ready; exec sleep 30";
    let mut p = spawner(terminal_request(script, TerminalSize::DEFAULT)).unwrap();
    let _kill = KillOnDrop(p.group.clone());
    read_terminal_until(&p.stdout, Duration::from_secs(5), |s| s.contains("ready"));
    let terminal = p.terminal.clone().unwrap();
    terminal.write(&vec![b'a'; INPUT_QUEUE_LIMIT]).unwrap();
    // Never blocks: the write returned while the program, which reads
    // nothing, still runs (a blocking write of 1 MiB could only return
    // once the program read it or died).
    assert!(p.child.try_wait().unwrap().is_none(), "{name}");
    // The kernel took a few KiB (the line discipline's buffer and the
    // terminal's own), the writer thread holds the rest.
    let queued = terminal.queued();
    assert!(queued > INPUT_QUEUE_LIMIT / 2, "{name}: {queued}");
    let error = terminal.write(&vec![b'b'; INPUT_QUEUE_LIMIT]).unwrap_err();
    let TerminalError::QueueFull { queued: q, limit } = error else {
      panic!("{name}: {error:?}");
    };
    assert!(
      q > INPUT_QUEUE_LIMIT / 2 && q <= queued,
      "{name}: {q} {queued}"
    );
    assert_eq!(limit, INPUT_QUEUE_LIMIT);
    let message = terminal
      .write(&[b'c'; 2 * INPUT_QUEUE_LIMIT])
      .unwrap_err()
      .to_string();
    assert!(message.contains("input queue is full"), "{message}");
    // What fits still goes, behind the rest. (The writer thread may hand
    // the kernel more bytes at any moment, so the queue's length is no
    // measure of the 1000 bytes; the kernel's room is a few KiB, so more
    // than half the limit is still waiting.)
    terminal.write(&[b'd'; 1000]).unwrap();
    assert!(terminal.queued() > INPUT_QUEUE_LIMIT / 2, "{name}");

    // The program dies: the terminal hangs up, the queue is dropped and
    // writes say it ended.
    kill_now(&p.group);
    p.child.wait().unwrap();
    assert!(
      wait_until(Duration::from_secs(10), || terminal.is_ended()),
      "{name}: the writer saw the hang-up"
    );
    assert_eq!(terminal.queued(), 0);
    let error = terminal.write(b"late").unwrap_err();
    assert!(matches!(error, TerminalError::Ended), "{name}");
    assert!(error.to_string().contains("ended"), "{error}");
    assert!(matches!(
      terminal.resize(TerminalSize::DEFAULT),
      Err(TerminalError::Ended)
    ));
  }
}

#[test]
fn close_ends_input_and_the_program_sees_eof_after_the_reader_closes() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let script = "echo ready; while read -r line; do echo got $line; done; echo eof";
    let mut p = spawner(terminal_request(script, TerminalSize::DEFAULT)).unwrap();
    let _kill = KillOnDrop(p.group.clone());
    read_terminal_until(&p.stdout, Duration::from_secs(5), |s| s.contains("ready"));
    let terminal = p.terminal.take().unwrap();
    terminal.write(b"one\n").unwrap();
    let echoed = read_terminal_until(&p.stdout, Duration::from_secs(5), |s| s.contains("got one"));
    assert!(echoed.contains("got one"), "{name}: {echoed:?}");
    // A clone is the same terminal.
    let clone = terminal.clone();
    terminal.close();
    assert!(clone.is_ended());
    assert!(matches!(clone.write(b"two\n"), Err(TerminalError::Ended)));
    // ^D through the line discipline would need a write; closing every
    // master descriptor hangs the terminal up instead: the program gets
    // SIGHUP (bash exits) and nothing is left.
    drop((terminal, clone));
    drop(p.stdout);
    let status = ExitStatusInfo::from(p.child.wait().unwrap());
    assert_eq!(status.signal, Some(libc::SIGHUP), "{name}: {status:?}");
  }
}

/// Dropping every handle is `close`, even while the writer thread holds
/// queued input: the master is released, and with the reader gone the
/// terminal hangs up.
#[test]
fn dropping_the_handles_releases_the_terminal() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let script = "stty -icanon -echo min 1; echo ready; exec sleep 30";
    let mut p = spawner(terminal_request(script, TerminalSize::DEFAULT)).unwrap();
    let _kill = KillOnDrop(p.group.clone());
    read_terminal_until(&p.stdout, Duration::from_secs(5), |s| s.contains("ready"));
    let terminal = p.terminal.take().unwrap();
    terminal.write(&vec![b'a'; INPUT_QUEUE_LIMIT]).unwrap();
    assert!(terminal.queued() > 0, "{name}");
    drop(terminal);
    drop(p.stdout);
    // The hang-up ends `sleep 30` by SIGHUP: a master held open would let
    // it run to its normal exit instead.
    let status = ExitStatusInfo::from(p.child.wait().unwrap());
    assert_eq!(status.signal, Some(libc::SIGHUP), "{name}: {status:?}");
  }
}

#[test]
fn an_exited_program_ends_the_terminal_for_writes() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(terminal_request("exit 0", TerminalSize::DEFAULT)).unwrap();
    assert_eq!(read_terminal(&p.stdout), "");
    p.child.wait().unwrap();
    let terminal = p.terminal.as_ref().unwrap();
    assert!(
      matches!(terminal.write(b"x"), Err(TerminalError::Ended)),
      "{name}"
    );
    assert!(terminal.is_ended());
  }
}

#[test]
fn terminal_spawn_failures_track_nothing_and_leak_nothing() {
  let _serial = serial();
  let before = terminal_fds();
  for (name, spawner) in SPAWNERS {
    let mut missing_cwd = terminal_request("exit 0", TerminalSize::DEFAULT);
    missing_cwd.cwd = "/nonexistent/taskstream-test-dir".into();
    let tag = missing_cwd.task_tag.clone();
    let error = spawner(missing_cwd).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound, "{name}: {error}");
    assert!(tracked_groups().iter().all(|g| g.task_tag != tag));
    let mut missing_program = terminal_request("exit 0", TerminalSize::DEFAULT);
    missing_program.program = "/nonexistent/taskstream-bash".into();
    assert_eq!(
      spawner(missing_program).unwrap_err().kind(),
      io::ErrorKind::NotFound
    );
  }
  let zero = terminal_request("exit 0", TerminalSize { cols: 0, rows: 10 });
  assert_eq!(spawn(zero).unwrap_err().kind(), io::ErrorKind::InvalidInput);
  assert_eq!(terminal_fds(), before);
}

/// This process's descriptors on terminals: (fd, target, close-on-exec).
fn terminal_fds() -> Vec<(u32, String, bool)> {
  let mut fds: Vec<(u32, String, bool)> = open_fds()
    .into_iter()
    .filter(|(_, target)| target == "/dev/ptmx" || target.starts_with("/dev/pts/"))
    .map(|(fd, target)| (fd, target, cloexec(fd)))
    .collect();
  fds.sort();
  fds
}

fn cloexec(fd: u32) -> bool {
  // SAFETY: F_GETFD on a descriptor number; a closed one gives -1.
  let flags = unsafe { libc::fcntl(fd as libc::c_int, libc::F_GETFD) };
  flags != -1 && flags & libc::FD_CLOEXEC != 0
}

/// The parent keeps no slave (the terminal would never hang up), every
/// master copy is close-on-exec (no other child inherits it), and nothing
/// stays open once the task is done with.
#[test]
fn terminal_descriptors_are_close_on_exec_and_none_leak() {
  let _serial = serial();
  let before = terminal_fds();
  for (name, spawner) in SPAWNERS {
    for _ in 0..3 {
      let mut p = spawner(terminal_request(
        "echo hi; exec sleep 30",
        TerminalSize::DEFAULT,
      ))
      .unwrap();
      let _kill = KillOnDrop(p.group.clone());
      read_terminal_until(&p.stdout, Duration::from_secs(5), |s| s.contains("hi"));
      let now: Vec<_> = terminal_fds()
        .into_iter()
        .filter(|fd| !before.contains(fd))
        .collect();
      assert!(
        now.iter().all(|(_, target, _)| target == "/dev/ptmx"),
        "{name}: a slave is open in the parent: {now:?}"
      );
      // The reader and the handle.
      assert_eq!(now.len(), 2, "{name}: {now:?}");
      assert!(
        now.iter().all(|(_, _, cloexec)| *cloexec),
        "{name}: {now:?}"
      );
      assert!(cloexec(p.stderr.as_raw_fd() as u32), "{name}");
      // Another child sees none of them.
      let mut other = spawner(request(
        "ls -l /proc/self/fd/ | grep -c -e ptmx -e pts || true",
      ))
      .unwrap();
      assert_eq!(read_all(&other.stdout), "0\n", "{name}");
      other.child.wait().unwrap();
      kill_now(&p.group);
      p.child.wait().unwrap();
    }
  }
  assert_eq!(terminal_fds(), before);
}

/// The reactor reads a terminal like a pipe; its `EIO` is EOF.
#[test]
fn the_reactor_reads_a_terminal_to_eof() {
  use std::sync::mpsc::channel;
  use std::sync::{Arc, Mutex};

  use crate::reactor::{PipeHandler, Reactor};

  /// `Some(Ok(bytes))` for data, `Some(Err(failed))` at the close.
  type Read = Option<Result<Vec<u8>, bool>>;
  struct Collect(Mutex<std::sync::mpsc::Sender<Read>>);
  impl PipeHandler for Collect {
    fn data(&self, _tag: u8, bytes: &[u8]) {
      let _ = self.0.lock().unwrap().send(Some(Ok(bytes.to_vec())));
    }
    fn closed(&self, _tag: u8, error: Option<io::Error>) {
      let _ = self.0.lock().unwrap().send(Some(Err(error.is_some())));
    }
  }

  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(terminal_request(
      "printf 'a\\nb\\n'; sleep 0.1; printf c",
      TerminalSize::DEFAULT,
    ))
    .unwrap();
    let reactor = Reactor::pick().unwrap();
    let (tx, rx) = channel();
    let handler = Arc::new(Collect(Mutex::new(tx)));
    reactor.watch_pipe(p.stdout, 1, handler.clone());
    reactor.watch_pipe(p.stderr, 2, handler);
    let mut output = Vec::new();
    let mut closed = Vec::new();
    while closed.len() < 2 {
      match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
        Some(Ok(bytes)) => output.extend(bytes),
        Some(Err(error)) => closed.push(error),
        None => {}
      }
    }
    assert_eq!(output, b"a\r\nb\r\nc", "{name}");
    assert_eq!(closed, [false, false], "{name}: two EOFs, no error");
    assert!(p.child.wait().unwrap().success());
  }
}
