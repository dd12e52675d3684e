//! Facts about processes from Linux procfs (CONTRACT.md §4 item 5): parent
//! links, process groups, start times (to tell a reused pid apart) and the
//! environment tag. Elsewhere `/proc` is missing, so every reader returns
//! `None`, `false` or nothing, and callers fall back to the process group.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{self, File};
use std::io::{ErrorKind, Read};

use once_cell::sync::Lazy;

use super::tag::TASK_TAG_VAR;

/// The fields of `/proc/<pid>/stat` this module needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
  pub pid: u32,
  /// Field 4.
  pub ppid: u32,
  /// Field 5.
  pub pgid: u32,
  /// Field 22: clock ticks after boot. Unique per pid while the system runs.
  pub start_time: u64,
  /// State `Z` or `X`: the process has exited and cannot run or fork again.
  pub zombie: bool,
}

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

/// Field 22 of `/proc/<pid>/stat`.
pub fn start_time(pid: u32) -> Option<u64> {
  stat(pid).map(|s| s.start_time)
}

/// The parent pid.
pub fn ppid(pid: u32) -> Option<u32> {
  stat(pid).map(|s| s.ppid)
}

/// The process group id.
pub fn pgid(pid: u32) -> Option<u32> {
  stat(pid).map(|s| s.pgid)
}

/// The process exists, is not a zombie, and is the one that started at
/// `start_time` (not a later process that reused the pid).
pub fn is_running(pid: u32, start_time: u64) -> bool {
  stat(pid).is_some_and(|s| s.start_time == start_time && !s.zombie)
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
/// (the environment the process was started with). Empty if unreadable.
pub fn env_tags(pid: u32) -> Vec<String> {
  env_tags_with(pid, &mut Vec::new())
}

/// [`env_tags`] reading through `buf`, which a scan reuses for every process.
pub(super) fn env_tags_with(pid: u32, buf: &mut Vec<u8>) -> Vec<String> {
  let Some(len) = read_file_into(&format!("/proc/{pid}/environ"), buf) else {
    return Vec::new();
  };
  buf[..len]
    .split(|&b| b == 0)
    .filter_map(|entry| {
      entry
        .strip_prefix(TASK_TAG_VAR.as_bytes())?
        .strip_prefix(b"=")
    })
    .filter_map(|value| String::from_utf8(value.to_vec()).ok())
    .collect()
}

/// `/proc/<pid>/environ` holds the exact entry `TASKSTREAM_TASK_ID=<tag>`.
pub fn has_env_tag(pid: u32, tag: &str) -> bool {
  env_tags(pid).iter().any(|t| t == tag)
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

/// One scan of every process's stat.
pub fn all_stats() -> Vec<ProcStat> {
  list_pids().into_iter().filter_map(stat).collect()
}

/// `(pid, start_time)` of every descendant of `roots`, by parent links, from
/// one `/proc` scan. The roots themselves are not included.
pub fn descendants(roots: &[u32]) -> Vec<(u32, u64)> {
  descendants_in(&all_stats(), roots)
}

/// [`descendants`] over a given scan: breadth-first, iterative (no recursion
/// depth limit), each pid visited once even if the scan holds a cycle.
pub fn descendants_in(stats: &[ProcStat], roots: &[u32]) -> Vec<(u32, u64)> {
  let mut children: HashMap<u32, Vec<&ProcStat>> = HashMap::new();
  for s in stats {
    children.entry(s.ppid).or_default().push(s);
  }
  let mut seen: HashSet<u32> = roots.iter().copied().collect();
  let mut queue: VecDeque<u32> = roots.iter().copied().collect();
  let mut found = Vec::new();
  while let Some(parent) = queue.pop_front() {
    for child in children.get(&parent).into_iter().flatten() {
      if seen.insert(child.pid) {
        found.push((child.pid, child.start_time));
        queue.push_back(child.pid);
      }
    }
  }
  found
}
