//! `launch_keeper`, the same on every platform: the keeper program started with its config on
//! stdin, its handshake read from stdout, its log kept. How it is started (`unix.rs`,
//! `windows.rs`: `spawn` and `release`) is the platform's.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;

use super::platform;
use super::{KeeperProgram, KeeperStarted, HANDSHAKE_TIMEOUT, KEEPER_TAG_VAR};
use crate::persist::records::{
  check_task_id, parse_record, private_mode, KeeperConfig, TaskFiles, TaskRecord,
};
use crate::persist::state_dir::validate_state_dir;
use crate::process::new_task_tag;

/// Starts a keeper for `config` and waits for its handshake (see the module
/// documentation). On `err`, a timeout or an early exit, the keeper is
/// killed through the handle we hold (its pid cannot have been reused) and the
/// error returned; its task, if it had started one, dies with it. Afterwards
/// the platform half lets it go (on Unix a thread of ours reaps it).
pub fn launch_keeper(program: &KeeperProgram, config: &KeeperConfig) -> io::Result<KeeperStarted> {
  check_task_id(&config.id)?;
  let state_dir = Path::new(&config.state_dir);
  validate_state_dir(state_dir)?;
  let files = TaskFiles::new(state_dir, &config.id);
  let log = open_append_private(&files.keeper_log)?;
  let input = serde_json::to_vec(config).map_err(io::Error::other)?;
  let tag = format!("keeper-{}", new_task_tag());

  let mut command = Command::new(&program.program);
  command
    .args(&program.args)
    .envs(program.env.iter().map(|(k, v)| (k, v)))
    .env(KEEPER_TAG_VAR, &tag)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::from(log));
  let mut child = platform::spawn(&mut command)?;
  let keeper_pid = child.id();
  let stdin = child.stdin.take();
  let stdout = child.stdout.take();

  // The config may exceed a pipe's buffer; the keeper reads it first thing.
  std::thread::Builder::new()
    .name("taskstream-keeper-config".into())
    .spawn(move || {
      if let Some(mut stdin) = stdin {
        let _ = stdin.write_all(&input);
      }
    })?;
  let (answer_tx, answer) = mpsc::channel();
  std::thread::Builder::new()
    .name("taskstream-keeper-handshake".into())
    .spawn(move || {
      let _ = answer_tx.send(read_handshake(stdout));
    })?;

  let result = match answer.recv_timeout(HANDSHAKE_TIMEOUT) {
    Ok(Some(line)) => parse_handshake(&line, &config.id),
    Ok(None) => Err(io::Error::other(
      "the keeper exited before it started the task",
    )),
    Err(_) => Err(io::Error::new(
      io::ErrorKind::TimedOut,
      format!(
        "the keeper did not answer within {} s",
        HANDSHAKE_TIMEOUT.as_secs()
      ),
    )),
  };
  match result {
    Ok(record) => {
      platform::release(child);
      Ok(KeeperStarted { record, keeper_pid })
    }
    Err(error) => {
      // Still our unreaped child: its pid cannot be anyone else's.
      let _ = child.kill();
      let _ = child.wait();
      let tail = log_tail(&files.keeper_log);
      let message = if tail.is_empty() {
        error.to_string()
      } else {
        format!("{error} (keeper log: {tail})")
      };
      Err(io::Error::new(error.kind(), message))
    }
  }
}

/// The first `ok …` or `err …` line (other lines, such as a test harness's
/// banner, are skipped); `None` at EOF.
fn read_handshake(stdout: Option<std::process::ChildStdout>) -> Option<String> {
  let mut reader = BufReader::new(stdout?);
  let mut line = String::new();
  loop {
    line.clear();
    match reader.read_line(&mut line) {
      Ok(0) | Err(_) => return None,
      Ok(_) if line.starts_with("ok ") || line.starts_with("err ") => {
        return Some(line.trim_end_matches('\n').to_owned())
      }
      Ok(_) => {}
    }
  }
}

fn parse_handshake(line: &str, id: &str) -> io::Result<TaskRecord> {
  if let Some(message) = line.strip_prefix("err ") {
    return Err(io::Error::other(message.to_owned()));
  }
  let json = line.strip_prefix("ok ").unwrap_or(line);
  let record: TaskRecord = parse_record(json).map_err(|error| {
    io::Error::new(
      io::ErrorKind::InvalidData,
      format!("the keeper's handshake is not a valid task record: {error}"),
    )
  })?;
  if record.id != id {
    return Err(io::Error::new(
      io::ErrorKind::InvalidData,
      format!("the keeper answered for task {:?}", record.id),
    ));
  }
  Ok(record)
}

/// The last 400 bytes of the keeper's log, on one line.
fn log_tail(path: &Path) -> String {
  let Ok(mut file) = File::open(path) else {
    return String::new();
  };
  let len = file.metadata().map_or(0, |m| m.len());
  let _ = file.seek(SeekFrom::Start(len.saturating_sub(400)));
  let mut bytes = Vec::new();
  let _ = file.read_to_end(&mut bytes);
  String::from_utf8_lossy(&bytes)
    .split_whitespace()
    .collect::<Vec<_>>()
    .join(" ")
}

fn open_append_private(path: &Path) -> io::Result<File> {
  let mut options = OpenOptions::new();
  options.append(true).create(true);
  private_mode(&mut options);
  options.open(path)
}
