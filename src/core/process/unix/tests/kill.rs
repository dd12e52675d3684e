//! Tree kills on real processes (CONTRACT.md §4 items 4 and 5).

use std::time::{Duration, Instant};

use super::super::test_support::*;
use super::super::*;

/// A grandchild that called `setsid`, one that double-forked, and one that did
/// both (reachable only through the environment tag) all die on `terminate`.
#[test]
fn terminate_kills_grandchildren_that_left_the_group() {
  let _serial = serial();
  let mut p =
    spawn_script("setsid sleep 30 & ( sleep 30 & ); ( setsid sleep 30 & ); sleep 30; exit");
  let _kill = KillOnDrop(p.group.clone());
  let sleepers = wait_for_sleepers(&p.group.task_tag, 4);
  let descendants: Vec<u32> = proc_table::descendants(&[p.pid])
    .iter()
    .map(|d| d.0)
    .collect();
  let left_group = sleepers.iter().filter(|s| s.pgid != p.pid).count();
  let orphaned = sleepers
    .iter()
    .filter(|s| !descendants.contains(&s.pid))
    .count();
  let tag_only = sleepers
    .iter()
    .filter(|s| s.pgid != p.pid && !descendants.contains(&s.pid))
    .count();
  assert_eq!((left_group, orphaned, tag_only), (2, 2, 1), "{sleepers:?}");

  terminate(&p.group);
  let ids = ids(&sleepers);
  assert!(
    wait_until(Duration::from_secs(10), || all_dead(&ids)),
    "{sleepers:?}"
  );
  let status = ExitStatusInfo::from(p.child.wait().unwrap());
  assert_eq!(status.signal, Some(libc::SIGTERM));
  assert!(!tree_alive(&p.group));
}

/// SIGTERM is ignored, so only the SIGKILL 200 ms later ends the tree.
#[test]
fn terminate_escalates_to_sigkill_after_the_grace() {
  let _serial = serial();
  let mut p = spawn_script("trap '' TERM; sleep 30; exit 0");
  let _kill = KillOnDrop(p.group.clone());
  let sleepers = ids(&wait_for_sleepers(&p.group.task_tag, 1));
  let started = Instant::now();
  terminate(&p.group);
  // SIGTERM is ignored: only the SIGKILL ends it, and never before the
  // grace (a timer does not fire early, however loaded the machine is).
  // Without the escalation `sleep 30` would end with exit 0.
  let status = ExitStatusInfo::from(p.child.wait().unwrap());
  let elapsed = started.elapsed();
  assert_eq!(status.signal, Some(libc::SIGKILL));
  assert!(elapsed >= SIGKILL_GRACE, "{elapsed:?}");
  assert!(wait_until(Duration::from_secs(10), || all_dead(&sleepers)));
}

#[test]
fn kill_now_kills_at_once() {
  let _serial = serial();
  let mut p = spawn_script("sleep 30 & wait");
  let _kill = KillOnDrop(p.group.clone());
  let sleepers = ids(&wait_for_sleepers(&p.group.task_tag, 1));
  assert!(tree_alive(&p.group));
  assert!(!forget_if_dead(&p.group));
  kill_now(&p.group);
  let status = ExitStatusInfo::from(p.child.wait().unwrap());
  assert_eq!(status.signal, Some(libc::SIGKILL));
  assert!(wait_until(Duration::from_secs(10), || all_dead(&sleepers)));
  assert!(forget_if_dead(&p.group));
  assert!(!tracked_groups().contains(&p.group));
}

/// A stale group (its leader's pid now belongs to a process with another start
/// time) is never signalled.
#[test]
fn stale_group_is_left_alone() {
  let _serial = serial();
  let mut p = spawn_script("sleep 30");
  let _kill = KillOnDrop(p.group.clone());
  let sleepers = ids(&wait_for_sleepers(&p.group.task_tag, 1));
  let stale = ProcessGroup {
    pgid: p.pid,
    leader_start_time: p.group.leader_start_time.map(|t| t + 1),
    task_tag: new_task_tag(),
    cgroup: None,
    limits: None,
  };
  assert!(!tree_alive(&stale));
  kill_now(&stale);
  std::thread::sleep(Duration::from_millis(50));
  assert!(!all_dead(&sleepers), "a stale pgid must not be killed");
  assert_eq!(p.child.try_wait().unwrap(), None);
  kill_now(&p.group);
  p.child.wait().unwrap();
}

/// Groups terminated together (as by `abortAll`) all die, from one batch.
#[test]
fn terminate_kills_every_group_of_a_burst() {
  let _serial = serial();
  let mut procs: Vec<SpawnedProcess> = (0..4)
    .map(|_| spawn_script("( setsid sleep 30 & ); sleep 30; exit"))
    .collect();
  let _kills: Vec<KillOnDrop> = procs.iter().map(|p| KillOnDrop(p.group.clone())).collect();
  let sleepers: Vec<(u32, u64)> = procs
    .iter()
    .flat_map(|p| ids(&wait_for_sleepers(&p.group.task_tag, 2)))
    .collect();
  for p in &procs {
    terminate(&p.group);
  }
  assert!(
    wait_until(Duration::from_secs(10), || all_dead(&sleepers)),
    "{sleepers:?}"
  );
  for p in &mut procs {
    let status = ExitStatusInfo::from(p.child.wait().unwrap());
    assert_eq!(status.signal, Some(libc::SIGTERM));
  }
}

/// After a settle: a dead tree is forgotten; a live one (a `setsid`
/// grandchild outlived the leader) is killed.
#[test]
fn terminate_leftovers_forgets_dead_trees_and_kills_live_ones() {
  let _serial = serial();
  let mut done = spawn_script("exit 0");
  done.child.wait().unwrap();
  let mut left = spawn_script("( setsid sleep 30 & ); exit 0");
  let _kill = KillOnDrop(left.group.clone());
  let sleepers = ids(&wait_for_sleepers(&left.group.task_tag, 1));
  left.child.wait().unwrap();
  terminate_leftovers(&done.group);
  terminate_leftovers(&left.group);
  assert!(wait_until(Duration::from_secs(10), || {
    !tracked_groups().contains(&done.group)
  }));
  assert!(
    wait_until(Duration::from_secs(10), || all_dead(&sleepers)),
    "{sleepers:?}"
  );
  assert!(forget_if_dead(&left.group));
}

/// Every live process carrying `tag`.
fn tagged(tag: &str) -> Vec<u32> {
  proc_table::list_pids()
    .into_iter()
    .filter(|&pid| proc_table::has_env_tag(pid, tag))
    .filter(|&pid| proc_table::stat(pid).is_some_and(|s| !s.zombie))
    .collect()
}

/// A chain of detached processes, each of which forks the next one (in a
/// session of its own, ignoring SIGTERM) and then sleeps, killed while it still
/// grows: a link forked between a scan and its signal is only found by the next
/// scan, so the scans repeat until one finds nobody new. Several rounds, since
/// the race is what used to let a daemon escape.
#[test]
fn terminate_reaches_children_forked_during_the_scan() {
  let _serial = serial();
  let chain = r#"hop() { trap '' TERM; [ "$1" -gt 0 ] && setsid bash -c "hop $(($1 - 1))" & exec sleep 30; }; export -f hop; hop 400"#;
  for round in 0..6 {
    let mut p = spawn_script(chain);
    let _kill = KillOnDrop(p.group.clone());
    let tag = p.group.task_tag.clone();
    // Kill while the chain is still growing.
    assert!(wait_until(Duration::from_secs(5), || tagged(&tag).len() >= 10));
    terminate(&p.group);
    let _ = p.child.wait();
    assert!(
      wait_until(Duration::from_secs(10), || tagged(&tag).is_empty()),
      "round {round}: {} left",
      tagged(&tag).len()
    );
  }
}
