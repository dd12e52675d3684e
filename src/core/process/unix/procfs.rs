//! The Linux backend of `proc_table.rs` (CONTRACT.md §4 item 5): parent
//! links, process groups, start times and the environment tag from procfs.
//! On other Unixes without a procfs (macOS has its own backend) `/proc` is
//! missing, so every reader returns `None`, `false` or nothing, and callers
//! fall back to the process group.
//!
//! A [`ProcStat`] from here holds fields 4 (ppid) and 5 (pgid) of
//! `/proc/<pid>/stat`, field 22 as the start time (clock ticks after boot,
//! unique per pid while the system runs), and state `Z` or `X` as zombie.

use std::fs::{self, File};
use std::io::{ErrorKind, Read};

use once_cell::sync::Lazy;

pub use super::proc_stat::ProcStat;
use super::proc_stat::{named_values, tag_values};
// The platform-neutral part of the API, also under its older paths here, for the tests.
#[cfg(test)]
pub use super::proc_table::{
  all_stats, descendants, descendants_in, env_tags, has_env_tag, is_running, pgid, ppid, start_time,
};

/// Start times count clock ticks after boot, which never step back.
pub(super) const START_TIME_SLACK: u64 = 0;

/// The watchdog reads procfs itself; it needs no `ps`.
pub(super) const WATCHDOG_PS: &str = "";

static AVAILABLE: Lazy<bool> = Lazy::new(|| stat(std::process::id()).is_some());

/// Whether this system has a readable Linux procfs.
pub fn available() -> bool {
  *AVAILABLE
}

/// Longest `/proc/<pid>/stat` line: a 64-byte name and 52 numbers of at most
/// 20 digits each come to about 1.2 KB.
const STAT_BUF: usize = 2048;

/// `/proc/<pid>/stat`, or `None` if the process does not exist.
///
/// A scan reads this file for every process, so it is read with one `read`
/// into a stack buffer: no `fstat` for a size hint (procfs reports 0) and
/// no growing probe reads, as `fs::read` would do.
pub fn stat(pid: u32) -> Option<ProcStat> {
  let mut buf = [0u8; STAT_BUF];
  let len = read_line_file(&format!("/proc/{pid}/stat"), &mut buf)?;
  parse_stat(pid, &buf[..len])
}

/// Parses a stat line. The command name (field 2) may hold spaces and
/// parentheses, so the numeric fields are read after the *last* `)`.
pub fn parse_stat(pid: u32, line: &[u8]) -> Option<ProcStat> {
  let close = line.iter().rposition(|&b| b == b')')?;
  let rest = std::str::from_utf8(&line[close + 1..]).ok()?;
  // `fields[0]` is field 3 (the state), so field N is `fields[N - 3]`.
  let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
  Some(ProcStat {
    pid,
    ppid: fields.get(1)?.parse().ok()?,
    pgid: fields.get(2)?.parse().ok()?,
    start_time: fields.get(19)?.parse().ok()?,
    zombie: matches!(*fields.first()?, "Z" | "X"),
  })
}

/// Reads a one-line file into `buf`: stops at the closing newline (procfs
/// produces the whole line in one read), at EOF, or when `buf` is full.
fn read_line_file(path: &str, buf: &mut [u8]) -> Option<usize> {
  let mut file = File::open(path).ok()?;
  let mut len = 0;
  while len < buf.len() {
    match file.read(&mut buf[len..]) {
      Ok(0) => break,
      Ok(n) => {
        len += n;
        if buf[len - 1] == b'\n' {
          break;
        }
      }
      Err(e) if e.kind() == ErrorKind::Interrupted => {}
      Err(_) => return None,
    }
  }
  Some(len)
}

/// Reads a whole procfs file into `buf` (grown as needed, never shrunk) and
/// returns its length, without the size probe and small first reads of
/// `fs::read`; `None` if it cannot be opened or read.
fn read_file_into(path: &str, buf: &mut Vec<u8>) -> Option<usize> {
  let mut file = File::open(path).ok()?;
  if buf.len() < 4096 {
    buf.resize(4096, 0);
  }
  let mut len = 0;
  loop {
    if len == buf.len() {
      buf.resize(buf.len() * 2, 0);
    }
    match file.read(&mut buf[len..]) {
      Ok(0) => return Some(len),
      Ok(n) => len += n,
      Err(e) if e.kind() == ErrorKind::Interrupted => {}
      Err(_) => return None,
    }
  }
}

/// The values of every `TASKSTREAM_TASK_ID=` entry of `/proc/<pid>/environ`
/// (the environment the process was started with), reading through `buf`,
/// which a scan reuses for every process. Empty if unreadable.
pub(super) fn env_tags_with(pid: u32, buf: &mut Vec<u8>) -> Vec<String> {
  let Some(len) = read_file_into(&format!("/proc/{pid}/environ"), buf) else {
    return Vec::new();
  };
  tag_values(buf[..len].split(|&b| b == 0))
}

/// The values of the `<name>=` entries of `/proc/<pid>/environ`.
pub(super) fn env_values(pid: u32, name: &str) -> Vec<String> {
  let mut buf = Vec::new();
  let Some(len) = read_file_into(&format!("/proc/{pid}/environ"), &mut buf) else {
    return Vec::new();
  };
  named_values(buf[..len].split(|&b| b == 0), name)
}

/// Every pid listed in `/proc`.
pub fn list_pids() -> Vec<u32> {
  let Ok(dir) = fs::read_dir("/proc") else {
    return Vec::new();
  };
  dir
    .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
    .collect()
}

/// `/proc/<pid>/comm`: the short command name.
#[cfg(test)]
pub(crate) fn name(pid: u32) -> Option<String> {
  let text = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
  Some(text.trim_end().to_string())
}
