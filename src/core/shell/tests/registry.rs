//! The registry and its notifications (CONTRACT.md §2.13, §2.19, §3.12), with
//! real output files.

use std::path::Path;

use crate::shell::test_support::TempDir;
use crate::shell::*;

const OWNER: u32 = 4242;

fn registration(id: &str, command: &str, output_path: &Path, start_time: f64) -> ShellRegistration {
  ShellRegistration {
    shell_id: id.to_owned(),
    command: command.to_owned(),
    cwd: "/repo".to_owned(),
    start_time,
    output_path: output_path.to_string_lossy().into_owned(),
    pid: None,
    todo_work_chain_id: None,
  }
}

fn registry_with(reg: ShellRegistration) -> ShellRegistry {
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  registry.register(reg).expect("register");
  registry
}

/// The notification of a shell that completed with `output` in its file.
fn completed_with_output(output: &[u8]) -> ShellNotification {
  let dir = TempDir::new("tail");
  let path = dir.file("shell-a.output", output);
  let mut registry = registry_with(registration("a", "npm test", &path, 1000.0));
  registry.complete("a", 0, 2000.0);
  registry.take_notification("a", true).expect("notification")
}

fn notify_effects(id: &str) -> Vec<ShellEffect> {
  vec![
    ShellEffect::Notify(id.to_owned()),
    ShellEffect::StatusChanged(Some(id.to_owned())),
  ]
}

#[test]
fn completed_golden() {
  let dir = TempDir::new("golden");
  let path = dir.file("shell-a.output", b"first line\nfinal result\n");
  let mut reg = registration("a", "npm test", &path, 1000.0);
  reg.pid = Some(1234);
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  assert_eq!(
    registry.register(reg).unwrap(),
    [
      ShellEffect::Registered("a".into()),
      ShellEffect::StatusChanged(Some("a".into()))
    ]
  );
  assert_eq!(registry.complete("a", 0, 2000.0), notify_effects("a"));
  let n = registry.take_notification("a", true).unwrap();
  assert_eq!(n.display_text, "Background shell \"npm test\" completed.");
  let expected = [
    "<task-notification>",
    "<task-id>a</task-id>",
    "<kind>shell</kind>",
    "<status>completed</status>",
    "<summary>Shell command \"npm test\" completed.</summary>",
    "<command>npm test</command>",
    "<cwd>/repo</cwd>",
    "<pid>1234</pid>",
    "<exit-code>0</exit-code>",
    "<output-tail truncated=\"false\">first line\nfinal result</output-tail>",
    &format!("<output-file>{}</output-file>", path.display()),
    "</task-notification>",
  ]
  .join("\n");
  assert_eq!(n.model_text, expected);
  assert_eq!(
    n.meta,
    ShellNotificationMeta {
      kind: "terminal",
      end: Some(crate::end::TaskEnd::exited(Some(0))),
      shell_id: "a".into(),
      status: ShellStatus::Completed,
      exit_code: Some(0),
      todo_work_chain_id: None,
    }
  );
  let entry = registry.get("a").unwrap();
  assert_eq!((entry.notified, entry.end_time), (true, Some(2000.0)));
}

#[test]
fn long_command_is_truncated_in_label_and_model() {
  let dir = TempDir::new("long");
  let command = format!("node -e {}", "a".repeat(700));
  let mut registry = registry_with(registration("a", &command, &dir.path().join("x"), 1.0));
  registry.complete("a", 0, 2.0);
  let n = registry.take_notification("a", true).unwrap();
  let label = format!("{}...", &command[..77]);
  assert_eq!(
    n.display_text,
    format!("Background shell \"{label}\" completed.")
  );
  assert!(n.model_text.contains(&format!(
    "<summary>Shell command \"{label}\" completed.</summary>"
  )));
  assert!(n.model_text.contains(&format!(
    "<command truncated=\"true\">{}...</command>",
    &command[..497]
  )));
  assert!(!n.model_text.contains(&command));
}

#[test]
fn fields_are_escaped_and_stripped() {
  let dir = TempDir::new("escape");
  let mut reg = registration("a&b", "echo \"<script>\"", &dir.path().join("x"), 1.0);
  reg.cwd = "/repo&work".into();
  let mut registry = registry_with(reg);
  registry.fail("a&b", "bad <thing>\x1B[31m \u{202E}evil\u{2069}", 2000.0);
  let n = registry.take_notification("a&b", true).unwrap();
  assert_eq!(
    n.display_text,
    "Background shell \"echo \"<script>\"\" failed."
  );
  for part in [
    "<task-id>a&amp;b</task-id>",
    "<status>failed</status>",
    "<command>echo &quot;&lt;script&gt;&quot;</command>",
    "<cwd>/repo&amp;work</cwd>",
    "<result>bad &lt;thing&gt;[31m evil</result>",
  ] {
    assert!(n.model_text.contains(part), "{part} in {}", n.model_text);
  }
  assert!(!n.model_text.contains("<exit-code>"));
}

#[test]
fn cwd_and_output_path_lose_control_characters() {
  let dir = TempDir::new("controls");
  let output = dir.path().join("out\x03\u{202E}.log");
  let mut reg = registration("a", "true", &output, 1.0);
  reg.cwd = "/repo\x01\x02/src".into();
  let mut registry = registry_with(reg);
  registry.complete("a", 0, 2.0);
  let n = registry.take_notification("a", true).unwrap();
  assert!(n.model_text.contains("<cwd>/repo/src</cwd>"));
  let shown = dir.path().join("out.log");
  assert!(n
    .model_text
    .contains(&format!("<output-file>{}</output-file>", shown.display())));
}

#[test]
fn tail_is_cleaned_of_bidi_controls() {
  let n = completed_with_output("line one\nharmless\u{202A}evil\u{2069} two\n".as_bytes());
  assert!(n
    .model_text
    .contains(">line one\nharmlessevil two</output-tail>"));
}

#[test]
fn long_tail_is_truncated_at_8192_bytes() {
  let output = format!("prefix-{}\nlast line\n", "a".repeat(8192));
  let n = completed_with_output(output.as_bytes());
  assert!(n.model_text.contains("<output-tail truncated=\"true\">"));
  assert!(n.model_text.contains("last line</output-tail>"));
  assert!(!n.model_text.contains("prefix-"));
}

#[test]
fn tail_cut_inside_a_multibyte_char_has_no_replacement() {
  let output = format!("{}€\nfinal output\n", "a".repeat(8191));
  let n = completed_with_output(output.as_bytes());
  assert!(n.model_text.contains("<output-tail truncated=\"true\">"));
  assert!(n.model_text.contains("final output</output-tail>"));
  assert!(!n.model_text.contains('\u{FFFD}'));
}

#[cfg(unix)]
#[test]
fn symlinked_output_path_is_unreadable() {
  let dir = TempDir::new("symlink");
  let secret = dir.file("secret", b"TOP SECRET\n");
  let link = dir.path().join("shell-a.output");
  std::os::unix::fs::symlink(&secret, &link).unwrap();
  let mut registry = registry_with(registration("a", "cat", &link, 1.0));
  registry.complete("a", 0, 2.0);
  let n = registry.take_notification("a", true).unwrap();
  assert!(n
    .model_text
    .contains("<output-tail error=\"unreadable\" />"));
  assert!(!n.model_text.contains("SECRET"));
}

#[test]
fn missing_output_file_is_unreadable() {
  let dir = TempDir::new("missing");
  let mut registry = registry_with(registration("a", "x", &dir.path().join("gone"), 1.0));
  registry.complete("a", 0, 2.0);
  let n = registry.take_notification("a", true).unwrap();
  assert_eq!(n.meta.status, ShellStatus::Completed);
  assert!(n
    .model_text
    .contains("<output-tail error=\"unreadable\" />"));
}

#[test]
fn directory_or_empty_output_gives_no_tail_element() {
  let dir = TempDir::new("no-tail");
  let subdir = dir.path().join("subdir");
  std::fs::create_dir(&subdir).unwrap();
  let empty = dir.file("empty.output", b"");
  let blank = dir.file("blank.output", b"\x1b[31m\n \n");
  for path in [subdir.clone(), empty, blank] {
    let mut registry = registry_with(registration("a", "x", &path, 1.0));
    registry.complete("a", 0, 2.0);
    let n = registry.take_notification("a", true).unwrap();
    assert!(!n.model_text.contains("<output-tail"), "{}", path.display());
  }
}

#[test]
fn request_cancel_then_cancel() {
  let dir = TempDir::new("cancel");
  let mut registry = registry_with(registration("a", "sleep 60", &dir.path().join("x"), 1.0));
  assert_eq!(
    registry.request_cancel("a"),
    [ShellEffect::Abort("a".into())]
  );
  let entry = registry.get("a").unwrap();
  assert_eq!((entry.status, entry.end_time), (ShellStatus::Running, None));
  assert_eq!(
    registry.cancel("a", 2000.0),
    [
      ShellEffect::Abort("a".into()),
      ShellEffect::Notify("a".into()),
      ShellEffect::StatusChanged(Some("a".into()))
    ]
  );
  let n = registry.take_notification("a", true).unwrap();
  assert_eq!(
    n.display_text,
    "Background shell \"sleep 60\" was cancelled."
  );
  assert!(n.model_text.contains("<status>cancelled</status>"));
  assert!(n
    .model_text
    .contains("<summary>Shell command \"sleep 60\" was cancelled.</summary>"));
  assert_eq!(
    (n.meta.shell_id.as_str(), n.meta.status, n.meta.exit_code),
    ("a", ShellStatus::Cancelled, None)
  );
  assert!(registry.request_cancel("a").is_empty());
  assert!(registry.cancel("a", 3000.0).is_empty());
  assert!(registry.complete("a", 0, 3000.0).is_empty());
  assert!(registry.fail("a", "late", 3000.0).is_empty());
  assert_eq!(registry.get("a").unwrap().end_time, Some(2000.0));
}

#[test]
fn notification_gate_without_callback_keeps_the_entry_eligible() {
  let dir = TempDir::new("gate");
  let mut registry = registry_with(registration("a", "x", &dir.path().join("x"), 1.0));
  assert_eq!(registry.take_notification("a", true), None, "running");
  registry.complete("a", 0, 2.0);
  assert_eq!(registry.take_notification("a", false), None);
  assert_eq!(registry.replay_ids(), ["a"]);
  assert!(registry.take_notification("a", true).is_some());
  assert_eq!(registry.take_notification("a", true), None);
  assert!(registry.replay_ids().is_empty());
  assert_eq!(registry.take_notification("nope", true), None);
}

#[test]
fn replay_is_in_settle_order_and_skips_shutdown_entries() {
  let dir = TempDir::new("replay");
  let out = dir.path().join("x");
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  for (id, start) in [("first", 1.0), ("second", 2.0), ("shutdown", 3.0)] {
    registry
      .register(registration(id, "x", &out, start))
      .unwrap();
  }
  registry.complete("first", 0, 300.0);
  registry.fail("second", "boom", 200.0);
  assert_eq!(
    registry.abort_all(400.0),
    [
      ShellEffect::Abort("shutdown".into()),
      ShellEffect::StatusChanged(Some("shutdown".into()))
    ]
  );
  let shutdown = registry.get("shutdown").unwrap();
  assert_eq!(
    (shutdown.status, shutdown.end_time, shutdown.notified),
    (ShellStatus::Cancelled, Some(400.0), true)
  );
  assert_eq!(registry.replay_ids(), ["second", "first"]);
  for id in registry.replay_ids() {
    assert!(registry.take_notification(&id, true).is_some());
  }
  assert!(registry.replay_ids().is_empty());
  assert!(registry.abort_all(500.0).is_empty());
}

#[test]
fn abort_all_cancels_every_running_entry_at_one_time() {
  let dir = TempDir::new("abort-all");
  let out = dir.path().join("x");
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  for id in ["a", "b", "c"] {
    registry.register(registration(id, "x", &out, 1.0)).unwrap();
  }
  registry.complete("b", 0, 5.0);
  assert_eq!(
    registry.abort_all(9.0),
    [
      ShellEffect::Abort("a".into()),
      ShellEffect::Abort("c".into()),
      ShellEffect::StatusChanged(Some("c".into()))
    ]
  );
  assert!(!registry.has_running_entries());
  assert_eq!(registry.get("a").unwrap().end_time, Some(9.0));
}

#[test]
fn pruning_keeps_the_newest_32_terminal_entries() {
  let dir = TempDir::new("prune");
  let out = dir.path().join("x");
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  let mut removed = Vec::new();
  for i in 0..34 {
    let id = format!("s{i}");
    registry
      .register(registration(&id, "x", &out, 1.0))
      .unwrap();
    let effects = registry.complete(&id, 0, 100.0 + f64::from(i));
    assert_eq!(effects.first(), Some(&ShellEffect::Notify(id.clone())));
    assert_eq!(effects.last(), Some(&ShellEffect::StatusChanged(Some(id))));
    removed.extend(effects.into_iter().filter_map(|e| match e {
      ShellEffect::Removed(ids) => Some(ids),
      _ => None,
    }));
  }
  assert_eq!(removed, [vec!["s0".to_owned()], vec!["s1".to_owned()]]);
  let ids = registry.ids();
  assert_eq!(ids.len(), 32);
  assert_eq!((ids[0].as_str(), ids[31].as_str()), ("s2", "s33"));
}

#[test]
fn running_entries_are_never_pruned() {
  let dir = TempDir::new("prune-running");
  let out = dir.path().join("x");
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  registry
    .register(registration("live", "x", &out, 0.0))
    .unwrap();
  for i in 0..32 {
    let id = format!("s{i}");
    registry
      .register(registration(&id, "x", &out, 1.0))
      .unwrap();
    let effects = registry.complete(&id, 0, 100.0 + f64::from(i));
    assert!(!effects.iter().any(|e| matches!(e, ShellEffect::Removed(_))));
  }
  assert_eq!(registry.ids().len(), 33);
  assert!(registry.has_running_entries());
}

#[test]
fn duplicate_id_is_refused_and_changes_nothing() {
  let dir = TempDir::new("duplicate");
  let out = dir.path().join("x");
  let mut registry = registry_with(registration("a", "first", &out, 1.0));
  let error = "Background shell \"a\" is already registered.";
  assert_eq!(
    registry.register(registration("a", "second", &out, 2.0)),
    Err(error.to_owned())
  );
  assert_eq!(registry.check_can_register("a"), Err(error.to_owned()));
  registry.complete("a", 0, 3.0);
  assert!(registry
    .register(registration("a", "third", &out, 4.0))
    .is_err());
  assert_eq!(registry.ids(), ["a"]);
  assert_eq!(registry.get("a").unwrap().command, "first");
}

#[test]
fn reset_removes_everything_and_names_the_first_entry() {
  let dir = TempDir::new("reset");
  let out = dir.path().join("x");
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  assert!(registry.reset().is_empty());
  for id in ["a", "b"] {
    registry.register(registration(id, "x", &out, 1.0)).unwrap();
  }
  registry.complete("b", 0, 2.0);
  assert_eq!(
    registry.reset(),
    [
      ShellEffect::Removed(vec!["a".into(), "b".into()]),
      ShellEffect::StatusChanged(Some("a".into()))
    ]
  );
  assert!(registry.ids().is_empty());
  assert!(!registry.has_running_entries());
}

#[test]
fn todo_chain_and_pid_reach_the_notification() {
  let dir = TempDir::new("meta");
  let mut reg = registration("a", "x", &dir.path().join("x"), 1.0);
  reg.todo_work_chain_id = Some("chain-1".into());
  let mut registry = registry_with(reg);
  registry.set_pid("a", Some(77));
  registry.complete("a", 3, 2.0);
  let n = registry.take_notification("a", true).unwrap();
  assert!(n
    .model_text
    .contains("<pid>77</pid>\n<exit-code>3</exit-code>"));
  assert_eq!(n.meta.todo_work_chain_id.as_deref(), Some("chain-1"));
  assert_eq!(n.meta.exit_code, Some(3));
}

#[test]
fn every_settle_rewrites_the_sidecar() {
  let dir = TempDir::new("sidecar-settle");
  let out = dir.path().join("shell-a.output");
  let status = dir.path().join("shell-a.status");
  let mut registry = registry_with(registration("a", "x", &out, 1.0));
  let read = || std::fs::read_to_string(&status).unwrap();
  assert!(read().contains("\"status\": \"running\""));
  registry.cancel("a", 2.0);
  assert!(read().contains("\"status\": \"cancelled\""));
  assert!(read().contains(&format!("\"ownerPid\": {OWNER}")));
}

static END: std::sync::LazyLock<crate::end::TaskEnd> =
  std::sync::LazyLock::new(|| crate::end::TaskEnd::exited(Some(0)));

/// `done`'s status for a run: what the registry settled, even after the entry
/// left it.
fn settled_status(
  registry: &mut ShellRegistry,
  id: &str,
  token: u64,
  verdict: ShellVerdict,
) -> ShellStatus {
  registry
    .finish_run(id, token, verdict, END.clone(), 9.0)
    .1
    .status
}

#[test]
fn a_run_ending_settles_its_held_entry_with_its_verdict() {
  let dir = TempDir::new("run-held");
  let mut registry = registry_with(registration("a", "x", &dir.path().join("a"), 1.0));
  let token = registry.track_run("a");
  let (effects, settled) = registry.finish_run(
    "a",
    token,
    ShellVerdict::Failed("exited with code 3".into()),
    crate::end::TaskEnd::exited(Some(3)),
    2.0,
  );
  assert_eq!(effects, notify_effects("a"));
  assert_eq!(
    settled,
    ShellSettled {
      status: ShellStatus::Failed,
      exit_code: None,
      error: Some("exited with code 3".into()),
      end: Some(crate::end::TaskEnd::exited(Some(3))),
    }
  );
  assert_eq!(registry.get("a").unwrap().status, ShellStatus::Failed);
}

#[test]
fn runs_cancelled_by_abort_all_report_cancelled_even_once_pruned() {
  let dir = TempDir::new("run-abort-all");
  let mut registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, OWNER);
  let tokens: Vec<(String, u64)> = (0..40)
    .map(|i| {
      let id = format!("s{i}");
      let path = dir.path().join(format!("shell-{id}.output"));
      registry
        .register(registration(&id, "sleep 30", &path, i as f64))
        .unwrap();
      let token = registry.track_run(&id);
      (id, token)
    })
    .collect();
  registry.abort_all(100.0);
  assert_eq!(registry.ids().len(), MAX_RETAINED_TERMINAL_SHELLS);
  for (id, token) in tokens {
    // The child then died of the kill: its own verdict would say failed.
    let (effects, settled) = registry.finish_run(
      &id,
      token,
      ShellVerdict::Failed("terminated by signal 15".into()),
      crate::end::TaskEnd::signaled("SIGTERM"),
      101.0,
    );
    assert_eq!(effects, []);
    assert_eq!(
      (settled.status, settled.error),
      (ShellStatus::Cancelled, None),
      "{id}"
    );
    assert_eq!(
      settled.end,
      Some(crate::end::TaskEnd::cancelled(crate::end::EndVia::AbortAll)),
      "who ended it is the registry's abortAll, not the signal that followed"
    );
  }
}

#[test]
fn request_cancel_names_the_caller_whatever_the_run_reports() {
  let dir = TempDir::new("run-request-cancel");
  let mut registry = registry_with(registration("a", "x", &dir.path().join("a"), 1.0));
  let token = registry.track_run("a");
  registry.request_cancel("a");
  let end = crate::end::TaskEnd::cancelled(crate::end::EndVia::Signal);
  let (_, settled) = registry.finish_run("a", token, ShellVerdict::Cancelled, end, 2.0);
  assert_eq!(
    settled.end,
    Some(crate::end::TaskEnd::cancelled(crate::end::EndVia::Cancel))
  );
  let sidecar: serde_json::Value =
    serde_json::from_str(&std::fs::read_to_string(dir.path().join("a.status")).unwrap()).unwrap();
  assert_eq!(sidecar["end"]["reason"], "cancelled");
  assert_eq!(sidecar["end"]["via"], "cancel");
}

/// A restart (API.md §6.8): the running entry is aborted and settles with `restarted`; once
/// ended it leaves the registry, so the same id can be registered again.
#[test]
fn a_restart_ends_the_run_as_restarted_then_frees_the_id() {
  use crate::end::{EndReason, EndVia, TaskEnd};
  let dir = TempDir::new("restart");
  let path = dir.path().join("shell-a.output");
  let mut registry = registry_with(registration("a", "x", &path, 1.0));
  let token = registry.track_run("a");
  assert_eq!(registry.remove_ended("a"), None, "a running entry stays");
  assert_eq!(
    registry.request_restart("a"),
    vec![ShellEffect::Abort("a".into())]
  );
  let (_, settled) = registry.finish_run(
    "a",
    token,
    ShellVerdict::Cancelled,
    TaskEnd::cancelled(EndVia::Signal),
    2.0,
  );
  let end = settled.end.expect("an end");
  assert_eq!(
    (end.reason, end.via),
    (EndReason::Restarted, Some(EndVia::Restart))
  );
  assert!(
    registry.request_restart("a").is_empty(),
    "an ended entry is left as it is"
  );
  assert_eq!(
    registry.remove_ended("a"),
    Some(vec![ShellEffect::Removed(vec!["a".into()])])
  );
  assert!(registry.get("a").is_none());
  registry
    .register(registration("a", "x", &path, 3.0))
    .expect("the id is free again");
}

#[test]
fn host_exit_rewrites_running_sidecars_only() {
  let dir = TempDir::new("host-exit");
  let mut registry = registry_with(registration(
    "a",
    "x",
    &dir.path().join("shell-a.output"),
    1.0,
  ));
  registry
    .register(registration(
      "b",
      "y",
      &dir.path().join("shell-b.output"),
      1.0,
    ))
    .unwrap();
  registry.complete("b", 0, 2.0);
  let mine = dir.path().to_string_lossy().into_owned();
  crate::shell::sidecar::record_host_exit_where(3.0, |e| e.output_path.starts_with(&mine));
  let read = |name: &str| -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
  };
  let a = read("shell-a.status");
  assert_eq!(a["status"], "cancelled");
  assert_eq!(
    a["end"],
    serde_json::json!({"reason": "host-exit", "by": "host"})
  );
  let b = read("shell-b.status");
  assert_eq!(b["status"], "completed");
  assert_eq!(
    b["end"],
    serde_json::json!({"reason": "exited", "by": "process", "exitCode": 0})
  );
}

#[test]
fn a_run_reset_away_while_running_reports_and_records_its_own_end() {
  let dir = TempDir::new("run-reset");
  let status_file = dir.path().join("shell-a.status");
  let mut registry = registry_with(registration(
    "a",
    "x",
    &dir.path().join("shell-a.output"),
    1.0,
  ));
  let token = registry.track_run("a");
  registry.reset();
  // The id is free again: a new shell may take it, with its own run.
  registry
    .register(registration(
      "a",
      "y",
      &dir.path().join("shell-a2.output"),
      2.0,
    ))
    .unwrap();
  let second = registry.track_run("a");
  let (effects, settled) =
    registry.finish_run("a", token, ShellVerdict::Completed(0), END.clone(), 3.0);
  assert_eq!(effects, []);
  assert_eq!(
    (settled.status, settled.exit_code),
    (ShellStatus::Completed, Some(0))
  );
  let sidecar: serde_json::Value =
    serde_json::from_str(&std::fs::read_to_string(&status_file).unwrap()).unwrap();
  assert_eq!(sidecar["status"], "completed");
  assert_eq!(sidecar["exitCode"], 0);
  assert_eq!(registry.get("a").unwrap().status, ShellStatus::Running);
  assert_eq!(
    settled_status(&mut registry, "a", second, ShellVerdict::Cancelled),
    ShellStatus::Cancelled
  );
  assert_eq!(registry.get("a").unwrap().status, ShellStatus::Cancelled);
}

#[test]
fn a_run_cancelled_then_reset_away_reports_cancelled() {
  let dir = TempDir::new("run-cancel-reset");
  let mut registry = registry_with(registration("a", "x", &dir.path().join("a"), 1.0));
  let token = registry.track_run("a");
  registry.cancel("a", 2.0);
  registry.reset();
  assert_eq!(
    settled_status(&mut registry, "a", token, ShellVerdict::Completed(0)),
    ShellStatus::Cancelled
  );
}
