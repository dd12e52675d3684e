//! The pure core of taskstream, the crate `taskstream-core`: no napi types anywhere in it.
//! Everything here is unit-tested with `cargo test`; the binding (`src/lib.rs`, the root
//! package) only maps these types to JavaScript, and the keeper executable (`src/keeper/`) runs
//! [`keeper::keeper_main`].
#![deny(clippy::all)]

pub mod clock;
pub mod end;
pub mod guards;
pub mod ids;
pub mod keeper;
pub mod launch;
pub mod monitor;
pub mod persist;
pub(crate) mod private_file;
pub mod process;
#[cfg(any(unix, windows))]
pub mod reactor;
pub mod restart;
pub mod shell;
pub mod sync;
pub mod task;
pub mod terminal;
pub mod text;
pub mod wait;

#[cfg(test)]
pub(crate) mod test_vectors;
