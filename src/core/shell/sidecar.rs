//! The status sidecar beside a shell's output file (CONTRACT.md §2.14, §4
//! item 11): `<output>.status` says what the shell is doing, so "no output
//! yet" differs visibly from "dead" (upstream #7626).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::ShellEntry;
use super::iso_time::iso_8601;
use crate::end::TaskEnd;
use crate::ids::random_hex;
use crate::private_file::{open_private, Existing};
use crate::text::status_file_path_for;

/// The sidecar's JSON, keys in the order of §2.14; absent values are omitted.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusRecord<'a> {
  id: &'a str,
  status: &'static str,
  command: &'a str,
  cwd: &'a str,
  start_time: String,
  updated_at: String,
  #[serde(skip_serializing_if = "Option::is_none")]
  pid: Option<u32>,
  #[serde(skip_serializing_if = "Option::is_none")]
  end_time: Option<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  exit_code: Option<i32>,
  #[serde(skip_serializing_if = "Option::is_none")]
  error: Option<&'a str>,
  owner_pid: u32,
  /// Who ended it (API.md §6.3); after `ownerPid`, so the keys of CONTRACT.md §2.14 keep their order.
  #[serde(skip_serializing_if = "Option::is_none")]
  end: Option<&'a TaskEnd>,
}

/// Room kept for a sidecar beyond a running record (see [`write_status_sidecar`]).
const SETTLE_ROOM: u64 = 4096;

/// Writes `entry`'s sidecar at `statusFilePathFor(outputPath)`: pretty JSON
/// (2-space indent, then a newline), ISO-8601 times, `ownerPid`. Atomic: a
/// `0600` temporary file in the same directory, then a rename, which also
/// replaces a symlink at the path instead of writing through it. A failure is
/// logged and swallowed; no temporary file is left behind.
///
/// A full disk (`ENOSPC`, `EDQUOT`) must not leave a sidecar saying
/// `running` for a shell that has ended (its output file may be what filled
/// the disk): the temporary file needs blocks the disk no longer has, so the
/// record is then written over the existing sidecar in place, in blocks it
/// already owns. A running record is written with [`SETTLE_ROOM`] more bytes
/// reserved beyond its end (Linux `fallocate` with `FALLOC_FL_KEEP_SIZE`:
/// the contents do not change) so the longer terminal record fits them. The
/// in-place record is padded with spaces to the old length, which JSON
/// readers skip as trailing whitespace. Unlike the rename it is not atomic
/// for a concurrent reader, so it is only the fallback. Copy-on-write file
/// systems need new blocks even for that; the log line then names both
/// errors.
pub fn write_status_sidecar(entry: &ShellEntry, owner_pid: u32) {
  running::track(entry, owner_pid);
  let path = PathBuf::from(status_file_path_for(&entry.output_path));
  let room = if entry.is_running() { SETTLE_ROOM } else { 0 };
  let written = render(entry, owner_pid).and_then(|json| {
    replace_atomically(&path, json.as_bytes(), room).or_else(|error| {
      if !is_disk_full(&error) {
        return Err(error);
      }
      rewrite_in_place(&path, json.as_bytes()).map_err(|in_place| {
        io::Error::new(
          error.kind(),
          format!("{error}; rewriting it in place failed too: {in_place}"),
        )
      })
    })
  });
  if let Err(error) = written {
    tracing::warn!(
      path = %path.display(),
      %error,
      "taskstream: cannot write the status sidecar"
    );
  }
}

fn render(entry: &ShellEntry, owner_pid: u32) -> io::Result<String> {
  let record = StatusRecord {
    id: &entry.id,
    status: entry.status.as_str(),
    command: &entry.command,
    cwd: &entry.cwd,
    start_time: iso(entry.start_time)?,
    updated_at: iso(crate::clock::wall_ms())?,
    pid: entry.pid,
    end_time: entry.end_time.map(iso).transpose()?,
    exit_code: entry.exit_code,
    error: entry.error.as_deref(),
    owner_pid,
    end: entry.end.as_ref(),
  };
  let mut json = serde_json::to_string_pretty(&record).map_err(io::Error::other)?;
  json.push('\n');
  Ok(json)
}

/// `toISOString`, or the `RangeError` JavaScript would throw.
fn iso(ms: f64) -> io::Result<String> {
  iso_8601(ms).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "Invalid time value"))
}

/// Writes `bytes` to a fresh temporary file beside `path`, with `room` more
/// bytes reserved, then renames it over `path`. The temporary file is
/// removed if anything after its creation fails.
fn replace_atomically(path: &Path, bytes: &[u8], room: u64) -> io::Result<()> {
  let temp = temp_path_beside(path);
  let file = open_private(&temp, Existing::Refuse)?;
  let result = write_and_close(file, bytes, room).and_then(|()| fs::rename(&temp, path));
  if result.is_err() {
    let _ = fs::remove_file(&temp);
  }
  result
}

/// Takes the file so that it is closed before the rename.
fn write_and_close(mut file: File, bytes: &[u8], room: u64) -> io::Result<()> {
  file.write_all(bytes)?;
  if room > 0 {
    reserve(&file, bytes.len() as u64 + room);
  }
  Ok(())
}

fn is_disk_full(error: &io::Error) -> bool {
  matches!(
    error.kind(),
    io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
  )
}

/// Best effort: allocates the file's first `len` bytes without changing its
/// size or contents, so a later in-place rewrite of up to `len` bytes needs
/// no new blocks. Without `fallocate` the block already holding the record
/// (usually 4 KiB) is the room.
#[cfg(target_os = "linux")]
fn reserve(file: &File, len: u64) {
  use nix::fcntl::{fallocate, FallocateFlags};
  use std::os::fd::AsRawFd;
  let len = libc::off_t::try_from(len).unwrap_or(libc::off_t::MAX);
  if let Err(error) = fallocate(
    file.as_raw_fd(),
    FallocateFlags::FALLOC_FL_KEEP_SIZE,
    0,
    len,
  ) {
    tracing::debug!(%error, "taskstream: cannot reserve room for the status sidecar");
  }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_file: &File, _len: u64) {}

/// Writes `bytes` over the sidecar at `path` in place, never through a
/// symlink, padded with spaces to the old length: one write at offset 0,
/// with no truncation, so no byte of the old record is left after the new
/// one.
#[cfg(unix)]
fn rewrite_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
  use std::os::unix::fs::FileExt;
  let file = open_private(path, Existing::Keep)?;
  let metadata = file.metadata()?;
  if !metadata.is_file() {
    return Err(io::Error::new(
      io::ErrorKind::InvalidInput,
      "not a regular file",
    ));
  }
  let mut record = bytes.to_vec();
  let old_len = usize::try_from(metadata.len()).unwrap_or(usize::MAX);
  if record.len() < old_len {
    record.resize(old_len, b' ');
  }
  file.write_all_at(&record, 0)
}

#[cfg(not(unix))]
fn rewrite_in_place(_path: &Path, _bytes: &[u8]) -> io::Result<()> {
  Err(io::Error::new(
    io::ErrorKind::Unsupported,
    "no in-place rewrite on this platform",
  ))
}

/// `.<name>.<pid>.<8 hex>.tmp` in `path`'s directory: hidden, and unique
/// across hosts and calls.
fn temp_path_beside(path: &Path) -> PathBuf {
  let name = path
    .file_name()
    .map_or_else(|| "status".into(), |n| n.to_string_lossy());
  path.with_file_name(format!(
    ".{name}.{}.{}.tmp",
    std::process::id(),
    random_hex(8)
  ))
}

/// The sidecars that say `running`, so the host's exit hook can record why
/// those shells ended (API.md §6.3: a CLI that starts again reads `host-exit`).
mod running {
  use std::collections::HashMap;
  use std::sync::Mutex;

  use super::ShellEntry;
  use crate::sync::lock;

  static RUNNING: Mutex<Option<HashMap<String, (ShellEntry, u32)>>> = Mutex::new(None);

  /// Called with every sidecar written: a running record is remembered, any
  /// other forgotten.
  pub(super) fn track(entry: &ShellEntry, owner_pid: u32) {
    let mut running = lock(&RUNNING);
    let map = running.get_or_insert_with(HashMap::new);
    if entry.is_running() {
      map.insert(entry.output_path.clone(), (entry.clone(), owner_pid));
    } else {
      map.remove(&entry.output_path);
    }
  }

  /// The remembered running records `pick` selects, forgotten.
  pub(super) fn take_where(pick: impl Fn(&ShellEntry) -> bool) -> Vec<(ShellEntry, u32)> {
    let mut running = lock(&RUNNING);
    let Some(map) = running.as_mut() else {
      return Vec::new();
    };
    let keys: Vec<String> = map
      .iter()
      .filter(|(_, (entry, _))| pick(entry))
      .map(|(key, _)| key.clone())
      .collect();
    keys.iter().filter_map(|key| map.remove(key)).collect()
  }
}

/// The host is exiting with shells still running (its exit hook kills them):
/// each one's sidecar is rewritten `cancelled`, with `end` `host-exit`.
pub fn record_host_exit(now_ms: f64) {
  record_host_exit_where(now_ms, |_| true);
}

/// [`record_host_exit`] for the running shells `pick` selects (tests pick their own).
pub fn record_host_exit_where(now_ms: f64, pick: impl Fn(&ShellEntry) -> bool) {
  for (mut entry, owner_pid) in running::take_where(pick) {
    entry.status = super::entry::ShellStatus::Cancelled;
    entry.end_time = Some(now_ms);
    entry.end = Some(TaskEnd::host_exit());
    write_status_sidecar(&entry, owner_pid);
  }
}

#[cfg(all(test, unix))]
mod tests {
  use std::os::unix::fs::{symlink, PermissionsExt};

  use super::*;
  use crate::shell::entry::ShellStatus;
  use crate::shell::test_support::TempDir;

  fn entry(output_path: &Path) -> ShellEntry {
    ShellEntry {
      id: "bg_1".into(),
      command: "npm \"test\"\n".into(),
      cwd: "/repo".into(),
      pid: Some(1234),
      status: ShellStatus::Running,
      exit_code: None,
      error: None,
      start_time: 1_700_000_000_123.0,
      end_time: None,
      output_path: output_path.to_string_lossy().into_owned(),
      notified: false,
      todo_work_chain_id: None,
      end: None,
      ending: None,
    }
  }

  /// The keys of a pretty-printed flat JSON object, in file order.
  fn keys_in_order(json: &str) -> Vec<String> {
    json
      .lines()
      .filter_map(|line| line.strip_prefix("  \""))
      .filter_map(|rest| rest.split_once("\": ").map(|(key, _)| key.to_owned()))
      .collect()
  }

  fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
  }

  #[test]
  fn running_sidecar_has_the_keys_in_order() {
    let dir = TempDir::new("sidecar-running");
    let e = entry(&dir.path().join("shell-bg_1.output"));
    write_status_sidecar(&e, 4242);
    let text = fs::read_to_string(dir.path().join("shell-bg_1.status")).unwrap();
    assert_eq!(
      keys_in_order(&text),
      [
        "id",
        "status",
        "command",
        "cwd",
        "startTime",
        "updatedAt",
        "pid",
        "ownerPid"
      ]
    );
    assert!(text.starts_with("{\n  \"id\": \"bg_1\",\n  \"status\": \"running\",\n"));
    assert!(text.contains("\n  \"command\": \"npm \\\"test\\\"\\n\",\n"));
    assert!(text.contains("\n  \"startTime\": \"2023-11-14T22:13:20.123Z\",\n"));
    assert!(text.ends_with("\n  \"pid\": 1234,\n  \"ownerPid\": 4242\n}\n"));
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let updated = value["updatedAt"].as_str().unwrap();
    assert_eq!(updated.len(), 24, "{updated}");
    assert!(
      updated.starts_with("20") && updated.ends_with('Z'),
      "{updated}"
    );
  }

  #[test]
  fn terminal_sidecar_adds_end_time_exit_code_and_error() {
    let dir = TempDir::new("sidecar-terminal");
    let mut e = entry(&dir.path().join("custom.log"));
    e.status = ShellStatus::Failed;
    e.end_time = Some(1_700_000_001_000.0);
    e.exit_code = Some(2);
    e.error = Some("exited with code 2".into());
    write_status_sidecar(&e, 7);
    let text = fs::read_to_string(dir.path().join("custom.log.status")).unwrap();
    assert_eq!(
      keys_in_order(&text),
      [
        "id",
        "status",
        "command",
        "cwd",
        "startTime",
        "updatedAt",
        "pid",
        "endTime",
        "exitCode",
        "error",
        "ownerPid"
      ]
    );
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["status"], "failed");
    assert_eq!(value["endTime"], "2023-11-14T22:13:21.000Z");
    assert_eq!(value["exitCode"], 2);
    assert_eq!(value["error"], "exited with code 2");
    assert_eq!(value["ownerPid"], 7);
  }

  #[test]
  fn sidecar_is_private_and_leaves_no_temporary_file() {
    let dir = TempDir::new("sidecar-private");
    let status = dir.path().join("shell-bg_1.status");
    fs::write(&status, "old").unwrap();
    fs::set_permissions(&status, fs::Permissions::from_mode(0o644)).unwrap();
    write_status_sidecar(&entry(&dir.path().join("shell-bg_1.output")), 1);
    assert_eq!(mode(&status), 0o600);
    let names: Vec<String> = fs::read_dir(dir.path())
      .unwrap()
      .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
      .collect();
    assert_eq!(names, ["shell-bg_1.status"]);
  }

  #[test]
  fn a_symlink_at_the_path_is_replaced_not_written_through() {
    let dir = TempDir::new("sidecar-symlink");
    let secret = dir.path().join("secret");
    fs::write(&secret, "keep me").unwrap();
    let status = dir.path().join("shell-bg_1.status");
    symlink(&secret, &status).unwrap();
    write_status_sidecar(&entry(&dir.path().join("shell-bg_1.output")), 1);
    assert!(fs::symlink_metadata(&status).unwrap().is_file());
    assert_eq!(mode(&status), 0o600);
    assert_eq!(fs::read_to_string(&secret).unwrap(), "keep me");
  }

  #[test]
  fn the_in_place_rewrite_pads_the_old_record_and_never_follows_a_symlink() {
    let dir = TempDir::new("sidecar-in-place");
    let status = dir.path().join("shell-bg_1.status");
    fs::write(
      &status,
      "{\n  \"status\": \"running\",\n  \"long\": \"xxxxxxxx\"\n}\n",
    )
    .unwrap();
    rewrite_in_place(&status, b"{\"status\": \"failed\"}\n").unwrap();
    let text = fs::read_to_string(&status).unwrap();
    assert_eq!(text.len(), 48, "the old length");
    assert!(
      text.starts_with("{\"status\": \"failed\"}\n   "),
      "{text:?}"
    );
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["status"], "failed");

    let secret = dir.path().join("secret");
    fs::write(&secret, "keep me").unwrap();
    let link = dir.path().join("link.status");
    symlink(&secret, &link).unwrap();
    assert!(rewrite_in_place(&link, b"{}").is_err());
    assert_eq!(fs::read_to_string(&secret).unwrap(), "keep me");
    assert!(rewrite_in_place(&dir.path().join("missing.status"), b"{}").is_err());
  }

  #[test]
  fn write_errors_are_swallowed() {
    let dir = TempDir::new("sidecar-missing");
    let missing = dir.path().join("no-such-dir").join("shell-x.output");
    write_status_sidecar(&entry(&missing), 1);
    let mut invalid = entry(&dir.path().join("shell-x.output"));
    invalid.start_time = f64::NAN;
    write_status_sidecar(&invalid, 1);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
  }
}
