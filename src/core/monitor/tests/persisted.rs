//! A persisted monitor's options in its task record (docs/persistence.md "Records").

use crate::launch::TaskOptions;
use crate::monitor::entry::EntryMode;
use crate::monitor::persisted::{MonitorTaskOptions, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_EVENTS};
use crate::monitor::signal::{DigestSetting, SignalSettings};
use crate::persist::records::{ProcessIdentity, TaskProcess, TaskRecord, RECORD_VERSION};
use crate::persist::TaskKind;
use crate::shell::persisted::ShellTaskOptions;

fn record(kind: TaskKind, options: serde_json::Value) -> TaskRecord {
  TaskRecord {
    version: RECORD_VERSION,
    kind,
    id: "mon_0123456789abcdef".to_owned(),
    command: "npm run dev".to_owned(),
    description: "dev server".to_owned(),
    cwd: "/srv/app".to_owned(),
    start_time: 1_700_000_000_123,
    lease_ms: 1500,
    output_path: "/tmp/x.log".to_owned(),
    status_path: None,
    max_output_bytes: 1 << 30,
    options,
    keeper: ProcessIdentity {
      pid: 10,
      start_time: Some(2),
      tag: "keeper-x".to_owned(),
    },
    task: TaskProcess {
      pid: 11,
      pgid: 11,
      start_time: None,
      tag: "task-x".to_owned(),
      cgroup: None,
    },
  }
}

/// The options exactly as records written before the typed schema hold them.
fn recorded_before() -> serde_json::Value {
  serde_json::json!({
    "maxEvents": 5,
    "idleTimeoutMs": 1000,
    "toolUseId": "tool-1",
    "ownerAgentId": null,
    "todoWorkChainId": "chain-1",
    "settleMs": 300,
    "signal": {
      "batchMs": 1000.0,
      "maxBatchLines": null,
      "important": "(?i)error",
      "digest": "templates",
      "sampleLines": 1.0,
      "contextBefore": 8.0,
      "contextAfter": 8.0,
    },
  })
}

#[test]
fn monitor_options_read_the_records_written_before_and_write_the_same_json() {
  let options = MonitorTaskOptions::of_record(&record(TaskKind::Monitor, recorded_before()));
  assert_eq!(options.max_events, 5);
  assert_eq!(options.idle_timeout_ms, 1000);
  assert_eq!(options.tool_use_id.as_deref(), Some("tool-1"));
  assert_eq!(options.owner_agent_id, None);
  assert_eq!(options.todo_work_chain_id.as_deref(), Some("chain-1"));
  assert_eq!(options.settle_ms, Some(300));
  assert_eq!(
    options.signal,
    SignalSettings {
      batch_ms: Some(1000.0),
      max_batch_lines: None,
      important: Some("(?i)error".to_owned()),
      digest: DigestSetting::Templates,
      sample_lines: Some(1.0),
      context_before: Some(8.0),
      context_after: Some(8.0),
    }
  );
  assert_eq!(serde_json::to_value(&options).unwrap(), recorded_before());
  let config = options.signal_config();
  assert!(config.important.is_some() && config.digest_templates);
  assert_eq!((config.batch_ms, config.context_before), (Some(1000), 8));
}

#[test]
fn monitor_options_missing_fields_take_the_start_defaults() {
  for options in [serde_json::json!({}), serde_json::json!("not an object")] {
    let options = MonitorTaskOptions::of_record(&record(TaskKind::Monitor, options));
    assert_eq!(options, MonitorTaskOptions::default());
    assert_eq!(options.max_events, DEFAULT_MAX_EVENTS);
    assert_eq!(options.idle_timeout_ms, DEFAULT_IDLE_TIMEOUT_MS);
    let config = options.signal_config();
    assert!(config.important.is_none() && !config.digest && config.batch_ms.is_none());
  }
}

#[test]
fn digest_is_written_as_javascript_gives_it() {
  for (setting, json) in [
    (DigestSetting::Off, serde_json::json!(false)),
    (DigestSetting::On, serde_json::json!(true)),
    (DigestSetting::Templates, serde_json::json!("templates")),
  ] {
    assert_eq!(serde_json::to_value(setting).unwrap(), json);
    assert_eq!(
      serde_json::from_value::<DigestSetting>(json).unwrap(),
      setting
    );
  }
  let other: DigestSetting = serde_json::from_value(serde_json::json!("other")).unwrap();
  assert_eq!(other, DigestSetting::Off);
}

#[test]
fn a_recorded_monitor_registers_as_a_running_native_entry() {
  let record = record(TaskKind::Monitor, recorded_before());
  let registration = MonitorTaskOptions::of_record(&record).registration(&record);
  assert_eq!(registration.monitor_id, record.id);
  assert_eq!(registration.command, "npm run dev");
  assert_eq!(registration.description, "dev server");
  assert_eq!(registration.start_time, 1_700_000_000_123.0);
  assert_eq!(registration.last_event_time, 1_700_000_000_123.0);
  assert_eq!(registration.pid, Some(11));
  assert_eq!(
    (registration.max_events, registration.idle_timeout_ms),
    (5, 1000)
  );
  assert_eq!(registration.settle_ms, Some(300));
  assert_eq!(registration.mode, EntryMode::Native);
}

#[test]
fn shell_options_keep_the_callers_cwd_and_settle() {
  let before =
    serde_json::json!({ "cwd": "/srv/app/web", "outputDir": "/tmp/out", "settleMs": null });
  let rec = record(TaskKind::Shell, before.clone());
  let options = ShellTaskOptions::of_record(&rec);
  assert_eq!(options.cwd(&rec), "/srv/app/web");
  assert_eq!(options.settle_ms, None);
  assert_eq!(serde_json::to_value(&options).unwrap(), before);
  let bare = record(TaskKind::Shell, serde_json::json!({ "settleMs": 250 }));
  let options = ShellTaskOptions::of_record(&bare);
  assert_eq!(options.cwd(&bare), "/srv/app");
  assert_eq!(options.settle_ms, Some(250));
}

#[test]
fn launch_writes_each_kind_with_its_own_schema() {
  let monitor = MonitorTaskOptions::of_record(&record(TaskKind::Monitor, recorded_before()));
  let written = TaskOptions::Monitor(monitor).to_value();
  assert_eq!(written, recorded_before());
  let shell = TaskOptions::Shell(ShellTaskOptions {
    cwd: "/a".to_owned(),
    output_dir: "/b".to_owned(),
    settle_ms: Some(9),
  });
  assert_eq!(
    shell.to_value(),
    serde_json::json!({ "cwd": "/a", "outputDir": "/b", "settleMs": 9 })
  );
}

#[test]
fn a_started_monitor_registers_with_its_options_and_its_label() {
  let options = MonitorTaskOptions {
    max_events: 7,
    settle_ms: Some(250),
    tool_use_id: Some("tool".to_owned()),
    ..MonitorTaskOptions::default()
  };
  let reg = options.native_registration("mon_a", "npm test", "tests", 42.0, None);
  assert_eq!(
    (
      reg.monitor_id.as_str(),
      reg.command.as_str(),
      reg.description.as_str()
    ),
    ("mon_a", "npm test", "tests")
  );
  assert_eq!(
    (reg.start_time, reg.last_event_time, reg.pid),
    (42.0, 42.0, None)
  );
  assert_eq!((reg.max_events, reg.settle_ms), (7, Some(250)));
  assert_eq!(reg.tool_use_id.as_deref(), Some("tool"));
  assert_eq!(reg.mode, EntryMode::Native);
  assert_eq!(reg.event_count, 0);
}

#[test]
fn a_monitor_without_a_label_is_labelled_by_its_command_sanitised() {
  use crate::monitor::persisted::monitor_description;
  assert_eq!(monitor_description(Some("dev"), "npm run dev"), "dev");
  assert_eq!(monitor_description(Some(""), "npm run dev"), "npm run dev");
  let sanitised = monitor_description(None, "a\u{1b}[31mb");
  assert!(
    sanitised.starts_with('a') && !sanitised.contains('\u{1b}'),
    "{sanitised:?}"
  );
}
