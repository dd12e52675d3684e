//! Every guard on hostile input: it must return (no panic, no deep recursion) and stay linear.

use std::time::Duration;

use super::*;

const MIB: usize = 1 << 20;

/// Short inputs that stress quoting, escaping and UTF-8 boundaries.
fn short_inputs() -> Vec<String> {
  [
    "",
    " ",
    "'",
    "\"",
    "`",
    "\\",
    "$(",
    ")",
    "#",
    "&",
    "&&",
    "|&",
    "<(",
    ">(",
    "$((",
    "\\&",
    "é&",
    "&é",
    "日本#語",
    "# 日本",
    "a\u{2028}&",
    "\u{feff}&\u{feff}",
    "\u{85}&",
    "sleep\u{a0}5",
    "sleep 5\u{3000}#\u{3000}intentional-sleep: 日本語日本語日本",
    "sleep 9999999999999999999999d",
    "sleep 5ms日",
    "bash -c '日本 &'",
    "bash -c",
    "bash -c '",
    "cmd /c",
    "pwsh -Command",
    "FOO=\"é\" bash -c \"$(é) &\" é &",
    "bash -o",
    "/",
    "\0",
    "a\0&\0",
    "😀&😀",
    "😀 # 😀\n😀 &",
    "<<",
    "<<-'",
    "<<$'a\\",
    "<<\"a\\\n",
    "${a[",
    "${!",
    "${a@",
    "$\\\n",
    "cat <<a\n",
    "cat <<a\n${b[]@P}\na\n",
  ]
  .iter()
  .map(ToString::to_string)
  .collect()
}

/// One-MiB inputs: long runs of single syntax characters and mixed patterns.
fn huge_inputs() -> Vec<String> {
  let runs = [
    "&", "'", "\"", "\\", "$(", "`", "#", " ", "(", ")", "é", "& ", " #", "<(", "$((", "\\&",
  ];
  let mut inputs: Vec<String> = runs.iter().map(|r| r.repeat(MIB / r.len())).collect();
  inputs.push(format!("sleep 5 {}", "&& ".repeat(MIB / 3)));
  inputs.push(format!("bash -c '{}' &", "x ".repeat(MIB / 2)));
  inputs.push(format!("{}sleep 5", "A=1 ".repeat(MIB / 4)));
  inputs.push(format!("bash {} -c 'x'", "-o p ".repeat(MIB / 5)));
  inputs.push(format!("sleep {}", "9".repeat(MIB)));
  inputs.push(format!("/{}", "a/".repeat(MIB / 2)));
  inputs.push(format!("a #{}\n", "'".repeat(MIB)).repeat(2));
  inputs
}

/// Call every public guard on `input`; the results are irrelevant, returning is the test.
fn exercise(input: &str) {
  let _ = detect_blocked_sleep_pattern(input);
  let _ = blocked_sleep_message(input);
  let _ = strip_trailing_background_amp(input);
  let _ = split_trailing_shell_comment(input, true);
  let _ = split_trailing_shell_comment(input, false);
  let _ = trim_trailing_shell_comment(input);
  let _ = strip_shell_wrapper(input);
  let _ = has_top_level_trailing_background_operator(input);
  let _ = has_non_final_top_level_background_operator(input);
  let _ = has_unsafe_monitor_background_operator(input);
  let _ = detect_command_substitution(input);
  let _ = normalize_monitor_command(input);
  let _ = is_path_within(input, "/srv/project-a");
  let _ = is_path_within("/srv/project-a", input);
  let params = MonitorParams {
    command: StringParam::Value(input.to_owned()),
    max_events: NumberParam::Absent,
    idle_timeout_ms: NumberParam::Absent,
    directory: StringParam::Value(input.to_owned()),
  };
  let ctx = ValidationContext {
    workspace_dirs: vec![input.to_owned(), "/srv/project-a".to_owned()],
    user_skills_dirs: vec![input.to_owned()],
  };
  let _ = validate_monitor_params(&params, &ctx);
}

#[test]
fn every_guard_returns_on_short_hostile_input() {
  for input in short_inputs() {
    exercise(&input);
    for other in short_inputs() {
      exercise(&format!("{input}{other}"));
      exercise(&format!("{input} {other}"));
    }
  }
}

/// The CPU time this thread has used: what the guards themselves cost, however busy the rest
/// of the machine is (a wall clock also counts the time other processes held the cores).
fn thread_cpu_time() -> Duration {
  #[cfg(unix)]
  {
    let mut now = libc::timespec {
      tv_sec: 0,
      tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; this clock exists on every Unix we build for.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
  }
  #[cfg(windows)]
  {
    use windows_sys::Win32::Foundation::FILETIME;
    use windows_sys::Win32::System::Threading::{GetCurrentThread, GetThreadTimes};
    let zero = || FILETIME {
      dwLowDateTime: 0,
      dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero(), zero(), zero(), zero());
    // SAFETY: the pseudo-handle of this thread and four valid out-pointers.
    let ok = unsafe {
      GetThreadTimes(
        GetCurrentThread(),
        &mut created,
        &mut exited,
        &mut kernel,
        &mut user,
      )
    };
    assert_ne!(ok, 0, "GetThreadTimes");
    let ticks = |t: FILETIME| (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime);
    Duration::from_nanos((ticks(kernel) + ticks(user)) * 100)
  }
  #[cfg(not(any(unix, windows)))]
  {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
  }
}

#[test]
fn every_guard_is_linear_on_one_mib_inputs() {
  // Generous enough for an unoptimised build on a slow machine, far below what a quadratic
  // algorithm would need on 1 MiB (about 10^12 steps). Counted in this thread's CPU time, so a
  // loaded machine (other tests, other builds) does not count against the guards.
  let budget = Duration::from_secs(20);
  for input in huge_inputs() {
    let started = thread_cpu_time();
    exercise(&input);
    let elapsed = thread_cpu_time() - started;
    assert!(
      elapsed < budget,
      "{elapsed:?} on {:?}…",
      input.chars().take(12).collect::<String>()
    );
  }
}

/// The substitution detector alone on input shaped against its lookaheads: continuations,
/// `${…@P}` and subscripts, heredoc operators and bodies.
#[test]
fn substitution_detector_is_linear_on_one_mib_inputs() {
  let budget = Duration::from_secs(20);
  let runs = [
    "\\\n",
    "$\\\n",
    "${",
    "${a[",
    "${!a[\\\n",
    "${a@P",
    "<<a ",
    "<<",
    "<<<",
    "<<'a'\n",
    "<<a\n\\\n",
    "#\\\n",
    "\n",
    "$'\\\n",
  ];
  let mut inputs: Vec<String> = runs.iter().map(|r| r.repeat(MIB / r.len())).collect();
  inputs.push(format!("{}]@P}}", "${a[".repeat(MIB / 4)));
  inputs.push(format!("cat <<a\n{}a\n", "${a[x]@\\\n".repeat(MIB / 10)));
  inputs.push(format!(
    "{}\n{}",
    "<<a ".repeat(MIB / 8),
    "b\n".repeat(MIB / 4)
  ));
  for input in inputs {
    let started = thread_cpu_time();
    let _ = detect_command_substitution(&input);
    let elapsed = thread_cpu_time() - started;
    assert!(
      elapsed < budget,
      "{elapsed:?} on {:?}…",
      input.chars().take(12).collect::<String>()
    );
  }
}
