//! The reactor on real pipes, real children and real timers: one file per
//! backend.

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
