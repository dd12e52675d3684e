//! Persistence tests with real processes. The keeper runs as this test
//! binary re-executed: [`keeper_entry`] becomes the keeper's main when
//! `TASKSTREAM_TEST_KEEPER=1`; [`launcher_entry`] and [`locker_entry`] play
//! a short-lived host and a racing host the same way. Every test uses a
//! short lease as its own backstop and kills what it started by recorded
//! group and tag ([`support::Cleanup`]).

#[cfg(unix)]
mod files;
#[cfg(unix)]
mod follow;
#[cfg(unix)]
mod keeper;
mod lock;
mod support;
#[cfg(windows)]
mod windows;

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use super::records::KeeperConfig;
use super::{launch_keeper, AdoptionLock, TryLock};

/// The keeper's entry point in `cargo test` (returns at once otherwise).
#[test]
fn keeper_entry() {
  if std::env::var_os("TASKSTREAM_TEST_KEEPER").is_some_and(|v| v == "1") {
    std::process::exit(crate::keeper::keeper_main());
  }
}

/// A host that launches a keeper (config JSON in the file named by
/// `TASKSTREAM_TEST_LAUNCHER`), prints `launched <keeper pid>` and waits to
/// be killed (at most 60 s).
#[test]
fn launcher_entry() {
  let Some(path) = std::env::var_os("TASKSTREAM_TEST_LAUNCHER") else {
    return;
  };
  let config: KeeperConfig =
    serde_json::from_slice(&std::fs::read(PathBuf::from(path)).unwrap()).unwrap();
  let started = launch_keeper(&support::keeper_program(), &config).unwrap();
  // libtest may have printed "test … " without a newline.
  println!("\nlaunched {}", started.keeper_pid);
  std::io::stdout().flush().unwrap();
  std::thread::sleep(Duration::from_secs(60));
  std::process::exit(0);
}

/// A host racing for the adoption lock of task `TASKSTREAM_TEST_LOCK_ID` in
/// the state directory named by `TASKSTREAM_TEST_LOCKER`: waits for `<dir>/go`, tries
/// the lock, prints `won` or `busy`, and holds it until stdin closes.
#[test]
fn locker_entry() {
  let Some(dir) = std::env::var_os("TASKSTREAM_TEST_LOCKER") else {
    return;
  };
  let dir = PathBuf::from(dir);
  println!("\nready");
  std::io::stdout().flush().unwrap();
  support::wait_until(Duration::from_secs(30), || dir.join("go").exists());
  let id = std::env::var("TASKSTREAM_TEST_LOCK_ID").unwrap();
  let result = AdoptionLock::try_acquire(&dir, &id).unwrap();
  println!(
    "\n{}",
    match result {
      TryLock::Acquired(_) => "won",
      TryLock::Busy => "busy",
    }
  );
  std::io::stdout().flush().unwrap();
  let mut rest = Vec::new();
  let _ = std::io::stdin().lock().read_to_end(&mut rest);
  drop(result);
  std::process::exit(0);
}

/// Reads lines of `reader` until one satisfies `pick` (skipping a test
/// harness's banner); `None` at EOF.
fn read_line_where(reader: &mut impl BufRead, pick: impl Fn(&str) -> bool) -> Option<String> {
  let mut line = String::new();
  loop {
    line.clear();
    if reader.read_line(&mut line).ok()? == 0 {
      return None;
    }
    let trimmed = line.trim_end();
    if pick(trimmed) {
      return Some(trimmed.to_owned());
    }
  }
}
