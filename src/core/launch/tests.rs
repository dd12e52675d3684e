//! The launch path against real processes (Linux).

use std::time::{Duration, Instant};

use super::*;

fn request<'a>(command: &'a str, cwd: &'a Path, remove_env: &'a [String]) -> ShellCommand<'a> {
  ShellCommand {
    command,
    cwd,
    env: &[],
    remove_env,
    term: Term::Monitor,
    terminal: None,
    limits: None,
  }
}

fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsString> {
  env.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
  let deadline = Instant::now() + timeout;
  while !condition() {
    if Instant::now() >= deadline {
      return false;
    }
    std::thread::sleep(Duration::from_millis(10));
  }
  true
}

#[test]
fn the_shell_program_runs_the_command_with_the_kind_s_term_and_without_removed_names() {
  let cwd = std::env::temp_dir();
  let remove = vec!["PATH".to_owned()];
  let overrides = [("MY_VAR".to_owned(), "mine".to_owned())];
  let monitor = ShellCommand {
    env: &overrides,
    ..request("echo hi", &cwd, &remove)
  };
  let program = shell_program(&monitor).expect("bash is on PATH");
  assert!(program.program.ends_with("bash"));
  assert_eq!(program.args, ["-c", "echo hi"]);
  assert_eq!(lookup(&program.env, "PATH"), None);
  assert_eq!(lookup(&program.env, "TERM").unwrap(), "dumb");
  assert_eq!(lookup(&program.env, "MY_VAR").unwrap(), "mine");
  assert_eq!(
    lookup(&program.env, process::TASK_TAG_VAR).unwrap(),
    program.task_tag.as_str()
  );
  let terminal = ShellCommand {
    terminal: Some(TerminalSize { cols: 80, rows: 24 }),
    ..monitor
  };
  let term = shell_program(&terminal).unwrap();
  assert_eq!(lookup(&term.env, "TERM").unwrap(), TERMINAL_TERM);
  let shell = ShellCommand {
    term: Term::Shell,
    ..monitor
  };
  let shell = shell_program(&shell).unwrap();
  assert_eq!(lookup(&shell.env, "TERM").unwrap(), "xterm-256color");
  assert_ne!(shell.task_tag, program.task_tag);
}

#[test]
fn a_launched_task_that_is_never_committed_is_killed_when_its_guard_drops() {
  let cwd = std::env::temp_dir();
  let remove = default_remove_env();
  let launched = launch_monitor(&request("sleep 30", &cwd, &remove)).expect("launch");
  let group = launched.group().expect("a spawned tree").clone();
  assert!(process::tree_alive(&group));
  drop(launched);
  assert!(wait_until(
    Duration::from_secs(10),
    || !process::tree_alive(&group)
  ));
}

#[test]
fn an_output_file_that_cannot_be_opened_starts_nothing_and_fails_with_the_open_error() {
  let dir = std::env::temp_dir();
  let remove = default_remove_env();
  let request = ShellCommand {
    term: Term::Shell,
    ..request("sleep 30", &dir, &remove)
  };
  // A directory at the output path.
  let Err(error) = launch_shell(&request, &dir, 1024, None) else {
    panic!("a directory is not an output file");
  };
  assert!(!error.message.is_empty());
  assert_eq!(error.end, TaskEnd::io_error(&error.message));
}

#[test]
fn one_request_starts_either_kind_and_a_persisted_terminal_task_is_refused_with_its_state_forgotten(
) {
  let dir = std::env::temp_dir();
  let remove = default_remove_env();
  // A monitor, contained: running, and killed when its guard drops uncommitted.
  let monitor = launch(LaunchRequest {
    command: request("sleep 30", &dir, &remove),
    kind: LaunchKind::Monitor,
    kept: None,
  })
  .expect("launch")
  .into_monitor();
  let group = monitor.group().expect("a contained task's group").clone();
  // (Under qemu-user a spawned child may be looked at before its setsid: wait for the group.)
  assert!(wait_until(Duration::from_secs(10), || process::tree_alive(
    &group
  )));
  drop(monitor);
  assert!(wait_until(
    Duration::from_secs(10),
    || !process::tree_alive(&group)
  ));
  // A shell whose output file cannot be opened: nothing starts, the open error is the end.
  let Err(error) = launch(LaunchRequest {
    command: ShellCommand {
      term: Term::Shell,
      ..request("sleep 30", &dir, &remove)
    },
    kind: LaunchKind::Shell {
      output_path: &dir,
      status_path: "unused",
      max_output_bytes: 1024,
      resume: None,
    },
    kept: None,
  })
  .and_then(Launched::into_shell) else {
    panic!("a directory is not an output file");
  };
  assert_eq!(error.end, TaskEnd::io_error(&error.message));
  // `persist` with a terminal: refused before any keeper starts, the lock and state let go.
  let state = dir.join(format!("taskstream-launch-kept-{}", std::process::id()));
  let _ = std::fs::remove_dir_all(&state);
  crate::persist::ensure_state_dir(&state).unwrap();
  let crate::persist::TryLock::Acquired(lock) =
    crate::persist::AdoptionLock::try_acquire(&state, "mon_1").unwrap()
  else {
    panic!("the lock is free");
  };
  let lock_path = lock.path().to_path_buf();
  let persist = Persist {
    state_dir: state.clone(),
    lease_ms: 60_000,
  };
  let Err(error) = launch(LaunchRequest {
    command: ShellCommand {
      terminal: Some(TerminalSize { cols: 80, rows: 24 }),
      ..request("sleep 30", &dir, &remove)
    },
    kind: LaunchKind::Monitor,
    kept: Some(Kept {
      persist: &persist,
      link: Arc::new(crate::persist::KeeperLink::new(&state, "mon_1", lock)),
      id: "mon_1",
      description: "x",
      start_time: 0.0,
      max_output_bytes: 1024,
      options: TaskOptions::Shell(Default::default()),
    }),
  }) else {
    panic!("a persisted terminal task must be refused");
  };
  assert!(error.message.contains("terminal"), "{}", error.message);
  assert!(!lock_path.exists());
  assert!(matches!(
    crate::persist::AdoptionLock::try_acquire(&state, "mon_1").unwrap(),
    crate::persist::TryLock::Acquired(_)
  ));
  let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn an_adopted_task_follows_from_where_it_stands_and_stays_on_its_lease_when_dropped() {
  let state = std::env::temp_dir().join(format!("taskstream-launch-adopt-{}", std::process::id()));
  let _ = std::fs::remove_dir_all(&state);
  crate::persist::ensure_state_dir(&state).unwrap();
  let link = |id: &str| {
    let crate::persist::TryLock::Acquired(lock) =
      crate::persist::AdoptionLock::try_acquire(&state, id).unwrap()
    else {
      panic!("the lock of {id} is free");
    };
    Arc::new(crate::persist::KeeperLink::new(&state, id, lock))
  };
  let followed_from = |task: &Option<Task>| match task {
    Some(Task::Kept {
      from,
      adopted: true,
      ..
    }) => *from,
    _ => panic!("an adopted keeper's task"),
  };
  // A monitor goes on from the last host's cursor; what its keeper logged since is counted up
  // to the log's size now (a cursor past the log is held to it).
  let monitor = link("mon_a");
  std::fs::write(&monitor.files.log, [b'x'; 100]).unwrap();
  for (cursor, offset) in [(40, 40), (500, 100)] {
    crate::persist::link::write_cursor(&monitor.files.cursor, "mon_a", cursor).unwrap();
    let adopted = adopt(Adoption {
      id: "mon_a",
      pid: 4242,
      link: Arc::clone(&monitor),
      kind: AdoptKind::Monitor,
    })
    .into_monitor();
    assert_eq!((adopted.pid(), adopted.group().is_none()), (4242, true));
    let expected = FollowFrom {
      offset,
      missed_until: 100,
    };
    assert_eq!(followed_from(&adopted.task), expected);
    // Dropped uncommitted: the keeper is not asked to cancel, the task stays for a later host.
    drop(adopted);
    assert!(!monitor.files.cancel.exists());
  }
  assert!(matches!(
    crate::persist::AdoptionLock::try_acquire(&state, "mon_a").unwrap(),
    crate::persist::TryLock::Acquired(_)
  ));
  // A shell follows its output file from its end: its waits judge output from now on.
  let output = state.join("shell-bg_a.output");
  std::fs::write(&output, "seven b").unwrap();
  let shell = link("bg_a");
  let adopted = adopt(Adoption {
    id: "bg_a",
    pid: 4343,
    link: Arc::clone(&shell),
    kind: AdoptKind::Shell {
      output_path: &output,
    },
  })
  .into_shell()
  .expect("a shell");
  assert_eq!(adopted.pid(), 4343);
  assert_eq!(followed_from(&adopted.task.task).offset, 7);
  drop(adopted);
  assert!(!shell.files.cancel.exists());
  let _ = std::fs::remove_dir_all(&state);
}
