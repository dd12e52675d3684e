//! Helpers for the persistence tests: scratch state directories, keeper
//! configs, the re-executed keeper program, a lease renewer, polling with
//! deadlines, and cleanup that kills by recorded group and tag.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::persist::records::{read_record, ReadRecord};
use crate::persist::{
  renew, EndRecord, Identity, KeeperConfig, KeeperProgram, TaskFiles, TaskKind, TaskRecord,
  KEEPER_TAG_VAR, RECORD_VERSION,
};
use crate::process::{child_env, new_task_tag, EnvOptions};
#[cfg(unix)]
use crate::process::{kill_now, proc_table, tree_alive, ProcessGroup};

/// A fresh `0700` state directory under the system temp dir, removed on drop.
pub(super) struct StateDir(PathBuf);

impl StateDir {
  pub(super) fn new(label: &str) -> Self {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
      "taskstream-persist-{label}-{}-{}",
      std::process::id(),
      NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&path);
    crate::persist::ensure_state_dir(&path).expect("create state dir");
    Self(path)
  }

  pub(super) fn path(&self) -> &Path {
    &self.0
  }

  pub(super) fn files(&self, id: &str) -> TaskFiles {
    TaskFiles::new(&self.0, id)
  }
}

impl Drop for StateDir {
  fn drop(&mut self) {
    let _ = fs::remove_dir_all(&self.0);
  }
}

/// The environment variable naming a program that runs this test binary again (for the arm64
/// tests under qemu-user, which cannot exec an arm64 binary directly without binfmt_misc:
/// `qemu-aarch64`, with `QEMU_LD_PREFIX` in the environment).
pub(super) const REEXEC_WRAPPER_VAR: &str = "TASKSTREAM_TEST_REEXEC_WRAPPER";

/// This test binary, run again (through [`REEXEC_WRAPPER_VAR`]'s program when it is set), with
/// `args`: the program and its arguments.
pub(super) fn this_binary_again(args: &[&str]) -> (std::path::PathBuf, Vec<OsString>) {
  let exe = std::env::current_exe().expect("current_exe");
  let args = args.iter().map(OsString::from);
  match std::env::var_os(REEXEC_WRAPPER_VAR) {
    Some(wrapper) => (
      wrapper.into(),
      std::iter::once(exe.into_os_string()).chain(args).collect(),
    ),
    None => (exe, args.collect()),
  }
}

/// [`this_binary_again`] as a `Command`.
pub(super) fn this_binary_command(args: &[&str]) -> std::process::Command {
  let (program, args) = this_binary_again(args);
  let mut command = std::process::Command::new(program);
  command.args(args);
  command
}

/// Spawns `command` (a test's helper process). On Windows under our spawn lock: std's spawn
/// inherits every inheritable handle, and a task spawn of a test running beside this one makes
/// its pipe ends inheritable for a moment (`process/windows/spawn.rs`).
pub(super) fn spawn_helper(command: &mut std::process::Command) -> std::process::Child {
  #[cfg(windows)]
  let child = crate::process::spawn_serialized(|| command.spawn());
  #[cfg(not(windows))]
  let child = command.spawn();
  child.expect("spawn a test helper")
}

/// This test binary re-executed as a keeper (see `keeper_entry`).
pub(super) fn keeper_program() -> KeeperProgram {
  let (program, args) = this_binary_again(&[
    "--exact",
    "persist::tests::keeper_entry",
    "--nocapture",
    "--test-threads=1",
  ]);
  KeeperProgram {
    program,
    args,
    env: vec![("TASKSTREAM_TEST_KEEPER".into(), "1".into())],
  }
}

/// `setsid <program>` in a test command, on a system without the `setsid`
/// program (macOS) done by perl's `POSIX::setsid` (same pid: it execs).
fn portable_setsid(command: &str) -> String {
  if cfg!(target_os = "linux") {
    command.to_owned()
  } else {
    command.replace(
      "setsid ",
      "perl -MPOSIX -e 'POSIX::setsid(); exec @ARGV or die' ",
    )
  }
}

/// The program and arguments that run a test command: `bash -c <command>` on Unix (see
/// [`portable_setsid`]), the platform shell (`cmd.exe /d /s /c <command>`) on Windows.
fn shell_command(command: &str) -> (String, Vec<String>) {
  if cfg!(windows) {
    let shell = crate::process::shell_config();
    let program =
      crate::process::resolve_program(&shell.program, std::env::var_os("PATH").as_deref())
        .expect("the shell is found");
    let mut args = shell.args_prefix;
    args.push(command.to_owned());
    (program.to_string_lossy().into_owned(), args)
  } else {
    (
      "/bin/bash".to_owned(),
      vec!["-c".to_owned(), portable_setsid(command)],
    )
  }
}

/// A keeper config running `command` ([`shell_command`]) in `dir`.
pub(super) fn config(
  dir: &StateDir,
  kind: TaskKind,
  id: &str,
  command: &str,
  lease_ms: u64,
) -> KeeperConfig {
  let task_tag = new_task_tag();
  let env = child_env(
    std::env::vars_os(),
    &EnvOptions {
      remove: vec!["TASKSTREAM_TEST_KEEPER".into(), KEEPER_TAG_VAR.into()],
      term: "dumb",
      overrides: Vec::new(),
      task_tag: task_tag.clone(),
    },
  );
  let (program, args) = shell_command(command);
  let output_path = match kind {
    TaskKind::Monitor => dir.files(id).log,
    TaskKind::Shell => dir.path().join(format!("shell-{id}.output")),
  };
  KeeperConfig {
    version: RECORD_VERSION,
    kind,
    id: id.to_owned(),
    state_dir: dir.path().to_string_lossy().into_owned(),
    command: command.to_owned(),
    description: format!("test {id}"),
    cwd: if cfg!(windows) {
      std::env::temp_dir().to_string_lossy().into_owned()
    } else {
      "/".to_owned()
    },
    program,
    args,
    env: env
      .into_iter()
      .map(|(k, v)| {
        (
          k.to_string_lossy().into_owned(),
          v.to_string_lossy().into_owned(),
        )
      })
      .collect(),
    task_tag,
    lease_ms,
    output_path: output_path.to_string_lossy().into_owned(),
    status_path: (kind == TaskKind::Shell).then(|| {
      dir
        .path()
        .join(format!("shell-{id}.status"))
        .to_string_lossy()
        .into_owned()
    }),
    max_output_bytes: 1 << 20,
    start_time: crate::clock::wall_ms() as u64,
    options: serde_json::json!({ "test": true }),
  }
}

/// Renews the lease of a state directory every 200 ms until dropped.
pub(super) struct Renewer {
  stop: Arc<AtomicBool>,
  thread: Option<JoinHandle<()>>,
}

impl Renewer {
  pub(super) fn start(dir: &Path) -> Self {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let dir = dir.to_path_buf();
    renew(&dir).expect("renew");
    let thread = std::thread::spawn(move || {
      while !flag.load(Ordering::Relaxed) {
        let _ = renew(&dir);
        std::thread::sleep(Duration::from_millis(200));
      }
    });
    Self {
      stop,
      thread: Some(thread),
    }
  }
}

impl Drop for Renewer {
  fn drop(&mut self) {
    self.stop.store(true, Ordering::Relaxed);
    if let Some(thread) = self.thread.take() {
      let _ = thread.join();
    }
  }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
pub(super) fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
  let deadline = Instant::now() + timeout;
  loop {
    if condition() {
      return true;
    }
    if Instant::now() >= deadline {
      return false;
    }
    std::thread::sleep(Duration::from_millis(20));
  }
}

/// The task's group as its keeper recorded it.
#[cfg(unix)]
pub(super) fn group_of(record: &TaskRecord) -> ProcessGroup {
  ProcessGroup {
    pgid: record.task.pgid,
    leader_start_time: record.task.start_time,
    task_tag: record.task.tag.clone(),
    cgroup: record.task.cgroup.as_ref().map(PathBuf::from),
    limits: None,
  }
}

/// Kills what a test left behind: the task's tree (by its recorded group
/// and tag) and the keeper (only if proved to be it).
pub(super) struct Cleanup(pub(super) Option<TaskRecord>);

impl Drop for Cleanup {
  fn drop(&mut self) {
    let Some(record) = self.0.take() else {
      return;
    };
    let keeper = &record.keeper;
    if crate::persist::identity::prove_with(
      keeper.pid,
      keeper.start_time,
      KEEPER_TAG_VAR,
      &keeper.tag,
    ) == Identity::Same
    {
      kill_proved(keeper.pid);
    }
    // On Windows the tree is the keeper's Job Object: it ended with the keeper.
    #[cfg(unix)]
    {
      let group = group_of(&record);
      if tree_alive(&group) {
        kill_now(&group);
      }
    }
  }
}

/// Kills the process `pid`, which the caller proved to be the one it recorded.
pub(super) fn kill_proved(pid: u32) {
  #[cfg(unix)]
  // SAFETY: kill with integer arguments, to a proved process.
  unsafe {
    libc::kill(pid as libc::pid_t, libc::SIGKILL);
  }
  #[cfg(windows)]
  {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{OpenProcess, TerminateProcess, PROCESS_TERMINATE};
    // SAFETY: plain arguments; the handle is closed below.
    unsafe {
      let handle = OpenProcess(PROCESS_TERMINATE, 0, pid);
      if !handle.is_null() {
        TerminateProcess(handle, 1);
        CloseHandle(handle);
      }
    }
  }
}

/// The end record, once the keeper wrote it (or `None` after `timeout`).
pub(super) fn wait_end(files: &TaskFiles, timeout: Duration) -> Option<EndRecord> {
  let mut end = None;
  wait_until(timeout, || {
    if let ReadRecord::Valid(record) = read_record::<EndRecord>(&files.end) {
      end = Some(record);
    }
    end.is_some()
  });
  end
}

/// The file's text, lossy; empty if unreadable.
pub(super) fn text(path: &Path) -> String {
  fs::read(path)
    .map(|b| String::from_utf8_lossy(&b).into_owned())
    .unwrap_or_default()
}

/// `(pid, start time)` of every `pid <n>` line of `text`.
#[cfg(unix)]
pub(super) fn reported_pids(text: &str) -> Vec<(u32, u64)> {
  text
    .lines()
    .filter_map(|line| line.strip_prefix("pid ")?.trim().parse().ok())
    .filter_map(|pid| Some((pid, proc_table::start_time(pid)?)))
    .collect()
}

/// The task's leader is still the recorded live process.
#[cfg(unix)]
pub(super) fn task_alive(record: &TaskRecord) -> bool {
  crate::persist::prove(record.task.pid, record.task.start_time, &record.task.tag) == Identity::Same
}

/// `scan`, again while it finds a task busy: a fork of this process by a test
/// running beside this one shares a lock this process just dropped until
/// that fork's exec closes it.
pub(super) fn scan_when_free(
  dir: &Path,
  kind: crate::persist::TaskKind,
) -> Vec<crate::persist::Found> {
  let deadline = Instant::now() + Duration::from_secs(10);
  loop {
    let found = crate::persist::scan(dir, kind).expect("scan");
    let busy = found
      .iter()
      .any(|f| matches!(f, crate::persist::Found::Busy { .. }));
    if !busy || Instant::now() >= deadline {
      return found;
    }
    drop(found);
    std::thread::sleep(Duration::from_millis(20));
  }
}

/// The keeper of `record`, proved by its start time and tag.
pub(super) fn keeper_identity(record: &TaskRecord) -> Identity {
  let k = &record.keeper;
  crate::persist::identity::prove_with(k.pid, k.start_time, KEEPER_TAG_VAR, &k.tag)
}

/// Launches `command` as a persisted task with a lease of `lease_ms`, from this process; the
/// record it answered is the one on disk.
pub(super) fn launch(
  dir: &StateDir,
  kind: TaskKind,
  id: &str,
  command: &str,
  lease_ms: u64,
) -> Cleanup {
  let started =
    crate::persist::launch_keeper(&keeper_program(), &config(dir, kind, id, command, lease_ms))
      .unwrap_or_else(|e| panic!("launch {id}: {e}"));
  assert_eq!(started.record.keeper.pid, started.keeper_pid);
  assert_eq!(
    read_record::<TaskRecord>(&dir.files(id).task),
    ReadRecord::Valid(started.record.clone())
  );
  Cleanup(Some(started.record))
}

/// The record a [`launch`] keeps for its cleanup.
pub(super) fn record(cleanup: &Cleanup) -> &TaskRecord {
  cleanup.0.as_ref().unwrap()
}

/// A short-lived host (`launcher_entry`, this binary run again) that launches `config`'s keeper
/// and then waits to be killed: the host, still running, and the keeper pid it printed.
pub(super) fn launch_through_a_host(
  dir: &StateDir,
  config: &KeeperConfig,
) -> (std::process::Child, u32) {
  use std::process::Stdio;
  let config_path = dir.path().join("launch.json");
  fs::write(&config_path, serde_json::to_vec(config).unwrap()).unwrap();
  let mut host = spawn_helper(
    this_binary_command(&[
      "--exact",
      "persist::tests::launcher_entry",
      "--nocapture",
      "--test-threads=1",
    ])
    .env("TASKSTREAM_TEST_LAUNCHER", &config_path)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null()),
  );
  let mut stdout = std::io::BufReader::new(host.stdout.take().unwrap());
  let line = super::read_line_where(&mut stdout, |l| l.starts_with("launched "));
  let Some(line) = line else {
    let _ = host.kill();
    let _ = host.wait();
    panic!("the launching host ended without launching");
  };
  (host, line["launched ".len()..].parse().unwrap())
}
