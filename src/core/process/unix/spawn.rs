//! Starting a task's child (CONTRACT.md §2.10 steps 3–4, §2.15 item 6, §4
//! items 6 and 21): `setsid`, default signal dispositions and an empty mask,
//! stdin from the null device, stdout and stderr as pipes, no other inherited
//! descriptor, the full environment given by the caller, and tracking before
//! the caller ever sees the child.
//!
//! On Linux with glibc ≥ 2.34 the child is started with `posix_spawn`
//! (`POSIX_SPAWN_SETSID`, `SETSIGDEF`, `SETSIGMASK`, `addchdir_np`,
//! `addclosefrom_np`), directly on the calling thread: glibc starts it with
//! `clone(CLONE_VM | CLONE_VFORK)`, so Node's page tables are neither copied
//! nor write-protected, which a `fork` of a large Node process costs on every
//! spawn (more than a millisecond, much of it on the JavaScript thread).
//! Elsewhere, or when those functions are missing at run time (the binary is
//! linked against an older glibc), a dedicated spawner thread forks and runs
//! the same steps in `pre_exec`, plus `PR_SET_PDEATHSIG` as a backstop. The
//! orphan guarantees do not rest on that backstop: the exit hook and the
//! watchdog kill every tracked group, leader included.
//!
//! **Terminal mode** (`SpawnRequest::terminal`, API.md §6.5, pty.rs): the
//! child gets a pseudo-terminal's slave as stdin, stdout and stderr and as
//! its controlling terminal, in the same new session and group (pgid = pid),
//! so every kill, the tracking, the cgroup, the tag and the watchdog apply
//! unchanged. `posix_spawn` has no action for `TIOCSCTTY`, but on Linux
//! opening a terminal without `O_NOCTTY` in a session leader that has none
//! makes it the controlling terminal, and glibc runs `POSIX_SPAWN_SETSID`
//! before the file actions: so the `posix_spawn` path opens the slave by
//! path onto fd 0 (`addopen`) and copies it to 1 and 2. The fork path opens
//! nothing by path: the slave is dup'ed onto 0, 1 and 2 before `pre_exec`,
//! which calls `setsid` then `ioctl(0, TIOCSCTTY)`.

use std::io;

use super::{SpawnRequest, SpawnedProcess};

/// Starts `request`. A failure (missing program or `cwd`, …) is the OS error,
/// whose `Display` is the text used in the `failed` notification; nothing is
/// tracked then. An invalid tag is an `InvalidInput` error.
pub fn spawn(request: SpawnRequest) -> io::Result<SpawnedProcess> {
  if !super::tag::is_valid_task_tag(&request.task_tag) {
    let message = format!("invalid task tag {:?}", request.task_tag);
    return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
  }
  if let Some(size) = request.terminal {
    size.check_not_empty()?;
  }
  // `limits` are entered by the child itself before it execs, each entry checked: the fork
  // path, whose `limit_dirs` refuses limits this host cannot enforce (cgroup_limits.rs).
  if request.limits.is_some_and(|l| !l.is_empty()) {
    return unix::spawn_on_spawner_thread(request);
  }
  // A bare program name is searched on the child's `PATH` by the fork path
  // (std's `Command`), which `posix_spawn` would not do.
  #[cfg(all(target_os = "linux", target_env = "gnu"))]
  if posix::available() && request.program.components().count() > 1 {
    return unix::spawn_with_posix_spawn(request);
  }
  unix::spawn_on_spawner_thread(request)
}

/// The fork path (spawner thread, `pre_exec`), whichever path [`spawn`]
/// takes on this machine, so tests cover both.
#[cfg(test)]
pub(super) fn spawn_forked(request: SpawnRequest) -> io::Result<SpawnedProcess> {
  unix::spawn_on_spawner_thread(request)
}

/// Whether [`spawn`] uses `posix_spawn` here (for a program given by path).
#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
pub(super) fn uses_posix_spawn() -> bool {
  posix::available()
}

mod unix {
  use std::fs::File;
  use std::io;
  use std::os::fd::{AsRawFd, OwnedFd};
  use std::os::unix::process::CommandExt;
  use std::panic::{catch_unwind, AssertUnwindSafe};
  use std::process::{Command, Stdio};
  use std::sync::mpsc::{self, Receiver, Sender, SyncSender};

  use once_cell::sync::Lazy;

  use crate::process::group::ProcessGroup;
  use crate::process::limits::{LimitDirs, TaskLimits};
  use crate::process::spawn::{Child, SpawnRequest, SpawnedProcess};
  use crate::process::terminal_handle::TerminalHandle;
  use crate::process::unix::cgroup::TaskCgroup;
  use crate::process::unix::{pre_exec, proc_table, pty, tracker};

  /// What the caller reads and writes: the pipes, or the terminal.
  pub(super) struct Streams {
    pub stdout: File,
    pub stderr: File,
    pub terminal: Option<TerminalHandle>,
  }

  /// Tracks the new leader and wraps it up for the caller.
  fn tracked(
    pid: u32,
    task_tag: String,
    cgroup: Option<TaskCgroup>,
    limits: Option<std::sync::Arc<TaskLimits>>,
    streams: Streams,
  ) -> SpawnedProcess {
    let group = ProcessGroup {
      pgid: pid,
      // The leader is our unreaped child: its stat exists even if it exited.
      leader_start_time: proc_table::start_time(pid),
      task_tag,
      // The child moves itself in before anything of the task runs (`child_setup` on the fork
      // path, the shell's first builtin on the posix_spawn path). Moving it again from here cost
      // the caller a cgroup migration, 10 to 20 ms of a blocked write on this kernel (measured
      // with strace: the whole of a start's time).
      cgroup: cgroup.map(TaskCgroup::entered_by_child),
      limits,
    };
    tracker::register(group.clone());
    SpawnedProcess {
      pid,
      group,
      stdout: streams.stdout,
      stderr: streams.stderr,
      child: Child { pid, status: None },
      terminal: streams.terminal,
    }
  }

  #[cfg(all(target_os = "linux", target_env = "gnu"))]
  pub(super) fn spawn_with_posix_spawn(request: SpawnRequest) -> io::Result<SpawnedProcess> {
    tracker::prepare();
    let cgroup = TaskCgroup::create(&request.task_tag);
    let spawned = match &cgroup {
      Some(cgroup) => super::posix::spawn(&entering_cgroup_first(&request, cgroup)),
      None => super::posix::spawn(&request),
    };
    match spawned {
      Ok((pid, streams)) => Ok(tracked(pid, request.task_tag, cgroup, None, streams)),
      Err(error) => {
        if let Some(cgroup) = cgroup {
          cgroup.discard();
        }
        Err(error)
      }
    }
  }

  /// `posix_spawn` cannot place the child in a cgroup (glibc 2.39's
  /// `posix_spawnattr_setcgroup_np` is too new to rely on), and moving it from
  /// here after the spawn races with its first fork when this thread is
  /// preempted. So the shell moves itself in first (`0` names the writer),
  /// with builtins only, before anything of the command runs: a `-c` command
  /// gets the move as a prefix on its first line (no extra `exec`, line
  /// numbers unchanged); any other request runs a one-line trampoline that
  /// moves itself in and then execs the real program with the real
  /// arguments (its `SHLVL` increment undone).
  #[cfg(all(target_os = "linux", target_env = "gnu"))]
  fn entering_cgroup_first(request: &SpawnRequest, cgroup: &TaskCgroup) -> SpawnRequest {
    let procs = cgroup.procs_path().to_string_lossy().into_owned();
    let mut args = request.args.clone();
    if let [.., flag, command] = args.as_mut_slice() {
      if flag == "-c" {
        let quoted = format!("'{}'", procs.replace('\'', r"'\''"));
        *command = format!("{{ echo 0 >{quoted}; }} 2>/dev/null; {command}");
        return SpawnRequest {
          args,
          ..request.clone()
        };
      }
    }
    const TRAMPOLINE: &str = r#"{ echo 0 >"$1"; } 2>/dev/null; shift; case $SHLVL in [1-9]*) SHLVL=$((SHLVL - 1)); export SHLVL ;; esac; exec "$@""#;
    let mut args = vec![
      "-c".to_owned(),
      TRAMPOLINE.to_owned(),
      "taskstream-cgroup".to_owned(),
      procs,
      request.program.to_string_lossy().into_owned(),
    ];
    args.extend(request.args.iter().cloned());
    SpawnRequest {
      args,
      ..request.clone()
    }
  }

  struct Job {
    request: SpawnRequest,
    reply: SyncSender<io::Result<SpawnedProcess>>,
  }

  /// The one thread that forks every child on the fallback path. It lives as
  /// long as the process, so `PR_SET_PDEATHSIG`, which fires when the forking
  /// *thread* exits, fires only when the whole host dies.
  static SPAWNER: Lazy<Result<Sender<Job>, String>> = Lazy::new(|| {
    let (sender, jobs) = mpsc::channel();
    std::thread::Builder::new()
      .name("taskstream-spawner".into())
      .spawn(move || serve(jobs))
      .map(|_| sender)
      .map_err(|e| e.to_string())
  });

  pub(super) fn spawn_on_spawner_thread(request: SpawnRequest) -> io::Result<SpawnedProcess> {
    let spawner = SPAWNER
      .as_ref()
      .map_err(|e| io::Error::other(format!("cannot start the spawner thread: {e}")))?;
    let (reply, answer) = mpsc::sync_channel(1);
    let gone = || io::Error::other("the spawner thread is gone");
    spawner.send(Job { request, reply }).map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
  }

  /// The spawner loop. A panic is caught per job: if it ended the thread, the
  /// kernel would SIGKILL every child it ever forked.
  fn serve(jobs: Receiver<Job>) {
    for Job { request, reply } in jobs {
      let result = catch_unwind(AssertUnwindSafe(|| spawn_forked(request)))
        .unwrap_or_else(|_| Err(io::Error::other("spawning panicked")));
      let _ = reply.send(result);
    }
  }

  fn spawn_forked(request: SpawnRequest) -> io::Result<SpawnedProcess> {
    tracker::prepare();
    // Opened here, on the spawner thread, which forks nothing meanwhile;
    // the caller's side is made before the spawn, so nothing fails after it.
    let pty = request.terminal.map(pty::open).transpose()?;
    let caller_side = match (&pty, request.terminal) {
      (Some(pty), Some(size)) => Some(pty::caller_side(pty, size)?),
      _ => None,
    };
    let cgroup = TaskCgroup::create(&request.task_tag);
    let limits = match limit_dirs(&request, cgroup.as_ref()) {
      Ok(limits) => limits,
      Err(error) => {
        if let Some(cgroup) = cgroup {
          cgroup.discard();
        }
        return Err(error);
      }
    };
    let spawned = limits
      .as_ref()
      .map(|(_, files)| files.iter().map(AsRawFd::as_raw_fd).collect())
      .unwrap_or_default();
    let spawned = command(
      &request,
      cgroup.as_ref().map(TaskCgroup::procs_fd),
      spawned,
      pty.as_ref(),
    )
    .and_then(|mut command| command.spawn());
    let limits = limits.map(|(dirs, _files)| {
      std::sync::Arc::new(TaskLimits {
        limits: request.limits.unwrap_or_default(),
        dirs,
      })
    });
    let mut child = match spawned {
      Ok(child) => child,
      Err(error) => {
        if let Some(cgroup) = cgroup {
          cgroup.discard();
        }
        #[cfg(target_os = "linux")]
        if let Some(task) = &limits {
          crate::process::unix::cgroup_limits::remove(&task.dirs);
        }
        return Err(error);
      }
    };
    // std's handle holds nothing else (no pidfd): our `Child` reaps by pid.
    // Only the child keeps the slave: its hang-up then means every process
    // of the task closed the terminal.
    drop(pty);
    let streams = match caller_side {
      Some((stdout, stderr, terminal)) => Streams {
        stdout,
        stderr,
        terminal: Some(terminal),
      },
      None => Streams {
        stdout: pipe_file(child.stdout.take().map(OwnedFd::from)),
        stderr: pipe_file(child.stderr.take().map(OwnedFd::from)),
        terminal: None,
      },
    };
    Ok(tracked(
      child.id(),
      request.task_tag,
      cgroup,
      limits,
      streams,
    ))
  }

  /// The directories of the request's `limits` (made and written now) and their
  /// `cgroup.procs`, open for the child to enter; `None` without limits.
  fn limit_dirs(
    request: &SpawnRequest,
    cgroup: Option<&TaskCgroup>,
  ) -> io::Result<Option<(LimitDirs, Vec<File>)>> {
    let Some(limits) = request.limits.filter(|l| !l.is_empty()) else {
      return Ok(None);
    };
    #[cfg(target_os = "linux")]
    {
      use crate::process::unix::cgroup_limits;
      let dirs = cgroup_limits::create(&limits, &request.task_tag, cgroup.map(TaskCgroup::dir))?;
      match cgroup_limits::procs_files(&dirs) {
        Ok(files) => Ok(Some((dirs, files))),
        Err(error) => {
          cgroup_limits::remove(&dirs);
          Err(error)
        }
      }
    }
    #[cfg(not(target_os = "linux"))]
    {
      let _ = (limits, cgroup);
      Err(io::Error::new(
        io::ErrorKind::Unsupported,
        crate::process::LIMITS_UNSUPPORTED,
      ))
    }
  }

  fn pipe_file(fd: Option<OwnedFd>) -> File {
    File::from(fd.expect("stdout and stderr are piped"))
  }

  fn command(
    request: &SpawnRequest,
    cgroup_procs: Option<libc::c_int>,
    limit_procs: Vec<libc::c_int>,
    pty: Option<&pty::Pty>,
  ) -> io::Result<Command> {
    let mut command = Command::new(&request.program);
    command
      .args(&request.args)
      .current_dir(&request.cwd)
      .env_clear()
      .envs(request.env.iter().map(|(name, value)| (name, value)));
    match pty {
      // std dup2s these onto 0, 1 and 2 before `pre_exec` runs.
      Some(pty) => command
        .stdin(Stdio::from(pty.slave.try_clone()?))
        .stdout(Stdio::from(pty.slave.try_clone()?))
        .stderr(Stdio::from(pty.slave.try_clone()?)),
      None => command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped()),
    };
    let parent = std::process::id() as libc::pid_t;
    let terminal = pty.is_some();
    // SAFETY: `child_setup` only makes async-signal-safe calls (pre_exec.rs).
    unsafe {
      command.pre_exec(move || child_setup(parent, cgroup_procs, &limit_procs, terminal));
    }
    Ok(command)
  }

  /// In the child: into the task's cgroup (before anything can fork), own
  /// session and group (with fd 0, the terminal's slave, as controlling
  /// terminal in terminal mode), default signal handling, no inherited
  /// descriptors, and death with the host as a backstop.
  fn child_setup(
    parent: libc::pid_t,
    cgroup_procs: Option<libc::c_int>,
    limit_procs: &[libc::c_int],
    terminal: bool,
  ) -> io::Result<()> {
    if let Some(fd) = cgroup_procs {
      pre_exec::enter_cgroup(fd);
    }
    // The limits' cgroups: a failed entry fails the spawn.
    for &fd in limit_procs {
      pre_exec::enter_limit_cgroup(fd)?;
    }
    pre_exec::new_session()?;
    if terminal {
      pty::take_controlling_terminal()?;
    }
    pre_exec::reset_signals();
    pre_exec::close_inherited_fds_on_exec();
    pre_exec::die_with_parent(parent)
  }
}

/// `posix_spawn` with the steps of the fork path, for glibc ≥ 2.34.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod posix {
  use std::ffi::{CString, OsStr};
  use std::fs::File;
  use std::io;
  use std::mem::MaybeUninit;
  use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
  use std::os::unix::ffi::OsStrExt;

  use once_cell::sync::Lazy;

  use super::unix::Streams;
  use crate::process::spawn::SpawnRequest;
  use crate::process::unix::pty;

  type FileActions = libc::posix_spawn_file_actions_t;
  type AddChdir = unsafe extern "C" fn(*mut FileActions, *const libc::c_char) -> libc::c_int;
  type AddClosefrom = unsafe extern "C" fn(*mut FileActions, libc::c_int) -> libc::c_int;

  /// The two GNU extensions, looked up at run time: the prebuilt binary is
  /// linked against an old glibc (napi-rs cross toolchain), where they do not
  /// exist. `addclosefrom_np` (2.34) also vouches for `POSIX_SPAWN_SETSID`
  /// (2.26) and for exec errors being reported to the parent (2.24).
  struct Extensions {
    add_chdir: AddChdir,
    add_closefrom: AddClosefrom,
  }

  static EXTENSIONS: Lazy<Option<Extensions>> = Lazy::new(|| {
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names; a non-null
    // result is the glibc function of that name, whose signature is declared
    // above exactly as in <spawn.h>.
    unsafe {
      let chdir = libc::dlsym(
        libc::RTLD_DEFAULT,
        c"posix_spawn_file_actions_addchdir_np".as_ptr(),
      );
      let closefrom = libc::dlsym(
        libc::RTLD_DEFAULT,
        c"posix_spawn_file_actions_addclosefrom_np".as_ptr(),
      );
      if chdir.is_null() || closefrom.is_null() {
        return None;
      }
      Some(Extensions {
        add_chdir: std::mem::transmute::<*mut libc::c_void, AddChdir>(chdir),
        add_closefrom: std::mem::transmute::<*mut libc::c_void, AddClosefrom>(closefrom),
      })
    }
  });

  pub(super) fn available() -> bool {
    EXTENSIONS.is_some()
  }

  /// A nonzero return of a `posix_spawn*` function is the error number.
  fn check(code: libc::c_int) -> io::Result<()> {
    match code {
      0 => Ok(()),
      errno => Err(io::Error::from_raw_os_error(errno)),
    }
  }

  fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
      io::Error::new(
        io::ErrorKind::InvalidInput,
        "nul byte found in a program path, argument, directory or environment entry",
      )
    })
  }

  /// A `pipe2(O_CLOEXEC)` as (read end, write end). The write end, which the
  /// child gets as stdout or stderr, is moved above 2: `dup2` onto 1 or 2
  /// must never overwrite the other pipe's write end.
  fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
      return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and ours alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if write.as_raw_fd() > 2 {
      return Ok((read, write));
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates an open descriptor of ours.
    let moved = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved == -1 {
      return Err(io::Error::last_os_error());
    }
    // SAFETY: fcntl returned a new open descriptor that nothing else owns.
    Ok((read, unsafe { OwnedFd::from_raw_fd(moved) }))
  }

  /// Initialised file actions, destroyed on drop.
  struct Actions(Box<MaybeUninit<FileActions>>);

  impl Actions {
    fn new() -> io::Result<Actions> {
      let mut actions = Box::new(MaybeUninit::<FileActions>::uninit());
      // SAFETY: init writes a valid object into the allocation.
      check(unsafe { libc::posix_spawn_file_actions_init(actions.as_mut_ptr()) })?;
      Ok(Actions(actions))
    }
    fn as_mut_ptr(&mut self) -> *mut FileActions {
      self.0.as_mut_ptr()
    }
  }

  impl Drop for Actions {
    fn drop(&mut self) {
      // SAFETY: initialised in `new`, destroyed once.
      unsafe { libc::posix_spawn_file_actions_destroy(self.0.as_mut_ptr()) };
    }
  }

  /// Initialised spawn attributes, destroyed on drop.
  struct Attributes(Box<MaybeUninit<libc::posix_spawnattr_t>>);

  impl Attributes {
    fn new() -> io::Result<Attributes> {
      let mut attributes = Box::new(MaybeUninit::<libc::posix_spawnattr_t>::uninit());
      // SAFETY: init writes a valid object into the allocation.
      check(unsafe { libc::posix_spawnattr_init(attributes.as_mut_ptr()) })?;
      Ok(Attributes(attributes))
    }
    fn as_mut_ptr(&mut self) -> *mut libc::posix_spawnattr_t {
      self.0.as_mut_ptr()
    }
  }

  impl Drop for Attributes {
    fn drop(&mut self) {
      // SAFETY: initialised in `new`, destroyed once.
      unsafe { libc::posix_spawnattr_destroy(self.0.as_mut_ptr()) };
    }
  }

  /// Own session (and so own group, no controlling terminal), every signal
  /// at its default action (Node ignores SIGPIPE, and an ignored disposition
  /// survives exec), an empty signal mask.
  fn attributes() -> io::Result<Attributes> {
    let mut attributes = Attributes::new()?;
    let mut all = MaybeUninit::<libc::sigset_t>::uninit();
    let mut none = MaybeUninit::<libc::sigset_t>::uninit();
    let flags = libc::POSIX_SPAWN_SETSID
      | (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short;
    // SAFETY: the sets are initialised by sigfillset/sigemptyset before use;
    // every pointer is valid for the duration of its call.
    unsafe {
      libc::sigfillset(all.as_mut_ptr());
      libc::sigdelset(all.as_mut_ptr(), libc::SIGKILL);
      libc::sigdelset(all.as_mut_ptr(), libc::SIGSTOP);
      add_internal_signals(&mut *all.as_mut_ptr());
      libc::sigemptyset(none.as_mut_ptr());
      check(libc::posix_spawnattr_setsigdefault(
        attributes.as_mut_ptr(),
        all.as_ptr(),
      ))?;
      check(libc::posix_spawnattr_setsigmask(
        attributes.as_mut_ptr(),
        none.as_ptr(),
      ))?;
      check(libc::posix_spawnattr_setflags(
        attributes.as_mut_ptr(),
        flags,
      ))?;
    }
    Ok(attributes)
  }

  /// Adds glibc's internal signals (32 and 33: thread cancellation, setxid)
  /// to `set`. `sigfillset` leaves them out and `sigaddset` refuses them, so
  /// without this the child would set them to SIG_IGN, which survives exec;
  /// a forked child's exec resets them to SIG_DFL like every handled signal.
  /// glibc's child reads the set's bits directly, so they are set directly.
  fn add_internal_signals(set: &mut libc::sigset_t) {
    const WORD_BITS: usize = libc::c_ulong::BITS as usize;
    let words = std::mem::size_of::<libc::sigset_t>() / std::mem::size_of::<libc::c_ulong>();
    // SAFETY: glibc's sigset_t is an array of `words` unsigned longs, bit
    // `n - 1` standing for signal `n`; the slice covers exactly `*set`.
    let bits = unsafe {
      std::slice::from_raw_parts_mut(set as *mut libc::sigset_t as *mut libc::c_ulong, words)
    };
    for signal in 32..libc::SIGRTMIN() {
      let bit = (signal - 1) as usize;
      bits[bit / WORD_BITS] |= 1 << (bit % WORD_BITS);
    }
  }

  /// Starts `request` and returns its pid and the read ends of its stdout
  /// and stderr pipes (or its terminal). An error of the child's setup (a
  /// missing `cwd`) or of its exec (a missing program) is returned as the
  /// OS error.
  pub(super) fn spawn(request: &SpawnRequest) -> io::Result<(u32, Streams)> {
    let extensions = EXTENSIONS.as_ref().ok_or(io::ErrorKind::Unsupported)?;
    let program = c_string(request.program.as_os_str().as_bytes())?;
    let cwd = c_string(request.cwd.as_os_str().as_bytes())?;
    let mut argv = vec![program.clone()];
    for arg in &request.args {
      argv.push(c_string(arg.as_bytes())?);
    }
    let mut envp = Vec::with_capacity(request.env.len());
    for (name, value) in &request.env {
      let mut entry = Vec::with_capacity(name.len() + value.len() + 1);
      entry.extend_from_slice(name.as_bytes());
      entry.push(b'=');
      entry.extend_from_slice(OsStr::as_bytes(value));
      envp.push(c_string(&entry)?);
    }
    let argv_ptrs = null_terminated(&argv);
    let envp_ptrs = null_terminated(&envp);
    if let Some(size) = request.terminal {
      return spawn_in_terminal(extensions, &program, &cwd, &argv_ptrs, &envp_ptrs, size);
    }

    let (stdout_read, stdout_write) = pipe()?;
    let (stderr_read, stderr_write) = pipe()?;
    let mut actions = Actions::new()?;
    // SAFETY: `actions` is initialised; the paths are NUL-terminated and
    // outlive the posix_spawn call below; the descriptors are open.
    unsafe {
      check(libc::posix_spawn_file_actions_addopen(
        actions.as_mut_ptr(),
        0,
        c"/dev/null".as_ptr(),
        libc::O_RDONLY,
        0,
      ))?;
      check(libc::posix_spawn_file_actions_adddup2(
        actions.as_mut_ptr(),
        stdout_write.as_raw_fd(),
        1,
      ))?;
      check(libc::posix_spawn_file_actions_adddup2(
        actions.as_mut_ptr(),
        stderr_write.as_raw_fd(),
        2,
      ))?;
      check((extensions.add_chdir)(actions.as_mut_ptr(), cwd.as_ptr()))?;
      // No descriptor but stdio reaches the program (in particular no write
      // end of the watchdog's pipe, whose EOF must mean the host is gone).
      check((extensions.add_closefrom)(actions.as_mut_ptr(), 3))?;
    }
    let pid = run(&program, &mut actions, &argv_ptrs, &envp_ptrs)?;
    // Only the child keeps the write ends: EOF on the read ends then means
    // every process holding them is done with them.
    drop((stdout_write, stderr_write));
    let streams = Streams {
      stdout: File::from(stdout_read),
      stderr: File::from(stderr_read),
      terminal: None,
    };
    Ok((pid, streams))
  }

  /// The terminal variant: the slave is opened by path onto fd 0 after
  /// `setsid` (so it becomes the controlling terminal) and copied to 1, 2.
  fn spawn_in_terminal(
    extensions: &Extensions,
    program: &CString,
    cwd: &CString,
    argv: &[*mut libc::c_char],
    envp: &[*mut libc::c_char],
    size: crate::process::terminal_size::TerminalSize,
  ) -> io::Result<(u32, Streams)> {
    let pty = pty::open(size)?;
    // Made before the spawn: once the child runs, nothing may fail.
    let (stdout, stderr, terminal) = pty::caller_side(&pty, size)?;
    let mut actions = Actions::new()?;
    // SAFETY: `actions` is initialised; the paths are NUL-terminated and
    // outlive the posix_spawn call below.
    unsafe {
      check(libc::posix_spawn_file_actions_addopen(
        actions.as_mut_ptr(),
        0,
        pty.slave_path.as_ptr(),
        libc::O_RDWR,
        0,
      ))?;
      check(libc::posix_spawn_file_actions_adddup2(
        actions.as_mut_ptr(),
        0,
        1,
      ))?;
      check(libc::posix_spawn_file_actions_adddup2(
        actions.as_mut_ptr(),
        0,
        2,
      ))?;
      check((extensions.add_chdir)(actions.as_mut_ptr(), cwd.as_ptr()))?;
      check((extensions.add_closefrom)(actions.as_mut_ptr(), 3))?;
    }
    let pid = run(program, &mut actions, argv, envp)?;
    // Only the child keeps the slave: its hang-up then means every process
    // of the task closed the terminal. (Ours was open until now so that the
    // terminal never hung up before the child opened it.)
    drop(pty);
    Ok((
      pid,
      Streams {
        stdout,
        stderr,
        terminal: Some(terminal),
      },
    ))
  }

  /// `posix_spawn` with our attributes; the new pid.
  fn run(
    program: &CString,
    actions: &mut Actions,
    argv: &[*mut libc::c_char],
    envp: &[*mut libc::c_char],
  ) -> io::Result<u32> {
    let mut attributes = attributes()?;
    let mut pid: libc::pid_t = 0;
    // SAFETY: every pointer is valid for the call: `program`, the argv and
    // envp arrays (NUL-terminated strings, null-terminated arrays), the
    // initialised file actions and attributes.
    check(unsafe {
      libc::posix_spawn(
        &mut pid,
        program.as_ptr(),
        actions.as_mut_ptr(),
        attributes.as_mut_ptr(),
        argv.as_ptr(),
        envp.as_ptr(),
      )
    })?;
    Ok(pid as u32)
  }

  fn null_terminated(strings: &[CString]) -> Vec<*mut libc::c_char> {
    strings
      .iter()
      .map(|s| s.as_ptr() as *mut libc::c_char)
      .chain(std::iter::once(std::ptr::null_mut()))
      .collect()
  }
}
