//! How a checked `start()` or `executeBackground()` becomes one launch request, without
//! launching anything: the mode each request names, the command as run, and for a monitor its
//! registration and how its output is read.

use std::path::PathBuf;

use super::*;
use crate::launch::{LaunchKind, Term};
use crate::monitor::EntryMode;
use crate::shell::DEFAULT_MAX_OUTPUT_BYTES;

fn monitor(command: &str) -> MonitorStart {
  MonitorStart {
    command: command.to_owned(),
    description: None,
    monitor_id: None,
    cwd: PathBuf::from("/repo"),
    env: vec![("A".to_owned(), "1".to_owned())],
    task: MonitorTaskOptions {
      max_events: 50,
      idle_timeout_ms: 60_000,
      tool_use_id: Some("tool-1".to_owned()),
      owner_agent_id: None,
      todo_work_chain_id: None,
      settle_ms: Some(500),
      signal: Default::default(),
    },
    timeout_ms: None,
    limits: None,
    terminal: None,
    keep_alive: false,
    signal: SignalConfig::default(),
    persist: None,
  }
}

#[test]
fn a_monitor_runs_its_normalized_command_contained_and_registers_with_its_options() {
  let start = monitor("  npm run dev  ");
  let command = start.command_as_run();
  let remove = vec!["SECRET".to_owned()];
  let request = start.request("m1", &command, None, &remove, 1_000.0);
  assert_eq!(request.command.command, command.command);
  assert_eq!(request.command.term, Term::Monitor);
  assert_eq!(request.command.cwd, PathBuf::from("/repo"));
  assert_eq!(request.command.remove_env, remove.as_slice());
  assert!(matches!(request.kind, LaunchKind::Monitor));
  assert!(request.kept.is_none(), "no persist: contained");
  let registration = start.registration("m1", &command, 1_000.0, Some(42));
  assert_eq!(registration.monitor_id, "m1");
  assert_eq!(registration.command, command.command);
  assert_eq!(registration.description, command.description);
  assert_eq!(
    (registration.start_time, registration.pid),
    (1_000.0, Some(42))
  );
  assert_eq!(
    (registration.max_events, registration.idle_timeout_ms),
    (50, 60_000)
  );
  assert_eq!(registration.tool_use_id.as_deref(), Some("tool-1"));
  assert_eq!(registration.mode, EntryMode::Native);
  // Without a terminal the registry judges `settleMs`; the reader has no screen to settle.
  assert_eq!(registration.settle_ms, Some(500));
  assert_eq!(start.reading(None).screen_settle_ms, None);
}

#[test]
fn a_terminal_monitor_settles_on_its_screen_not_in_the_registry() {
  let start = MonitorStart {
    terminal: Some(crate::terminal::TerminalSize::DEFAULT),
    ..monitor("htop")
  };
  let command = start.command_as_run();
  let remove = Vec::new();
  let request = start.request("t1", &command, None, &remove, 0.0);
  assert_eq!(
    request.command.terminal,
    Some(crate::terminal::TerminalSize::DEFAULT)
  );
  assert_eq!(
    start.registration("t1", &command, 0.0, None).settle_ms,
    None
  );
  let reading = start.reading(None);
  assert_eq!(
    (reading.screen_settle_ms, reading.max_events),
    (Some(500), 50)
  );
}

#[test]
fn a_shell_is_planned_from_its_options_and_writes_its_planned_files() {
  let dir = std::env::temp_dir().join(format!("taskstream-start-{}", std::process::id()));
  let start = ShellStart {
    command: "npm test &".to_owned(),
    cwd: "/repo".to_owned(),
    output_dir: dir.to_string_lossy().into_owned(),
    env: Vec::new(),
    max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
    shell_id: Some("s1".to_owned()),
    settle_ms: None,
    timeout_ms: None,
    stop_at_cap: false,
    limits: None,
    terminal: None,
    persist: None,
  };
  let plan = start.plan(|_| false).expect("plan");
  assert_eq!(
    (plan.shell_id.as_str(), plan.command.as_str()),
    ("s1", "npm test")
  );
  assert!(plan.stripped_trailing_amp);
  assert!(
    start.plan(|id| id == "s1").is_err(),
    "an id the registry holds is refused"
  );
  let remove = Vec::new();
  let request = start.request(&plan, None, &remove, 5.0, None);
  assert_eq!(request.command.term, Term::Shell);
  assert_eq!(request.command.command, "npm test");
  assert!(request.kept.is_none());
  match request.kind {
    LaunchKind::Shell {
      output_path,
      status_path,
      max_output_bytes,
      resume,
    } => {
      assert_eq!(output_path, std::path::Path::new(&plan.output_path));
      assert_eq!(status_path, plan.status_path);
      assert_eq!(max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES);
      assert!(resume.is_none());
    }
    _ => panic!("a shell's launch kind"),
  }
  let _ = std::fs::remove_dir_all(&dir);
}
