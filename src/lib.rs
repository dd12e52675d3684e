//! taskstream: the background-task core of a coding-agent CLI as a Node addon.
//!
//! `core` (the crate `taskstream-core`, src/core/) holds all behaviour and has
//! no napi types; it is tested with `cargo test`. `binding` is the napi glue
//! only: argument checking, type mapping and callbacks.
#![deny(clippy::all)]
// napi's `Function<FnArgs<(…)>, Ret>` types spell out JavaScript signatures;
// napi-rs cannot resolve type aliases in generated typings, so we keep them inline.
#![allow(clippy::type_complexity)]

// Under `cargo test` the napi registration glue is not linked, so the exported
// functions look unused.
#[cfg_attr(test, allow(dead_code))]
mod binding;

/// The pure core (src/core/, the crate `taskstream-core`), under the name the binding uses.
pub use taskstream_core as core;
