//! Persistence tests with real processes. The keeper runs as this test
//! binary re-executed: [`keeper_entry`] becomes the keeper's main when
//! `TASKSTREAM_TEST_KEEPER=1`.

/// The keeper's entry point in `cargo test` (returns at once otherwise).
#[test]
fn keeper_entry() {
  if std::env::var_os("TASKSTREAM_TEST_KEEPER").is_some_and(|v| v == "1") {
    std::process::exit(super::keeper_main());
  }
}
