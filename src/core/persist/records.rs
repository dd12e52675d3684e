//! The files of a state directory (docs/persistence.md "Files"): the task,
//! end and cursor records, the keeper's launch config and the cancel request.
//!
//! Every record is one line of compact JSON, keys in the order of its struct,
//! `"version": 1` first and `"checksum"` last: the lowercase hex FNV-1a 64 of
//! the record's JSON without the checksum (the same text with `,"checksum":…`
//! cut out; `JSON.stringify` of the object without `checksum` gives it too).
//! Records are written atomically (a `0600` temporary file beside the
//! target, fsync, rename). A record that fails to parse, lacks a field, has
//! another version or whose checksum differs is **corrupt**: reported,
//! never trusted, and renamed `<name>.corrupt` by [`read_record_or_quarantine`]
//! so it is reported once.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::end::{EndVia, TaskEnd};
use crate::ids::random_hex;

/// The `version` every record carries.
pub const RECORD_VERSION: u32 = 1;

/// Largest record file read; anything larger is corrupt.
const MAX_RECORD_BYTES: u64 = 16 << 20;

/// Which registry a persisted task belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
  Monitor,
  Shell,
}

impl TaskKind {
  pub fn as_str(self) -> &'static str {
    match self {
      TaskKind::Monitor => "monitor",
      TaskKind::Shell => "shell",
    }
  }
}

/// A process proved by its pid, its process-table start time and an
/// environment tag (`TASKSTREAM_KEEPER_ID` for the keeper).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessIdentity {
  pub pid: u32,
  /// `proc_table::start_time` (platform units); `None` without a process table.
  pub start_time: Option<u64>,
  pub tag: String,
}

/// The task's leader and group as the keeper spawned them (a
/// `ProcessGroup` plus the pid); `tag` is its `TASKSTREAM_TASK_ID`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskProcess {
  pub pid: u32,
  pub pgid: u32,
  pub start_time: Option<u64>,
  pub tag: String,
  pub cgroup: Option<String>,
}

/// `<id>.task.json`: written by the keeper once the child runs, before its
/// handshake (whose `ok` line carries the same JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
  pub version: u32,
  pub kind: TaskKind,
  pub id: String,
  pub command: String,
  pub description: String,
  pub cwd: String,
  /// Milliseconds since the epoch, the task's `startTime` as JavaScript sees it.
  pub start_time: u64,
  pub lease_ms: u64,
  /// Monitors: `<stateDir>/<id>.log` (raw bytes); shells: the output file.
  pub output_path: String,
  /// Shells: the status sidecar; monitors: `None`.
  pub status_path: Option<String>,
  pub max_output_bytes: u64,
  /// Opaque to the core: what the host put in [`KeeperConfig::options`].
  pub options: serde_json::Value,
  pub keeper: ProcessIdentity,
  pub task: TaskProcess,
}

/// `<id>.end.json`: the keeper's last act, after the output is closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndRecord {
  pub version: u32,
  pub id: String,
  /// Milliseconds since the epoch.
  pub end_time: u64,
  pub end: TaskEnd,
  pub exit_code: Option<i32>,
  /// Bytes written to the log (monitors) or output file (shells).
  pub output_bytes: u64,
  /// Bytes read but not written (past the cap; shells: also binary output).
  pub dropped_bytes: u64,
}

/// `<id>.cursor`: the byte offset of the raw log the owning host consumed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CursorRecord {
  pub version: u32,
  pub id: String,
  pub offset: u64,
}

/// What the keeper reads on its stdin (no checksum: it travels on a pipe).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeeperConfig {
  pub version: u32,
  pub kind: TaskKind,
  pub id: String,
  pub state_dir: String,
  pub command: String,
  pub description: String,
  pub cwd: String,
  /// What to spawn (normally the shell) and its arguments.
  pub program: String,
  pub args: Vec<String>,
  /// The complete child environment (`child_env`), the task tag included.
  pub env: Vec<(String, String)>,
  pub task_tag: String,
  pub lease_ms: u64,
  pub output_path: String,
  pub status_path: Option<String>,
  pub max_output_bytes: u64,
  /// Milliseconds since the epoch.
  pub start_time: u64,
  pub options: serde_json::Value,
}

/// `<id>.cancel`: a host asks the keeper to end the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
  pub via: EndVia,
}

/// A record type: serialisable, with a version.
pub trait Record: Serialize + DeserializeOwned {
  fn version(&self) -> u32;
}

impl Record for TaskRecord {
  fn version(&self) -> u32 {
    self.version
  }
}
impl Record for EndRecord {
  fn version(&self) -> u32 {
    self.version
  }
}
impl Record for CursorRecord {
  fn version(&self) -> u32 {
    self.version
  }
}

/// The paths of one task's files in a state directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFiles {
  pub task: PathBuf,
  pub end: PathBuf,
  pub cancel: PathBuf,
  pub lock: PathBuf,
  pub cursor: PathBuf,
  /// Monitors' raw output.
  pub log: PathBuf,
  /// The keeper's stderr.
  pub keeper_log: PathBuf,
  /// Where a host moves the task record of a task it found lost.
  pub lost: PathBuf,
}

impl TaskFiles {
  pub fn new(state_dir: &Path, id: &str) -> Self {
    let at = |suffix: &str| state_dir.join(format!("{id}{suffix}"));
    Self {
      task: at(".task.json"),
      end: at(".end.json"),
      cancel: at(".cancel"),
      lock: at(".lock"),
      cursor: at(".cursor"),
      log: at(".log"),
      keeper_log: at(".keeper.log"),
      lost: at(".lost.json"),
    }
  }
}

/// An id that can name files in a state directory: a valid shell id (no
/// separator, control character, …) that does not start with `.`.
pub fn check_task_id(id: &str) -> io::Result<()> {
  let problem = crate::ids::shell_id_problem(id).or_else(|| {
    id.starts_with('.')
      .then(|| "must not start with \".\"".to_owned())
  });
  match problem {
    Some(problem) => Err(io::Error::new(
      io::ErrorKind::InvalidInput,
      format!("a persisted task's id {problem}"),
    )),
    None => Ok(()),
  }
}

/// FNV-1a 64 of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
  let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
  for &b in bytes {
    hash ^= u64::from(b);
    hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
  }
  hash
}

const CHECKSUM_KEY: &str = ",\"checksum\":\"";

/// The record's file text: compact JSON, checksum last, then a newline.
pub fn render_record<T: Record>(record: &T) -> io::Result<String> {
  let body = serde_json::to_string(record).map_err(io::Error::other)?;
  let Some(open) = body.strip_suffix('}').filter(|o| o.len() > 1) else {
    return Err(io::Error::other("a record must be a non-empty JSON object"));
  };
  let sum = fnv1a64(body.as_bytes());
  Ok(format!("{open}{CHECKSUM_KEY}{sum:016x}\"}}\n"))
}

/// Parses a record's file text strictly (see the module documentation).
pub fn parse_record<T: Record>(text: &str) -> Result<T, String> {
  let text = text.strip_suffix('\n').unwrap_or(text);
  let at = text
    .rfind(CHECKSUM_KEY)
    .ok_or_else(|| "no checksum".to_owned())?;
  let tail = &text[at + CHECKSUM_KEY.len()..];
  let hex = tail
    .strip_suffix("\"}")
    .filter(|h| h.len() == 16 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    .ok_or_else(|| "the checksum is not 16 lowercase hex digits closing the object".to_owned())?;
  let body = format!("{}}}", &text[..at]);
  let expected = format!("{:016x}", fnv1a64(body.as_bytes()));
  if hex != expected {
    return Err(format!(
      "checksum mismatch: {hex} recorded, {expected} computed"
    ));
  }
  let raw: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
  let object = raw.as_object().ok_or("not a JSON object")?;
  match object.get("version").and_then(serde_json::Value::as_u64) {
    Some(v) if v == u64::from(RECORD_VERSION) => {}
    Some(v) => return Err(format!("version {v}, expected {RECORD_VERSION}")),
    None => return Err("no version".to_owned()),
  }
  let record: T = serde_json::from_value(raw.clone()).map_err(|e| e.to_string())?;
  // serde takes a missing `Option` field as `None`: every field must be there.
  let full = serde_json::to_value(&record).map_err(|e| e.to_string())?;
  if let Some(keys) = full.as_object() {
    if let Some(missing) = keys.keys().find(|k| !object.contains_key(*k)) {
      return Err(format!("missing field `{missing}`"));
    }
  }
  Ok(record)
}

/// What reading a record found.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadRecord<T> {
  Valid(T),
  /// No file at the path.
  Missing,
  /// Unreadable, malformed, incomplete, of another version or with a wrong
  /// checksum; the message says which.
  Corrupt(String),
}

/// Reads and checks the record at `path`, never through a symlink, only
/// from a regular file.
pub fn read_record<T: Record>(path: &Path) -> ReadRecord<T> {
  match read_small_file(path) {
    Ok(Some(text)) => match parse_record(&text) {
      Ok(record) => ReadRecord::Valid(record),
      Err(error) => ReadRecord::Corrupt(error),
    },
    Ok(None) => ReadRecord::Missing,
    Err(error) => ReadRecord::Corrupt(error.to_string()),
  }
}

/// [`read_record`]; a corrupt file is renamed `<name>.corrupt` (so it is
/// reported once), and the message then names the file.
pub fn read_record_or_quarantine<T: Record>(path: &Path) -> ReadRecord<T> {
  match read_record(path) {
    ReadRecord::Corrupt(error) => {
      let _ = quarantine(path);
      ReadRecord::Corrupt(format!("{}: {error}", path.display()))
    }
    other => other,
  }
}

/// Renames `path` to `<path>.corrupt`; returns the new path.
pub fn quarantine(path: &Path) -> io::Result<PathBuf> {
  let mut name = path.as_os_str().to_owned();
  name.push(".corrupt");
  let target = PathBuf::from(name);
  fs::rename(path, &target)?;
  Ok(target)
}

/// The text of a small regular file, `None` if absent. Symlinks, other
/// kinds of files, files over 16 MiB and invalid UTF-8 are errors.
pub(crate) fn read_small_file(path: &Path) -> io::Result<Option<String>> {
  let mut options = OpenOptions::new();
  options.read(true);
  no_follow(&mut options);
  let mut file = match options.open(path) {
    Ok(file) => file,
    Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
    Err(error) => return Err(error),
  };
  let metadata = file.metadata()?;
  if !metadata.is_file() {
    return Err(io::Error::new(
      io::ErrorKind::InvalidData,
      "not a regular file",
    ));
  }
  if metadata.len() > MAX_RECORD_BYTES {
    return Err(io::Error::new(io::ErrorKind::InvalidData, "too large"));
  }
  let mut bytes = Vec::with_capacity(metadata.len() as usize);
  Read::by_ref(&mut file)
    .take(MAX_RECORD_BYTES)
    .read_to_end(&mut bytes)?;
  String::from_utf8(bytes)
    .map(Some)
    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Writes `record` to `path` atomically ([`write_atomically`]).
pub fn write_record<T: Record>(path: &Path, record: &T) -> io::Result<()> {
  write_atomically(path, render_record(record)?.as_bytes())
}

/// Writes `bytes` to `<name>.tmp-<pid>-<8 hex>` beside `path` (`0600`, new,
/// never through a symlink), fsyncs it, renames it over `path` and fsyncs
/// the directory. The temporary file is removed on failure.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
  let name = path
    .file_name()
    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
  let mut temp_name = name.to_owned();
  temp_name.push(format!(".tmp-{}-{}", std::process::id(), random_hex(8)));
  let temp = path.with_file_name(temp_name);
  let result = (|| {
    let mut file = create_private(&temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, path)
  })();
  if result.is_err() {
    let _ = fs::remove_file(&temp);
    return result;
  }
  if let Some(dir) = path.parent() {
    if let Ok(dir) = File::open(dir) {
      let _ = dir.sync_all();
    }
  }
  Ok(())
}

/// Asks the keeper of `id` to end its task (`<id>.cancel`, written atomically).
pub fn request_cancel(state_dir: &Path, id: &str, via: EndVia) -> io::Result<()> {
  check_task_id(id)?;
  let json = serde_json::to_string(&CancelRequest { via }).map_err(io::Error::other)?;
  write_atomically(&TaskFiles::new(state_dir, id).cancel, json.as_bytes())
}

/// The cancel request at `path`: `None` if there is none; a request that
/// cannot be read counts as a plain `cancel`.
pub fn read_cancel(path: &Path) -> Option<CancelRequest> {
  match read_small_file(path) {
    Ok(None) => None,
    Ok(Some(text)) => Some(serde_json::from_str(text.trim()).unwrap_or(CancelRequest {
      via: EndVia::Cancel,
    })),
    Err(_) => Some(CancelRequest {
      via: EndVia::Cancel,
    }),
  }
}

/// A new file, `0600`, refusing an existing path or a symlink.
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
  let mut options = OpenOptions::new();
  options.write(true).create_new(true);
  private_mode(&mut options);
  options.open(path)
}

#[cfg(unix)]
pub(crate) fn private_mode(options: &mut OpenOptions) {
  use std::os::unix::fs::OpenOptionsExt;
  options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
}

#[cfg(not(unix))]
pub(crate) fn private_mode(_options: &mut OpenOptions) {}

#[cfg(unix)]
fn no_follow(options: &mut OpenOptions) {
  use std::os::unix::fs::OpenOptionsExt;
  options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
}

#[cfg(not(unix))]
fn no_follow(_options: &mut OpenOptions) {}
