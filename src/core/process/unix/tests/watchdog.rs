//! The watchdog's macOS half (`ps` instead of procfs), run on Linux: its date
//! arithmetic, and whole sweeps against a stand-in `ps` that prints this
//! machine's processes in the macOS layout.

use std::process::Command;

use super::super::test_support::*;

/// `epoch` turns `ps -o lstart` dates (UTC, C locale) into epoch seconds;
/// the expected values are GNU `date -u +%s` of the same dates.
#[test]
fn watchdog_epoch_reads_lstart_dates() {
  let cases: [(&str, i64); 7] = [
    ("Thu Jan  1 00:00:00 1970", 0),
    ("Tue Mar  5 14:03:07 2024", 1_709_647_387),
    ("Tue Feb 29 23:59:59 2000", 951_868_799),
    ("Fri Dec 31 08:09:09 1999", 946_627_749),
    ("Mon Nov 23 15:16:50 2026", 1_795_447_010),
    ("Mon Mar  1 00:00:00 2100", 4_107_542_400),
    ("Sun Jan  1 00:00:00 2040", 2_208_988_800),
  ];
  let mut script = String::from(super::super::watchdog::PS_FUNCTIONS);
  for (date, _) in &cases {
    script.push_str(&format!(
      "set -- {date}; T=x; epoch \"$2\" \"$3\" \"$4\" \"$5\" || T=fail; echo \"$T\"\n"
    ));
  }
  for bad in [
    "Foo 1 00:00:00 2000",
    "Jan 1 0:00:00 2000",
    "Jan x 00:00:00 2000",
    "Jan 1 00:00:00 20",
  ] {
    script.push_str(&format!(
      "set -- Day {bad}; epoch \"$2\" \"$3\" \"$4\" \"$5\" || echo fail\n"
    ));
  }
  let output = Command::new(bash())
    .args(["-c", &script])
    .env_clear()
    .output()
    .unwrap();
  let text = String::from_utf8(output.stdout).unwrap();
  let mut expected: Vec<String> = cases.iter().map(|(_, t)| t.to_string()).collect();
  expected.extend(["fail"; 4].map(String::from));
  assert_eq!(text.lines().collect::<Vec<_>>(), expected);
}

/// Whole sweeps, with procfs behind the stand-in `ps`.
#[cfg(target_os = "linux")]
mod sweep {
  use std::io::Write;
  use std::path::{Path, PathBuf};
  use std::process::{Command, Stdio};

  use super::super::super::test_support::*;
  use super::super::super::*;

  /// Runs the watchdog script with `args` ($1 the cgroup dir, $2 the ps) and
  /// `input` as everything the host sent before dying.
  fn run_watchdog(input: &str, args: &[&Path]) {
    let mut watchdog = Command::new(bash())
      .args([
        "-c",
        super::super::super::watchdog::SCRIPT,
        "taskstream-watchdog",
      ])
      .args(args)
      .env_clear()
      .stdin(Stdio::piped())
      .spawn()
      .unwrap();
    let mut stdin = watchdog.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    assert!(watchdog.wait().unwrap().success());
  }

  /// A stand-in for macOS `ps -AEww -o pid=,ppid=,pgid=,lstart=,command=` in
  /// `dir`: every process of this machine's procfs as `pid ppid pgid <lstart>
  /// <args> <environment>`, the start second being `btime + ticks / hz`. It
  /// prints `lstart` in the watchdog's `TZ` (bash's `%(…)T`), as ps does.
  fn fake_ps(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!{}\n{body}", bash().display())).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
  }

  fn linux_ps_body() -> String {
    let (btime, hz) = (boot_time(), clock_ticks());
    format!(
      r#"
  for d in /proc/[0-9]*; do
    {{ read -r line < "$d/stat"; }} 2>/dev/null || continue
    set -- ${{line##*") "}}
    start=$(( {btime} + ${{20}} / {hz} )) args= env=
    while IFS= read -r -d '' a; do args="$args $a"; done 2>/dev/null < "$d/cmdline"
    while IFS= read -r -d '' e; do env="$env $e"; done 2>/dev/null < "$d/environ"
    printf '%s %s %s %(%a %b %e %H:%M:%S %Y)T%s%s\n' "${{d#/proc/}}" "$2" "$3" "$start" "$args" "$env"
  done
  "#
    )
  }

  fn boot_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat.lines().find(|l| l.starts_with("btime ")).unwrap();
    line[6..].trim().parse().unwrap()
  }

  fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as u64 }
  }

  /// What the macOS host registers for a leader: microseconds since the epoch
  /// (here from procfs, with an arbitrary microsecond).
  fn darwin_start(pid: u32) -> u64 {
    let ticks = proc_table::start_time(pid).unwrap();
    (boot_time() + ticks / clock_ticks()) * 1_000_000 + 654_321
  }

  struct TempDir(PathBuf);

  impl TempDir {
    fn new() -> TempDir {
      let dir = std::env::temp_dir().join(format!("taskstream-ps-{}", new_task_tag()));
      std::fs::create_dir(&dir).unwrap();
      TempDir(dir)
    }
  }

  impl Drop for TempDir {
    fn drop(&mut self) {
      let _ = std::fs::remove_dir_all(&self.0);
    }
  }

  /// With `ps` as its process table, the watchdog kills a tagged tree, its
  /// escapees (`setsid`, double fork) and a descendant that dropped the tag
  /// and left the group; a group registered under another tag dies only if
  /// its leader's start second matches; a group whose leader is gone dies if
  /// it still holds a tagged process, with its untagged members. If `ps`
  /// prints nothing, the pgids are trusted.
  #[test]
  fn watchdog_without_procfs_reads_ps() {
    let _serial = serial();
    let dir = TempDir::new();
    let ps = fake_ps(&dir.0, "ps", &linux_ps_body());
    let mut a = spawn_script(
      "sleep 30 & setsid sleep 30 & ( setsid sleep 30 & ); \
       setsid env -u TASKSTREAM_TASK_ID sleep 30 & wait",
    );
    let _kill_a = KillOnDrop(a.group.clone());
    let mut b = spawn_script("sleep 30 & wait");
    let _kill_b = KillOnDrop(b.group.clone());
    let mut c = spawn_script("sleep 30 & wait");
    let _kill_c = KillOnDrop(c.group.clone());
    let mut doomed = ids(&wait_for_sleepers(&a.group.task_tag, 3));
    let mut untagged = Vec::new();
    assert!(wait_until(std::time::Duration::from_secs(5), || {
      untagged = proc_table::descendants(&[a.pid])
        .into_iter()
        .filter(|&(pid, _)| {
          proc_table::name(pid).as_deref() == Some("sleep") && proc_table::env_tags(pid).is_empty()
        })
        .collect();
      untagged.len() == 1
    }));
    doomed.extend(untagged);
    let spared = ids(&wait_for_sleepers(&b.group.task_tag, 1));
    doomed.extend(ids(&wait_for_sleepers(&c.group.task_tag, 1)));
    let mut d = spawn_script("env -u TASKSTREAM_TASK_ID sleep 30 & sleep 30 & exit 0");
    let _kill_d = KillOnDrop(d.group.clone());
    doomed.extend(ids(&wait_for_sleepers(&d.group.task_tag, 1)));
    d.child.wait().unwrap();
    let mut in_group = Vec::new();
    assert!(wait_until(std::time::Duration::from_secs(5), || {
      in_group = proc_table::all_stats()
        .into_iter()
        .filter(|s| s.pgid == d.pid && !s.zombie && proc_table::env_tags(s.pid).is_empty())
        .map(|s| (s.pid, s.start_time))
        .collect();
      in_group.len() == 1
    }));
    doomed.extend(in_group);

    let a_line = format!("+{} {} {}\n", a.pid, darwin_start(a.pid), a.group.task_tag);
    let b_wrong = format!(
      "+{} {} {}\n",
      b.pid,
      darwin_start(b.pid) + 2_000_000,
      new_task_tag()
    );
    let c_line = format!("+{} {} {}\n", c.pid, darwin_start(c.pid), new_task_tag());
    let d_line = format!("+{} 0 {}\n", d.pid, d.group.task_tag);
    let input = format!("{a_line}{b_wrong}{c_line}{d_line}");
    run_watchdog(&input, &[Path::new(""), &ps]);
    for leader in [&mut a.child, &mut c.child] {
      let status = ExitStatusInfo::from(leader.wait().unwrap());
      assert_eq!(status.signal, Some(libc::SIGKILL));
    }
    assert!(
      wait_until(std::time::Duration::from_secs(2), || all_dead(&doomed)),
      "{doomed:?}"
    );
    assert_eq!(b.child.try_wait().unwrap(), None);
    assert!(!all_dead(&spared));

    // A `ps` that prints nothing: the watchdog falls back to the pgids.
    let empty = fake_ps(&dir.0, "empty-ps", "exit 0\n");
    run_watchdog(&b_wrong, &[Path::new(""), &empty]);
    let status = ExitStatusInfo::from(b.child.wait().unwrap());
    assert_eq!(status.signal, Some(libc::SIGKILL));
  }
}
