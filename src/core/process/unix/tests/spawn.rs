//! Spawning real children: pipes, exit status, session, environment, errors,
//! descriptor hygiene. Each test runs through `spawn` (`posix_spawn` on
//! Linux with glibc ≥ 2.34) and through the fork path, which must agree.

use std::io::{self, BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

use super::super::spawn::spawn_forked;
use super::super::test_support::*;
use super::super::*;

type Spawner = fn(SpawnRequest) -> io::Result<SpawnedProcess>;

/// Both ways of starting a child, by name.
const SPAWNERS: [(&str, Spawner); 2] = [("spawn", spawn), ("fork path", spawn_forked)];

#[test]
fn spawn_pipes_output_and_reports_the_exit_code() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(request("printf 'out\\n'; printf 'err\\n' >&2; exit 3")).unwrap();
    // The leader is our unreaped child, so its stat survives its exit.
    assert_eq!(
      proc_table::pgid(p.pid),
      Some(p.pid),
      "{name}: setsid made it a group leader"
    );
    assert_eq!(p.group.pgid, p.pid);
    assert_eq!(p.child.id(), p.pid);
    assert_eq!(p.group.leader_start_time, proc_table::start_time(p.pid));
    assert!(tracked_groups().contains(&p.group));
    assert_eq!(read_all(&p.stdout), "out\n");
    assert_eq!(read_all(&p.stderr), "err\n");
    let status = ExitStatusInfo::from(p.child.wait().unwrap());
    let exited = ExitStatusInfo {
      code: Some(3),
      signal: None,
    };
    assert_eq!(status, exited, "{name}");
    // Reaped once; asking again repeats the status.
    assert_eq!(ExitStatusInfo::from(p.child.wait().unwrap()), exited);
    assert_eq!(
      p.child.try_wait().unwrap().map(ExitStatusInfo::from),
      Some(exited)
    );
    assert!(!tree_alive(&p.group));
    assert!(forget_if_dead(&p.group));
    assert!(!tracked_groups().contains(&p.group));
  }
}

#[test]
fn try_wait_sees_a_running_child_then_its_exit() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let mut p = spawner(request("echo ready; exec sleep 30")).unwrap();
    assert!(p.child.try_wait().unwrap().is_none(), "{name}");
    // Under qemu-user, `posix_spawn`'s vfork is a plain fork and returns
    // before the child's `setsid`: a kill sent then finds no group of ours.
    // The child's first line says it runs in its own session.
    let mut line = String::new();
    BufReader::new(&p.stdout).read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n", "{name}");
    assert!(p.child.try_wait().unwrap().is_none(), "{name}");
    kill_now(&p.group);
    let status = ExitStatusInfo::from(p.child.wait().unwrap());
    assert_eq!(status.signal, Some(libc::SIGKILL), "{name}");
  }
}

#[test]
fn child_gets_the_default_environment() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let mut req = request(
      r#"printf '%s|' "$TERM" "$PAGER" "${GIT_PAGER-none}" "$TASKSTREAM_TASK_ID" "$MY_OVERRIDE" "${QWEN_SERVER_TOKEN-removed}""#,
    );
    let extra = vec![
      ("QWEN_SERVER_TOKEN".into(), "secret".into()),
      ("PAGER".into(), "less".into()),
      ("GIT_PAGER".into(), "delta".into()),
    ];
    req.env = default_env(&req.task_tag, extra);
    let tag = req.task_tag.clone();
    let mut p = spawner(req).unwrap();
    let expected = format!("dumb|cat|delta|{tag}|1|removed|");
    assert_eq!(read_all(&p.stdout), expected, "{name}");
    assert!(p.child.wait().unwrap().success());
  }
}

#[test]
fn child_is_in_its_own_session_with_default_signals() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    // `trap` prints nothing for signals at their default action; an ignored
    // SIGPIPE (as Node sets it) would print `trap -- '' SIGPIPE`.
    let script = "trap; read -r _ _ _ _ pgid sid _ < /proc/$$/stat; echo $pgid $sid";
    let mut p = spawner(request(script)).unwrap();
    let output = read_all(&p.stdout);
    assert!(!output.contains("trap"), "{name}: {output}");
    assert_eq!(
      output,
      format!("{0} {0}\n", p.pid),
      "{name}: pgid and session id"
    );
    assert!(p.child.wait().unwrap().success());
  }
}

/// The program starts with stdin on the null device, an empty signal mask
/// even if the spawning thread blocks signals, no ignored signal (this test
/// process ignores SIGPIPE, as Node does), and no descriptor beyond stdio
/// even if the host holds one without close-on-exec.
#[test]
fn child_gets_null_stdin_an_empty_mask_and_no_inherited_descriptor() {
  let _serial = serial();
  let file = std::fs::File::open("/proc/self/stat").unwrap();
  // SAFETY: dup of an open descriptor; the copy (without CLOEXEC) is closed below.
  let inheritable = unsafe { libc::dup(file.as_raw_fd()) };
  assert!(inheritable > 2);
  let mut usr1 = nix::sys::signal::SigSet::empty();
  usr1.add(Signal::SIGUSR1);
  usr1.thread_block().unwrap();
  for (name, spawner) in SPAWNERS {
    // `exec` keeps bash's own mask and dispositions out of the picture: the
    // program sees what the spawn gave bash.
    let script = format!(
      "[ -e /proc/$$/fd/{inheritable} ] && echo leaked; readlink /proc/$$/fd/0; \
       exec grep -E '^Sig(Blk|Ign)' /proc/self/status"
    );
    let mut p = spawner(request(&script)).unwrap();
    let output = read_all(&p.stdout);
    assert!(p.child.wait().unwrap().success());
    let field = |key: &str| {
      let line = output.lines().find_map(|l| l.strip_prefix(key));
      u64::from_str_radix(
        line.unwrap_or_else(|| panic!("{name}: {output}")).trim(),
        16,
      )
      .unwrap()
    };
    assert!(output.starts_with("/dev/null\n"), "{name}: {output}");
    assert_eq!(field("SigBlk:"), 0, "{name}: {output}");
    // The fork path cannot reset libc's internal signals 32 and 33 (libc
    // refuses them), which an environment may hand us ignored.
    let internal = if name == "fork path" { 0b11 << 31 } else { 0 };
    assert_eq!(field("SigIgn:") & !internal, 0, "{name}: {output}");
  }
  usr1.thread_unblock().unwrap();
  // SAFETY: closes the copy made above, once.
  unsafe { libc::close(inheritable) };
}

#[test]
fn spawn_failures_are_os_errors_and_track_nothing() {
  let _serial = serial();
  for (name, spawner) in SPAWNERS {
    let mut missing_cwd = request("exit 0");
    missing_cwd.cwd = "/nonexistent/taskstream-test-dir".into();
    let tag = missing_cwd.task_tag.clone();
    let error = spawner(missing_cwd).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound, "{name}: {error}");
    assert!(
      error.to_string().contains("No such file or directory"),
      "{name}: {error}"
    );
    assert!(tracked_groups().iter().all(|g| g.task_tag != tag));

    let mut missing_program = request("exit 0");
    missing_program.program = "/nonexistent/taskstream-bash".into();
    let tag = missing_program.task_tag.clone();
    let error = spawner(missing_program).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound, "{name}: {error}");
    assert!(tracked_groups().iter().all(|g| g.task_tag != tag));

    let plain_file =
      std::env::temp_dir().join(format!("taskstream-not-executable-{}", std::process::id()));
    std::fs::write(&plain_file, "exit 0\n").unwrap();
    let mut not_executable = request("exit 0");
    not_executable.program = plain_file.clone();
    let error = spawner(not_executable).unwrap_err();
    std::fs::remove_file(&plain_file).unwrap();
    assert_eq!(
      error.kind(),
      io::ErrorKind::PermissionDenied,
      "{name}: {error}"
    );

    let mut nul = request("exit 0");
    nul.args.push("a\0b".into());
    let error = spawner(nul).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{name}: {error}");
  }

  let mut bad_tag = request("exit 0");
  bad_tag.task_tag = "two words".into();
  assert_eq!(
    spawn(bad_tag).unwrap_err().kind(),
    io::ErrorKind::InvalidInput
  );
}

#[test]
fn spawning_and_reaping_leaks_no_descriptors() {
  let _serial = serial();
  // The first spawn starts the watchdog (one pipe, kept for the process).
  let mut warm_up = spawn_script("exit 0");
  warm_up.child.wait().unwrap();
  drop(warm_up);
  let before = open_fds();
  let mut pipes = Vec::new();
  for (_, spawner) in SPAWNERS {
    for _ in 0..5 {
      let mut p = spawner(request("printf x; printf y >&2")).unwrap();
      pipes.push(format!("pipe:[{}]", p.stdout.metadata().unwrap().ino()));
      pipes.push(format!("pipe:[{}]", p.stderr.metadata().unwrap().ino()));
      assert_eq!(read_all(&p.stdout), "x");
      assert_eq!(read_all(&p.stderr), "y");
      p.child.wait().unwrap();
      let mut failing = request("exit 0");
      failing.cwd = "/nonexistent/taskstream-test-dir".into();
      assert!(spawner(failing).is_err());
      // Terminal mode: the master copies (reader, handle) and the empty
      // stderr pipe go with the task; no slave stays in the parent.
      let mut t = spawner(SpawnRequest {
        terminal: Some(crate::terminal::TerminalSize::DEFAULT),
        ..request("printf z")
      })
      .unwrap();
      pipes.push(format!("pipe:[{}]", t.stderr.metadata().unwrap().ino()));
      t.child.wait().unwrap();
      let mut failing = request("exit 0");
      failing.cwd = "/nonexistent/taskstream-test-dir".into();
      failing.terminal = Some(crate::terminal::TerminalSize::DEFAULT);
      assert!(spawner(failing).is_err());
    }
  }
  let after = open_fds();
  let leaked: Vec<&String> = after
    .values()
    .filter(|t| pipes.contains(t) || *t == "/dev/ptmx" || t.starts_with("/dev/pts/"))
    .filter(|t| !before.values().any(|b| b == *t))
    .collect();
  assert!(
    leaked.is_empty(),
    "child pipes or terminals still open: {leaked:?}"
  );
  // Other modules' tests may open a few files meanwhile; ten leaking spawns
  // (or failed ones) would add at least ten.
  assert!(
    after.len() <= before.len() + 3,
    "before {before:?}\nafter {after:?}"
  );
}

/// With glibc ≥ 2.34 `spawn` must take the `posix_spawn` path (a `fork` of a
/// large host costs a millisecond or more per spawn).
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_2_34_uses_posix_spawn() {
  // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
  let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
  let version = version.to_str().unwrap();
  let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
  let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
  assert_eq!(
    super::super::spawn::uses_posix_spawn(),
    (major, minor) >= (2, 34),
    "glibc {version}"
  );
}
