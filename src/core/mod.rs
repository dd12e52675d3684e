//! The pure core of taskstream: no napi types anywhere below this module.
//! Everything here is unit-tested with `cargo test`; `src/lib.rs` only maps
//! these types to JavaScript.

pub mod clock;
pub mod end;
pub mod guards;
pub mod ids;
pub mod keeper;
pub mod launch;
pub mod monitor;
pub mod persist;
pub mod process;
#[cfg(any(unix, windows))]
pub mod reactor;
pub mod shell;
pub mod sync;
pub mod task;
pub mod terminal;
pub mod text;
pub mod wait;

#[cfg(test)]
pub(crate) mod test_vectors;
