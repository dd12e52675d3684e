//! Spawning real children: pipes, exit status, session, environment, errors,
//! descriptor hygiene.

use std::os::unix::fs::MetadataExt;

use super::tests_support::*;
use super::*;

#[test]
fn spawn_pipes_output_and_reports_the_exit_code() {
  let _serial = serial();
  let mut p = spawn_script("printf 'out\\n'; printf 'err\\n' >&2; exit 3");
  // The leader is our unreaped child, so its stat survives its exit.
  assert_eq!(
    procfs::pgid(p.pid),
    Some(p.pid),
    "setsid made it a group leader"
  );
  assert_eq!(p.group.pgid, p.pid);
  assert_eq!(p.group.leader_start_time, procfs::start_time(p.pid));
  assert!(tracked_groups().contains(&p.group));
  assert_eq!(read_all(&p.stdout), "out\n");
  assert_eq!(read_all(&p.stderr), "err\n");
  let status = ExitStatusInfo::from(p.child.wait().unwrap());
  assert_eq!(
    status,
    ExitStatusInfo {
      code: Some(3),
      signal: None
    }
  );
  assert!(!tree_alive(&p.group));
  assert!(forget_if_dead(&p.group));
  assert!(!tracked_groups().contains(&p.group));
}

#[test]
fn child_gets_the_default_environment() {
  let _serial = serial();
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
  let mut p = spawn(req).unwrap();
  let expected = format!("dumb|cat|delta|{tag}|1|removed|");
  assert_eq!(read_all(&p.stdout), expected);
  assert!(p.child.wait().unwrap().success());
}

#[test]
fn child_is_in_its_own_session_with_default_signals() {
  let _serial = serial();
  // `trap` prints nothing for signals at their default action; an ignored
  // SIGPIPE (as Node sets it) would print `trap -- '' SIGPIPE`.
  let mut p = spawn_script("trap; read -r _ _ _ _ pgid sid _ < /proc/$$/stat; echo $pgid $sid");
  let output = read_all(&p.stdout);
  assert!(!output.contains("trap"), "{output}");
  assert_eq!(output, format!("{0} {0}\n", p.pid), "pgid and session id");
  assert!(p.child.wait().unwrap().success());
}

#[test]
fn spawn_failures_are_os_errors_and_track_nothing() {
  let _serial = serial();
  let mut missing_cwd = request("exit 0");
  missing_cwd.cwd = "/nonexistent/taskstream-test-dir".into();
  let tag = missing_cwd.task_tag.clone();
  let error = spawn(missing_cwd).unwrap_err();
  assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{error}");
  assert!(
    error.to_string().contains("No such file or directory"),
    "{error}"
  );
  assert!(tracked_groups().iter().all(|g| g.task_tag != tag));

  let mut missing_program = request("exit 0");
  missing_program.program = "/nonexistent/taskstream-bash".into();
  assert_eq!(
    spawn(missing_program).unwrap_err().kind(),
    std::io::ErrorKind::NotFound
  );

  let mut bad_tag = request("exit 0");
  bad_tag.task_tag = "two words".into();
  assert_eq!(
    spawn(bad_tag).unwrap_err().kind(),
    std::io::ErrorKind::InvalidInput
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
  for _ in 0..10 {
    let mut p = spawn_script("printf x; printf y >&2");
    pipes.push(format!("pipe:[{}]", p.stdout.metadata().unwrap().ino()));
    pipes.push(format!("pipe:[{}]", p.stderr.metadata().unwrap().ino()));
    assert_eq!(read_all(&p.stdout), "x");
    assert_eq!(read_all(&p.stderr), "y");
    p.child.wait().unwrap();
  }
  let after = open_fds();
  let leaked: Vec<&String> = after.values().filter(|t| pipes.contains(t)).collect();
  assert!(leaked.is_empty(), "child pipes still open: {leaked:?}");
  // Other modules' tests may open a few files meanwhile; ten leaking spawns
  // would add at least ten.
  assert!(
    after.len() <= before.len() + 3,
    "before {before:?}\nafter {after:?}"
  );
}
