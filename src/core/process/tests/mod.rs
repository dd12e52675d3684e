//! Pure logic: shell selection, the child environment, tags, exit status.

use std::ffi::OsString;

use super::*;

fn os_pairs(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
  pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

fn options(overrides: &[(&str, &str)]) -> EnvOptions {
  EnvOptions {
    remove: DEFAULT_REMOVE_ENV.iter().map(|s| s.to_string()).collect(),
    term: "xterm-256color",
    overrides: overrides
      .iter()
      .map(|(k, v)| (k.to_string(), v.to_string()))
      .collect(),
    task_tag: "t-1".into(),
  }
}

fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a str> {
  let mut values = env.iter().filter(|(k, _)| k == name);
  let value = values.next().map(|(_, v)| v.to_str().unwrap());
  assert!(values.next().is_none(), "{name} appears twice");
  value
}

#[test]
fn unix_shell_is_bash_dash_c() {
  let config = shell_config_for(false, Some("C:\\pwsh.exe"));
  assert_eq!(config.program, "bash");
  assert_eq!(config.args_prefix, ["-c"]);
  assert_eq!(config.kind, ShellKind::Bash);
  #[cfg(unix)]
  assert_eq!(shell_config(), config);
}

#[test]
fn windows_shell_follows_comspec() {
  let cmd = shell_config_for(true, None);
  assert_eq!(
    (cmd.program.as_str(), cmd.kind),
    ("cmd.exe", ShellKind::Cmd)
  );
  assert_eq!(cmd.args_prefix, ["/d", "/s", "/c"]);
  assert_eq!(shell_config_for(true, Some("")).program, "cmd.exe");
  let custom = shell_config_for(true, Some("C:\\tools\\tcc.exe"));
  assert_eq!(
    (custom.program.as_str(), custom.kind),
    ("C:\\tools\\tcc.exe", ShellKind::Cmd)
  );
  for ps in [
    "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\POWERSHELL.EXE",
    "C:\\Program Files\\PowerShell\\7\\pwsh.exe",
  ] {
    let config = shell_config_for(true, Some(ps));
    assert_eq!(
      (config.program.as_str(), config.kind),
      (ps, ShellKind::PowerShell)
    );
    assert_eq!(config.args_prefix, ["-NoProfile", "-Command"]);
  }
}

#[cfg(unix)]
#[test]
fn resolve_program_searches_path_only() {
  let path = std::env::var_os("PATH");
  let bash = resolve_program("bash", path.as_deref()).expect("bash on PATH");
  assert!(bash.is_absolute() && bash.ends_with("bash"), "{bash:?}");
  assert_eq!(
    resolve_program("taskstream-no-such-program", path.as_deref()),
    None
  );
  assert_eq!(resolve_program("bash", Some("".as_ref())), None);
  assert_eq!(resolve_program("bash", None), None);
  assert_eq!(resolve_program(bash.to_str().unwrap(), None), Some(bash));
  assert_eq!(
    resolve_program("/definitely/missing/bash", path.as_deref()),
    None
  );
}

#[test]
fn child_env_applies_the_default_rules() {
  let base = os_pairs(&[
    ("HOME", "/home/u"),
    ("QWEN_SERVER_TOKEN", "secret"),
    ("QWEN_DAEMON_TOKEN", "secret"),
    ("TERM", "xterm"),
    ("PAGER", "less"),
    ("GIT_PAGER", "delta"),
  ]);
  let env = child_env(base.into_iter(), &options(&[]));
  assert_eq!(lookup(&env, "HOME"), Some("/home/u"));
  assert_eq!(lookup(&env, "QWEN_SERVER_TOKEN"), None);
  assert_eq!(lookup(&env, "QWEN_DAEMON_TOKEN"), None);
  assert_eq!(lookup(&env, "TERM"), Some("xterm-256color"));
  let pager = if cfg!(windows) { "" } else { "cat" };
  assert_eq!(lookup(&env, "PAGER"), Some(pager));
  assert_eq!(lookup(&env, "GIT_PAGER"), Some("delta"));
  assert_eq!(lookup(&env, TASK_TAG_VAR), Some("t-1"));
}

#[test]
fn child_env_overrides_win_except_for_the_tag() {
  let base = os_pairs(&[("A", "1"), ("KEEP_TOKEN", "x")]);
  let mut opts = options(&[
    ("PAGER", "most"),
    ("A", "2"),
    ("NEW", "3"),
    (TASK_TAG_VAR, "outer"),
  ]);
  opts.remove = vec!["KEEP_TOKEN".into()];
  let env = child_env(base.into_iter(), &opts);
  assert_eq!(lookup(&env, "GIT_PAGER"), None);
  assert_eq!(lookup(&env, "KEEP_TOKEN"), None);
  assert_eq!(lookup(&env, "PAGER"), Some("most"));
  assert_eq!(lookup(&env, "A"), Some("2"));
  assert_eq!(lookup(&env, "NEW"), Some("3"));
  assert_eq!(lookup(&env, TASK_TAG_VAR), Some("t-1"), "the task tag wins");
}

#[test]
fn task_tags_are_unique_and_valid() {
  let (a, b) = (new_task_tag(), new_task_tag());
  assert_ne!(a, b);
  assert!(is_valid_task_tag(&a) && is_valid_task_tag(&b), "{a} {b}");
  assert!(is_valid_task_tag("mon_abc123.x:y-z"));
  for bad in ["", "a b", "a\nb", "x=y", "ü", &"a".repeat(129)] {
    assert!(!is_valid_task_tag(bad), "{bad:?}");
  }
}

#[cfg(unix)]
#[test]
fn exit_status_and_signal_names() {
  use std::os::unix::process::ExitStatusExt;
  use std::process::ExitStatus;
  let exited = ExitStatusInfo::from(ExitStatus::from_raw(3 << 8));
  assert_eq!((exited.code, exited.signal), (Some(3), None));
  let killed = ExitStatusInfo::from(ExitStatus::from_raw(9));
  assert_eq!((killed.code, killed.signal), (None, Some(9)));
  assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
  assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
  assert_eq!(signal_name(libc::SIGINT), "SIGINT");
  assert_eq!(signal_name(0), "SIG0");
  assert_eq!(signal_name(999), "SIG999");
}
