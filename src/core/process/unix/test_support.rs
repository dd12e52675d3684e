//! Helpers for the real-process tests of this module.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::*;

static SERIAL: Mutex<()> = Mutex::new(());

/// Process tests run one at a time: they count descriptors and kill trees.
pub(super) fn serial() -> MutexGuard<'static, ()> {
  SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn bash() -> PathBuf {
  let path = std::env::var_os("PATH");
  resolve_program("bash", path.as_deref()).expect("bash on PATH")
}

/// The default environment of a monitor child, tagged with `tag`.
pub(super) fn default_env(
  tag: &str,
  extra: Vec<(OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
  let opts = EnvOptions {
    remove: DEFAULT_REMOVE_ENV.iter().map(|s| s.to_string()).collect(),
    term: "dumb",
    overrides: vec![("MY_OVERRIDE".into(), "1".into())],
    task_tag: tag.to_string(),
  };
  child_env(std::env::vars_os().chain(extra), &opts)
}

pub(super) fn request(script: &str) -> SpawnRequest {
  let task_tag = new_task_tag();
  SpawnRequest {
    program: bash(),
    args: vec!["-c".into(), script.into()],
    cwd: std::env::temp_dir(),
    env: default_env(&task_tag, Vec::new()),
    task_tag,
    terminal: None,
    limits: None,
  }
}

pub(super) fn spawn_script(script: &str) -> SpawnedProcess {
  spawn(request(script)).expect("spawn")
}

pub(super) fn read_all(mut file: &std::fs::File) -> String {
  let mut text = String::new();
  file.read_to_string(&mut text).expect("read pipe");
  text
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
pub(super) fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
  let deadline = Instant::now() + timeout;
  loop {
    if condition() {
      return true;
    }
    if Instant::now() >= deadline {
      return false;
    }
    std::thread::sleep(Duration::from_millis(10));
  }
}

/// Waits (at most 5 s) until exactly `count` live processes tagged `tag` run
/// `sleep` (not a shell that is about to exec it) and returns their stats.
pub(super) fn wait_for_sleepers(tag: &str, count: usize) -> Vec<proc_table::ProcStat> {
  let mut found = Vec::new();
  let ready = wait_until(Duration::from_secs(5), || {
    found = proc_table::list_pids()
      .into_iter()
      .filter(|&pid| {
        proc_table::has_env_tag(pid, tag) && proc_table::name(pid).as_deref() == Some("sleep")
      })
      .filter_map(proc_table::stat)
      .filter(|s| !s.zombie)
      .collect();
    found.len() == count
  });
  assert!(
    ready,
    "expected {count} sleepers tagged {tag}, found {found:?}"
  );
  found
}

pub(super) fn all_dead(procs: &[(u32, u64)]) -> bool {
  procs
    .iter()
    .all(|&(pid, start)| !proc_table::is_running(pid, start))
}

pub(super) fn ids(stats: &[proc_table::ProcStat]) -> Vec<(u32, u64)> {
  stats.iter().map(|s| (s.pid, s.start_time)).collect()
}

/// Kills a test's tree when the test ends, passed or failed.
pub(super) struct KillOnDrop(pub(super) ProcessGroup);

impl Drop for KillOnDrop {
  fn drop(&mut self) {
    kill_now(&self.0);
  }
}

/// Open descriptors of this process, by number, with their link targets.
pub(super) fn open_fds() -> HashMap<u32, String> {
  std::fs::read_dir("/proc/self/fd")
    .expect("/proc/self/fd")
    .filter_map(|entry| {
      let entry = entry.ok()?;
      let fd = entry.file_name().to_str()?.parse().ok()?;
      let target = std::fs::read_link(entry.path()).ok()?;
      Some((fd, target.to_string_lossy().into_owned()))
    })
    .collect()
}
