//! The Windows reactor on real pipes, real children and real timers.

use std::io::Write;
use std::process::ExitStatus;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
  let (read, write) = std::io::pipe().unwrap();
  (
    File::from(std::os::windows::io::OwnedHandle::from(read)),
    File::from(std::os::windows::io::OwnedHandle::from(write)),
  )
}

#[test]
fn windows_reactor_reads_a_pipe_in_order_to_eof() {
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  let (read, mut write) = os_pipe();
  reactor.watch_pipe(read, 7, Arc::new(Recorder(Mutex::new(tx))));
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
      .recv_timeout(Duration::from_secs(10))
      .expect("reactor answered")
    {
      Heard::Data(7, bytes) => got.extend(bytes),
      Heard::Closed(7, false) => break,
      other => panic!("unexpected {other:?}"),
    }
  }
  assert_eq!(got, sent);
}

#[test]
fn windows_reactor_close_pipe_hears_nothing_more_and_closes_our_end() {
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  let (read, mut write) = os_pipe();
  let key = reactor.watch_pipe(read, 1, Arc::new(Recorder(Mutex::new(tx))));
  write.write_all(b"first").unwrap();
  assert_eq!(
    rx.recv_timeout(Duration::from_secs(10)).unwrap(),
    Heard::Data(1, b"first".to_vec())
  );
  reactor.close_pipe(key);
  let mut broken = false;
  for _ in 0..500 {
    if write.write_all(b"x").is_err() {
      broken = true;
      break;
    }
    std::thread::sleep(Duration::from_millis(10));
  }
  assert!(broken, "the read end was never closed");
  while let Ok(heard) = rx.recv_timeout(Duration::from_millis(100)) {
    assert!(matches!(heard, Heard::Data(1, _)), "{heard:?}");
  }
}

#[test]
fn windows_reactor_reports_a_child_exit() {
  use crate::process::{
    child_env, new_task_tag, resolve_program, shell_config, spawn, EnvOptions, SpawnRequest,
  };
  let shell = shell_config();
  let tag = new_task_tag();
  let mut args = shell.args_prefix.clone();
  args.push("exit 7".into());
  let spawned = spawn(SpawnRequest {
    program: resolve_program(&shell.program, std::env::var_os("PATH").as_deref()).unwrap(),
    args,
    cwd: std::env::temp_dir(),
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
    rx.recv_timeout(Duration::from_secs(10)).unwrap(),
    Heard::Exited(Some(7))
  );
}

#[test]
fn windows_reactor_timers_run_in_deadline_order() {
  let reactor = Reactor::pick().unwrap();
  let (tx, rx) = channel();
  for (delay, label) in [(120u64, "c"), (40, "a"), (80, "b")] {
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
