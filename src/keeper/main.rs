//! The keeper executable (docs/persistence.md "The keeper"): one persisted task's host for as long
//! as its lease holds. The addon starts it from beside its `.node` file (`core::persist::launch`);
//! its whole life is `taskstream_core::keeper::keeper_main`.

fn main() {
  std::process::exit(taskstream_core::keeper::keeper_main());
}
