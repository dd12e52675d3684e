//! The reactor on real pipes, real children and real timers.

use std::io::Write;
use std::os::fd::FromRawFd;
use std::process::ExitStatus;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::super::unix::MAX_REACTORS;
use crate::reactor::*;
use crate::sync::lock;
use std::fs::File;
use std::io;

#[derive(Debug, PartialEq)]
enum Heard {
  Data(u8, Vec<u8>),
  Closed(u8, bool),
  Exited(Option<i32>),
}

struct Recorder(Mutex<Sender<Heard>>);

impl PipeHandler for Recorder {
  fn data(&self, tag: u8, bytes: &[u8]) {
    let _ = lock(&self.0).send(Heard::Data(tag, bytes.to_vec()));
  }
  fn closed(&self, tag: u8, error: Option<io::Error>) {
    let _ = lock(&self.0).send(Heard::Closed(tag, error.is_some()));
  }
}

impl ExitHandler for Recorder {
  fn exited(&self, status: io::Result<ExitStatus>) {
    let _ = lock(&self.0).send(Heard::Exited(status.ok().and_then(|s| s.code())));
  }
}

fn os_pipe() -> (File, File) {
  let mut fds = [0; 2];
  // SAFETY: `fds` has room for two descriptors.
  assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
  // SAFETY: both descriptors are new and ours.
  unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

#[test]
fn a_pipe_is_read_in_order_to_eof() {
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  let recorder = Arc::new(Recorder(Mutex::new(tx)));
  let (read, mut write) = os_pipe();
  reactor.watch_pipe(read, 7, recorder);
  let mut sent = Vec::new();
  for i in 0..2000u32 {
    let line = format!("line {i}\n");
    write.write_all(line.as_bytes()).unwrap();
    sent.extend_from_slice(line.as_bytes());
  }
  drop(write);
  let mut got = Vec::new();
  loop {
    match rx
      .recv_timeout(Duration::from_secs(5))
      .expect("reactor answered")
    {
      Heard::Data(7, bytes) => got.extend(bytes),
      Heard::Closed(7, false) => break,
      other => panic!("unexpected {other:?}"),
    }
  }
  assert_eq!(got, sent);
}

/// The poller is edge-triggered: a source whose turn ends before it was read
/// dry is not reported again, so the reactor must come back to it. Datagrams
/// make that exact: each read takes one, so a turn of [`READS_PER_TURN`]
/// reads leaves the rest queued, and no new write ever re-arms the edge.
#[test]
fn a_source_left_unread_after_its_turn_is_read_on_the_next() {
  let mut fds = [0; 2];
  // SAFETY: `fds` has room for two descriptors.
  assert_eq!(
    unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) },
    0
  );
  // SAFETY: both descriptors are new and ours.
  let (read, mut write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
  // Room for every datagram (macOS sizes a datagram socket's queue by its
  // receive buffer), and a full queue fails the test instead of hanging it.
  let room: libc::c_int = 256 * 1024;
  // SAFETY: setsockopt reads an int from `room`; fcntl touches no memory.
  unsafe {
    libc::setsockopt(
      fds[0],
      libc::SOL_SOCKET,
      libc::SO_RCVBUF,
      (&room as *const libc::c_int).cast(),
      std::mem::size_of::<libc::c_int>() as libc::socklen_t,
    );
    libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK);
  }
  let count = READS_PER_TURN * 2 + 5;
  for i in 0..count {
    write
      .write_all(format!("datagram {i}").as_bytes())
      .unwrap_or_else(|e| panic!("datagram {i} could not be queued: {e}"));
  }
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  let key = reactor.watch_pipe(read, 3, Arc::new(Recorder(Mutex::new(tx))));
  for i in 0..count {
    let heard = rx
      .recv_timeout(Duration::from_secs(5))
      .unwrap_or_else(|_| panic!("datagram {i} of {count} never read"));
    assert_eq!(heard, Heard::Data(3, format!("datagram {i}").into_bytes()));
  }
  reactor.close_pipe(key);
  drop(write);
}

#[test]
fn a_closed_pipe_hears_nothing_more() {
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  let (read, mut write) = os_pipe();
  let key = reactor.watch_pipe(read, 1, Arc::new(Recorder(Mutex::new(tx))));
  write.write_all(b"first").unwrap();
  assert_eq!(
    rx.recv_timeout(Duration::from_secs(5)).unwrap(),
    Heard::Data(1, b"first".to_vec())
  );
  reactor.close_pipe(key);
  // Once the reactor closed its end, the writer sees EPIPE.
  let mut broken = false;
  for _ in 0..3000 {
    if write.write_all(b"x").is_err() {
      broken = true;
      break;
    }
    std::thread::sleep(Duration::from_millis(10));
  }
  assert!(broken, "the read end was never closed");
  // Bytes written before the close took effect may still arrive; `closed`
  // never does (the handler asked for the close).
  while let Ok(heard) = rx.recv_timeout(Duration::from_millis(100)) {
    assert!(matches!(heard, Heard::Data(1, _)), "{heard:?}");
  }
}

#[test]
fn a_child_exit_is_reaped_and_reported() {
  use crate::process::{child_env, new_task_tag, resolve_program, spawn, EnvOptions, SpawnRequest};
  let tag = new_task_tag();
  let spawned = spawn(SpawnRequest {
    program: resolve_program("bash", std::env::var_os("PATH").as_deref()).unwrap(),
    args: vec!["-c".into(), "exit 7".into()],
    cwd: "/".into(),
    env: child_env(
      std::env::vars_os(),
      &EnvOptions {
        remove: vec![],
        term: "dumb",
        overrides: vec![],
        task_tag: tag.clone(),
      },
    ),
    task_tag: tag,
    terminal: None,
    limits: None,
  })
  .unwrap();
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  reactor
    .watch_exit(spawned.child, Arc::new(Recorder(Mutex::new(tx))))
    .unwrap();
  assert_eq!(
    rx.recv_timeout(Duration::from_secs(5)).unwrap(),
    Heard::Exited(Some(7))
  );
  // Reaped: no zombie is left with that pid.
  assert!(crate::process::proc_table::stat(spawned.pid).is_none());
}

#[test]
fn timers_run_in_deadline_order() {
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  for (delay, label) in [(60u64, "c"), (20, "a"), (40, "b")] {
    let tx = tx.clone();
    reactor.after(Duration::from_millis(delay), move || {
      let _ = tx.send(label);
    });
  }
  let order: Vec<&str> = (0..3)
    .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
    .collect();
  assert_eq!(order, ["a", "b", "c"]);
}

#[test]
fn the_thread_count_is_flat() {
  assert!((1..=MAX_REACTORS).contains(&reactor_count()));
}
