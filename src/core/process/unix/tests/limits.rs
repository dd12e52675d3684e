//! `limits` on real processes (API.md §6.8, cgroup_limits.rs): a tree past its memory limit is
//! killed and says so, a fork past `maxProcesses` fails, a busy loop gets its CPU share, the
//! usage is read, and the limits' directories go with the task. On a host that cannot enforce
//! limits, the spawn is refused with the reason `check_supported` gives.

use std::io::Read;
use std::time::{Duration, Instant};

use super::super::cgroup_limits::{cpu_quota_us, keyed_value, v1_location};
use super::super::test_support::*;
use super::super::*;
use crate::process;
use crate::process::limits::{self, Limits, TaskLimits};

const MIB: u64 = 1 << 20;

fn limited(script: &str, limits: Limits) -> SpawnRequest {
  SpawnRequest {
    limits: Some(limits),
    ..request(script)
  }
}

/// Spawns `script` under `limits`; `None` (after checking the refusal) where this host cannot
/// enforce them.
fn spawn_limited(script: &str, limits: Limits) -> Option<SpawnedProcess> {
  match process::check_limits(&limits) {
    Ok(()) => Some(spawn(limited(script, limits)).expect("spawn with limits")),
    Err(why) => {
      let error = spawn(limited(script, limits)).expect_err("a refused spawn");
      assert_eq!(error.to_string(), why);
      eprintln!("limits are refused on this host: {why}");
      None
    }
  }
}

fn dirs_of(group: &ProcessGroup) -> Vec<std::path::PathBuf> {
  match group.limits.as_deref() {
    Some(TaskLimits {
      dirs: limits::LimitDirs::V1(v1),
      ..
    }) => v1.all().iter().map(|d| d.to_path_buf()).collect(),
    Some(TaskLimits {
      dirs: limits::LimitDirs::V2(dir),
      ..
    }) => vec![dir.clone()],
    None => Vec::new(),
  }
}

#[test]
fn a_tree_past_its_memory_limit_is_killed_and_says_so() {
  let _serial = serial();
  let memory = Limits {
    memory_bytes: Some(32 * MIB),
    ..Limits::default()
  };
  // The big string lives in a subshell: the kernel kills it, the leader reports.
  let Some(mut p) = spawn_limited(
    "x=$(head -c 200000000 /dev/zero | tr '\\0' a; echo); echo survived ${#x}",
    memory,
  ) else {
    return;
  };
  let _kill = KillOnDrop(p.group.clone());
  assert_eq!(process::memory_limit_of(&p.group), Some(32 * MIB));
  let dirs = dirs_of(&p.group);
  assert!(!dirs.is_empty());
  p.child.wait().unwrap();
  assert_eq!(process::memory_limit_hit(&p.group), Some(32 * MIB));
  let usage = process::tree_usage(&p.group).expect("usage");
  let peak = usage.peak_memory_bytes.expect("peak memory");
  assert!(peak <= 32 * MIB && peak > MIB, "{usage:?}");
  assert!(usage.cpu_ms.is_some(), "{usage:?}");
  // The directories go when the tree is forgotten.
  terminate_leftovers(&p.group);
  assert!(
    wait_until(Duration::from_secs(10), || dirs.iter().all(|d| !d.exists())),
    "{dirs:?}"
  );
}

/// A tree still alive when its leader ends is killed at the settle check, and its limit
/// directories go as soon as it is dead, not at the tracker's next prune (a CI run caught the
/// memory test above leaving them when the pipeline outlived its killed leader).
#[test]
fn the_directories_of_a_tree_killed_after_its_leader_ended_go_with_it() {
  let _serial = serial();
  let memory = Limits {
    memory_bytes: Some(64 * MIB),
    ..Limits::default()
  };
  let Some(mut p) = spawn_limited("sleep 30 >/dev/null 2>&1 & echo started", memory) else {
    return;
  };
  let _kill = KillOnDrop(p.group.clone());
  assert_eq!(read_all(&p.stdout).trim(), "started");
  p.child.wait().unwrap();
  let dirs = dirs_of(&p.group);
  assert!(!dirs.is_empty());
  assert!(tree_alive(&p.group), "the sleep outlives its leader");
  terminate_leftovers(&p.group);
  assert!(
    wait_until(Duration::from_secs(10), || dirs.iter().all(|d| !d.exists())),
    "{dirs:?}"
  );
  assert!(!tree_alive(&p.group));
}

#[test]
fn a_tree_under_its_memory_limit_is_not_reported() {
  let _serial = serial();
  let memory = Limits {
    memory_bytes: Some(64 * MIB),
    ..Limits::default()
  };
  let Some(mut p) = spawn_limited(
    "x=$(head -c 1000000 /dev/zero | tr '\\0' a); echo ${#x}",
    memory,
  ) else {
    return;
  };
  let _kill = KillOnDrop(p.group.clone());
  assert_eq!(read_all(&p.stdout).trim(), "1000000");
  p.child.wait().unwrap();
  assert_eq!(process::memory_limit_hit(&p.group), None);
}

#[test]
fn forks_past_max_processes_fail_and_the_tree_stays_within_it() {
  let _serial = serial();
  let processes = Limits {
    max_processes: Some(5),
    ..Limits::default()
  };
  // perl forks without bash's retries: each refused fork prints `refused`.
  let script =
    "exec perl -e 'for (1..20) { my $p = fork; if (!defined $p) { print \"refused\\n\"; next } \
    if ($p == 0) { sleep 30; exit } } print \"done\\n\"; $| = 1; sleep 30'";
  let Some(mut p) = spawn_limited(script, processes) else {
    return;
  };
  let _kill = KillOnDrop(p.group.clone());
  let mut out = String::new();
  let started = Instant::now();
  let mut buffer = [0u8; 4096];
  while !out.contains("done") && started.elapsed() < Duration::from_secs(20) {
    match (&p.stdout).read(&mut buffer) {
      Ok(0) | Err(_) => break,
      Ok(n) => out.push_str(&String::from_utf8_lossy(&buffer[..n])),
    }
  }
  assert!(out.contains("done"), "{out}");
  // perl and four children; sixteen forks refused.
  assert_eq!(out.matches("refused").count(), 16, "{out}");
  let members = 1 + proc_table::descendants(&[p.pid]).len();
  assert_eq!(members, 5, "perl and its children");
  terminate(&p.group);
  p.child.wait().unwrap();
}

#[test]
fn a_busy_loop_gets_its_cpu_share_and_the_usage_counts_it() {
  let _serial = serial();
  let cpu = Limits {
    cpu_percent: Some(20),
    ..Limits::default()
  };
  let started = Instant::now();
  let Some(mut p) = spawn_limited("timeout 2 bash -c 'while :; do :; done'; true", cpu) else {
    return;
  };
  let _kill = KillOnDrop(p.group.clone());
  p.child.wait().unwrap();
  let wall_ms = started.elapsed().as_millis() as u64;
  let cpu_ms = process::tree_usage(&p.group)
    .and_then(|u| u.cpu_ms)
    .expect("CPU time");
  // The kernel's quota is an upper bound: 20 % of one core, 25 % with slack for the
  // accounting periods at the edges. Load only lowers it.
  assert!(cpu_ms * 4 <= wall_ms, "{cpu_ms} ms of CPU in {wall_ms} ms");
  assert!(cpu_ms > 0);
}

#[test]
fn without_limits_nothing_is_made_and_no_usage_is_read() {
  let _serial = serial();
  let mut p = spawn_script("exit 0");
  let _kill = KillOnDrop(p.group.clone());
  p.child.wait().unwrap();
  assert_eq!(p.group.limits, None);
  assert_eq!(process::tree_usage(&p.group), None);
  assert_eq!(process::memory_limit_of(&p.group), None);
}

#[test]
fn usage_is_none_where_nothing_can_be_read() {
  let nothing = limits::LimitDirs::V1(limits::V1Dirs::default());
  assert_eq!(
    super::super::cgroup_limits::usage(&nothing),
    process::Usage::default()
  );
  let gone = limits::LimitDirs::V2(std::env::temp_dir().join("taskstream-no-such-cgroup"));
  let usage = super::super::cgroup_limits::usage(&gone);
  assert_eq!((usage.cpu_ms, usage.peak_memory_bytes), (None, None));
  assert!(!super::super::cgroup_limits::memory_limit_hit(&gone));
}

#[test]
fn cgroup_files_are_read_as_the_kernel_writes_them() {
  let events = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n";
  assert_eq!(keyed_value(events, "oom_kill"), Some(2));
  assert_eq!(keyed_value(events, "oom"), Some(3));
  assert_eq!(keyed_value(events, "missing"), None);
  let oom_control = "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n";
  assert_eq!(keyed_value(oom_control, "oom_kill"), Some(0));
  assert_eq!(
    keyed_value("usage_usec 1234567\nuser_usec 1\n", "usage_usec"),
    Some(1_234_567)
  );

  assert_eq!(cpu_quota_us(20), 20_000);
  assert_eq!(cpu_quota_us(150), 150_000);
  assert_eq!(cpu_quota_us(1), 1_000);

  let cgroups = "9:name=systemd:/\n4:memory:/sandbox/abc\n2:cpu,cpuacct:/\n1:pids:/p\n0::/\n";
  let mounts = "\
30 25 0:27 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n\
31 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpu,cpuacct\n\
32 25 0:29 / /sys/fs/cgroup/pids rw,relatime shared:11 - cgroup cgroup rw,pids\n\
33 25 0:30 / /sys/fs/cgroup/unified rw,relatime shared:12 - cgroup2 cgroup2 rw\n";
  assert_eq!(
    v1_location(cgroups, mounts, "memory"),
    Some(("/sys/fs/cgroup/memory".into(), "/sandbox/abc".to_owned()))
  );
  assert_eq!(
    v1_location(cgroups, mounts, "cpuacct"),
    Some(("/sys/fs/cgroup/cpu,cpuacct".into(), "/".to_owned()))
  );
  assert_eq!(
    v1_location(cgroups, mounts, "pids"),
    Some(("/sys/fs/cgroup/pids".into(), "/p".to_owned()))
  );
  assert_eq!(v1_location(cgroups, mounts, "blkio"), None);
}
