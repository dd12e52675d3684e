//! The adoption lock, in one process and between two racing hosts (every platform).

use std::fs;
use std::io::BufReader;
use std::process::Stdio;
use std::time::Duration;

use super::read_line_where;
use super::support::{wait_until, StateDir};
use crate::persist::{AdoptionLock, TryLock};

#[test]
fn the_adoption_lock_has_one_holder_in_a_process() {
  let dir = StateDir::new("lock-local");
  let TryLock::Acquired(lock) = AdoptionLock::try_acquire(dir.path(), "mon_1").unwrap() else {
    panic!("first lock must be acquired");
  };
  #[cfg(unix)]
  assert_eq!(super::files::mode(lock.path()), 0o600);
  assert!(matches!(
    AdoptionLock::try_acquire(dir.path(), "mon_1").unwrap(),
    TryLock::Busy
  ));
  assert!(matches!(
    AdoptionLock::try_acquire(dir.path(), "mon_2").unwrap(),
    TryLock::Acquired(_)
  ));
  drop(lock);
  // A fork of this process by a test running beside this one shares the
  // lock until its exec closes it (close-on-exec): wait for that.
  assert!(wait_until(Duration::from_secs(10), || matches!(
    AdoptionLock::try_acquire(dir.path(), "mon_1").unwrap(),
    TryLock::Acquired(_)
  )));
  assert!(AdoptionLock::try_acquire(dir.path(), "a/b").is_err());
}

/// Kills the racing hosts if the test fails midway.
struct Racers(Vec<std::process::Child>);

impl Drop for Racers {
  fn drop(&mut self) {
    for child in &mut self.0 {
      let _ = child.kill();
      let _ = child.wait();
    }
  }
}

#[test]
fn two_hosts_racing_for_the_adoption_lock_exactly_one_wins() {
  let dir = StateDir::new("lock-race");
  for round in 0..3 {
    // A lock of its own per round: a fork of this process by a test running
    // beside this one may share the last round's lock for a moment.
    let id = format!("race-{round}");
    let _ = fs::remove_file(dir.path().join("go"));
    let mut racers = Racers(Vec::new());
    let mut outputs = Vec::new();
    for _ in 0..2 {
      let mut child = super::support::spawn_helper(
        super::support::this_binary_command(&[
          "--exact",
          "persist::tests::locker_entry",
          "--nocapture",
          "--test-threads=1",
        ])
        .env("TASKSTREAM_TEST_LOCKER", dir.path())
        .env("TASKSTREAM_TEST_LOCK_ID", &id)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null()),
      );
      let mut stdout = BufReader::new(child.stdout.take().unwrap());
      read_line_where(&mut stdout, |l| l == "ready").expect("racer ready");
      outputs.push(stdout);
      racers.0.push(child);
    }
    // Both wait on the same file: they try the lock at the same moment.
    fs::File::create(dir.path().join("go")).unwrap();
    let results: Vec<String> = outputs
      .iter_mut()
      .map(|out| read_line_where(out, |l| l == "won" || l == "busy").expect("racer result"))
      .collect();
    let winners = results.iter().filter(|r| *r == "won").count();
    assert_eq!(winners, 1, "round {round}: {results:?}");
    // While the winner holds it, nobody else gets it.
    assert!(matches!(
      AdoptionLock::try_acquire(dir.path(), &id).unwrap(),
      TryLock::Busy
    ));
    // The kernel releases it when its holder dies, however it dies.
    let winner = results.iter().position(|r| r == "won").unwrap();
    racers.0[winner].kill().unwrap();
    racers.0[winner].wait().unwrap();
    assert!(wait_until(Duration::from_secs(10), || matches!(
      AdoptionLock::try_acquire(dir.path(), &id).unwrap(),
      TryLock::Acquired(_)
    )));
    for child in &mut racers.0 {
      drop(child.stdin.take());
    }
    for child in &mut racers.0 {
      let _ = child.wait();
    }
    racers.0.clear();
  }
}
