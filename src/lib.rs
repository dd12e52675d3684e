//! napi glue only: argument checking, type mapping and callbacks.
//! All behaviour lives in `core`, which has no napi types.
#![deny(clippy::all)]

mod binding;
pub mod core;
