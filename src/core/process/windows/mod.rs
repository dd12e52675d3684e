//! Containment on Windows, the whole story in this folder:
//!
//! * **spawn contained** (spawn.rs): the leader is created suspended, put in
//!   a Job Object of its own and only then resumed, with stdin from `NUL`,
//!   stdout and stderr as anonymous pipes, no console window and no other
//!   inherited handle; every process it starts is born in the job; in
//!   terminal mode (conpty.rs) the same, attached to a pseudo console;
//! * **the tree** (job.rs): the job *is* the tree, kept by the kernel: no
//!   enumeration, no parent links, no pid ever used to kill;
//! * **stop** (kill.rs): `TerminateJobObject`, at once (why there is no
//!   graceful step is said there), from the timer thread;
//! * **host death** (job.rs): kill-on-close. Only taskstream holds each
//!   job's handle; when Node ends, however it ends, the kernel closes it and
//!   kills every member. No watchdog process is needed. A normal exit also
//!   terminates every tracked job from `process.on('exit')`.
//!
//! Exit codes: Windows has no signals, so `ExitStatusInfo::signal` is
//! always `None` and the code is the process's exit code as a signed 32-bit
//! number (std's `ExitStatus::code`). An NTSTATUS exit therefore reads
//! negative: `0xC000013A` (STATUS_CONTROL_C_EXIT, a console closed or a
//! Ctrl+C/Ctrl+Break) is `-1073741510`, `0xC0000005` (access violation) is
//! `-1073741819`, where Node's `child_process` would say `3221225786` and
//! `3221225477`. A task taskstream stopped is `cancelled` whatever its code
//! (its processes get exit code 1 from `TerminateJobObject`).

pub mod conpty;
mod handles;
pub(crate) mod job;
mod kill;
mod ports;
pub mod proc_table;
mod spawn;
pub(super) mod wait;

pub use job::{Job, ProcessGroup};
pub use kill::{
  forget_if_dead, kill_all_sync, kill_now, kill_now_all, terminate, terminate_leftovers,
  tracked_groups, tree_alive, SIGKILL_GRACE,
};
pub use ports::listening_ports;
pub use spawn::{spawn, spawn_serialized};

#[cfg(test)]
mod tests;
