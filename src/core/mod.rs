//! The pure core of taskstream: no napi types anywhere below this module.
//! Everything here is unit-tested with `cargo test`; `src/lib.rs` only maps
//! these types to JavaScript.

pub mod guards;
pub mod ids;
pub mod monitor;
pub mod process;
#[cfg(unix)]
pub mod reactor;
pub mod shell;
pub mod sync;
pub mod task;
pub mod terminal;
pub mod text;

#[cfg(test)]
pub(crate) mod test_vectors;
