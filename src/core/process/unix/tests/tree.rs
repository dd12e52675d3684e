//! procfs parsing, the process table, tree membership and its safety rules,
//! and the timer.

use std::collections::HashMap;
use std::time::Duration;

use super::super::proc_table::{self, ProcStat};
use super::super::tree::Snapshot;
use super::super::*;

fn stat(pid: u32, ppid: u32, pgid: u32, start_time: u64) -> ProcStat {
  ProcStat {
    pid,
    ppid,
    pgid,
    start_time,
    zombie: false,
  }
}

#[cfg(not(target_os = "macos"))]
#[test]
fn parse_stat_reads_fields_after_the_last_paren() {
  use super::super::procfs;
  let mut line = b"4242 (we ) ird (x) 1) S 17 4242 4242 0 -1".to_vec();
  line.extend(b" 4194304 0 0 0 0 0 0 0 0 20 0 1 0 987654 1000 100 ...\n");
  let parsed = procfs::parse_stat(4242, &line).expect("parses");
  assert_eq!(parsed, stat(4242, 17, 4242, 987654));
  let zombie = b"7 (sh) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
  assert!(procfs::parse_stat(7, zombie).unwrap().zombie);
  assert_eq!(procfs::parse_stat(7, b"7 (sh) S 1 7"), None);
  assert_eq!(procfs::parse_stat(7, b"garbage"), None);
}

#[test]
fn the_process_table_sees_this_process() {
  let me = std::process::id();
  let own = proc_table::stat(me).expect("own stat");
  assert_eq!(
    proc_table::ppid(me),
    Some(nix::unistd::getppid().as_raw() as u32)
  );
  assert_eq!(
    proc_table::pgid(me),
    Some(nix::unistd::getpgrp().as_raw() as u32)
  );
  assert_eq!(proc_table::start_time(me), Some(own.start_time));
  assert!(proc_table::is_running(me, own.start_time));
  assert!(!proc_table::is_running(me, own.start_time + 1));
  assert!(proc_table::list_pids().contains(&me));
  assert!(!proc_table::has_env_tag(me, "no-such-tag"));
  assert!(proc_table::available());
}

#[test]
fn descendants_follow_parent_links_once() {
  let stats = [
    stat(10, 1, 10, 1),
    stat(11, 10, 10, 2),
    stat(12, 11, 12, 3),
    stat(13, 12, 13, 4),
    stat(20, 1, 20, 5),
    // A cycle, as an inconsistent scan could show.
    stat(30, 31, 30, 6),
    stat(31, 30, 30, 7),
  ];
  let mut found = proc_table::descendants_in(&stats, &[10]);
  found.sort();
  assert_eq!(found, [(11, 2), (12, 3), (13, 4)]);
  assert_eq!(proc_table::descendants_in(&stats, &[30]), [(31, 7)]);
  assert!(proc_table::descendants_in(&stats, &[13]).is_empty());
}

fn member_pids(snapshot: &Snapshot, group: &ProcessGroup) -> Vec<u32> {
  let plan = snapshot.plan(group, &snapshot.protected());
  let mut pids: Vec<u32> = plan.members.iter().map(|s| s.pid).collect();
  pids.sort();
  pids
}

/// The host, its group and its ancestors carry the task's tag here (as if the
/// host ran inside another task): none of them may be signalled.
#[test]
fn tree_never_includes_the_host_its_group_or_ancestors() {
  let me = std::process::id();
  let parent = nix::unistd::getppid().as_raw() as u32;
  let own_pgid = nix::unistd::getpgrp().as_raw() as u32;
  let tag = "t-9";
  let mut stats = vec![
    stat(me, parent, own_pgid, 100),
    stat(parent, 1, 4_000_001, 90),
    stat(1, 0, 1, 1),
    stat(4_000_100, me, 4_000_100, 200),
    stat(4_000_101, 4_000_100, 4_000_100, 201),
  ];
  if !stats.iter().any(|s| s.pid == own_pgid) {
    stats.push(stat(own_pgid, 1, own_pgid, 50));
  }
  let tagged = [me, parent, 1, own_pgid, 4_000_101];
  let tags: HashMap<u32, Vec<String>> = tagged.iter().map(|&p| (p, vec![tag.into()])).collect();
  let leader_start = stats
    .iter()
    .find(|s| s.pid == own_pgid)
    .map(|s| s.start_time);
  let snapshot = Snapshot::from_parts(stats, tags);

  let ours = ProcessGroup {
    pgid: 4_000_100,
    leader_start_time: Some(200),
    task_tag: tag.into(),
    cgroup: None,
    limits: None,
  };
  assert_eq!(member_pids(&snapshot, &ours), [4_000_100, 4_000_101]);
  assert_eq!(
    snapshot.plan(&ours, &snapshot.protected()).group,
    Some(4_000_100)
  );

  for pgid in [own_pgid, 1, 0, 4_000_001] {
    let group = ProcessGroup {
      pgid,
      leader_start_time: leader_start,
      task_tag: tag.into(),
      cgroup: None,
      limits: None,
    };
    let plan = snapshot.plan(&group, &snapshot.protected());
    assert_eq!(plan.group, None, "pgid {pgid} must not be signalled");
    let pids = member_pids(&snapshot, &group);
    for protected in [me, parent, 1, own_pgid] {
      assert!(
        !pids.contains(&protected),
        "pgid {pgid}: {pids:?} holds {protected}"
      );
    }
  }
}

#[test]
fn reused_pgid_is_not_ours() {
  let stats = vec![
    stat(4_000_200, 1, 4_000_200, 300),
    stat(4_000_201, 4_000_200, 4_000_200, 301),
  ];
  let snapshot = Snapshot::from_parts(stats.clone(), HashMap::new());
  let stale = ProcessGroup {
    pgid: 4_000_200,
    leader_start_time: Some(299),
    task_tag: "gone".into(),
    cgroup: None,
    limits: None,
  };
  let plan = snapshot.plan(&stale, &snapshot.protected());
  assert_eq!((plan.group, plan.members.len()), (None, 0));

  // Leader gone: the group is ours only while a tagged member is in it.
  let leaderless = Snapshot::from_parts(stats[1..].to_vec(), HashMap::new());
  let group = ProcessGroup {
    pgid: 4_000_200,
    leader_start_time: Some(300),
    task_tag: "t".into(),
    cgroup: None,
    limits: None,
  };
  assert_eq!(leaderless.plan(&group, &leaderless.protected()).group, None);
  let tags = HashMap::from([(4_000_201, vec!["t".to_string()])]);
  let tagged = Snapshot::from_parts(stats[1..].to_vec(), tags);
  assert_eq!(
    tagged.plan(&group, &tagged.protected()).group,
    Some(4_000_200)
  );
}

/// The same rules on a real scan: our own group is never killed.
#[test]
fn real_scan_protects_the_host() {
  let own_pgid = nix::unistd::getpgrp().as_raw() as u32;
  let snapshot = Snapshot::take();
  let group = ProcessGroup {
    pgid: own_pgid,
    leader_start_time: proc_table::start_time(own_pgid),
    task_tag: new_task_tag(),
    cgroup: None,
    limits: None,
  };
  let plan = snapshot.plan(&group, &snapshot.protected());
  assert_eq!(plan.group, None);
  let pids: Vec<u32> = plan.members.iter().map(|s| s.pid).collect();
  assert!(!pids.contains(&std::process::id()), "{pids:?}");
  assert!(!pids.contains(&own_pgid), "{pids:?}");
}

#[test]
fn timer_runs_jobs_in_deadline_order() {
  // Waits for all three (not a fixed sleep: a loaded machine may run the
  // timer thread late; then every job is due and still runs in order).
  let (tx, rx) = std::sync::mpsc::channel();
  for ms in [60u64, 20, 40] {
    let tx = tx.clone();
    super::super::timer::schedule(Duration::from_millis(ms), move || {
      let _ = tx.send(ms);
    });
  }
  let order: Vec<u64> = (0..3)
    .map(|_| {
      rx.recv_timeout(Duration::from_secs(30))
        .expect("the job runs")
    })
    .collect();
  assert_eq!(order, [20, 40, 60]);
}
