//! The event-driven reading core: a few reactor threads read every task's
//! pipes and learn of every task's exit, so the thread count stays flat as
//! tasks grow (a thread per pipe cost three threads a task).
//!
//! Each reactor thread owns a poller, the sources registered with it and a
//! timer queue. The poller is `mio`'s (tokio's): epoll on Linux, kqueue on
//! macOS and the BSDs, woken from other threads by its `Waker` (an eventfd on
//! Linux, `EVFILT_USER` on macOS). Every source is a descriptor registered
//! as a `SourceFd` whose token is the source's key. A pipe the poller
//! refuses is closed with that error, a pidfd falls back to a waiter thread
//! (kqueue refuses the `/dev/tty` alias, which is never registered here; it
//! takes pipes and pseudo-terminal masters). A task registers all its sources with one reactor, so its
//! handlers run one at a time: first the sources left unfinished by the last
//! turn, then those the poller reported, in its order. Handlers run on the
//! reactor thread and must not block for long: they decode, split, throttle
//! and queue (monitors) or write a file (shells).
//!
//! Sources:
//! * a pipe: read non-blocking, up to [`READS_PER_TURN`] reads of
//!   [`READ_CHUNK`] bytes before the next source gets its turn. mio's
//!   readiness is edge-triggered (`EPOLLET`, `EV_CLEAR`): the kernel reports
//!   a pipe again only once it was read dry (`WouldBlock`), so a pipe whose
//!   turn ended with data left is kept on the reactor's own list and served
//!   again on the next turn, after a wait that does not block. EOF or a read
//!   error closes it; a terminal's master (terminal mode) is watched as a
//!   pipe, its `EIO` (every process closed the terminal) being its EOF;
//! * a child's exit: a pidfd on Linux (5.3+), reaped with `waitpid` on its pid
//!   only (never `-1`: Node's own children are left to libuv; a pidfd that
//!   reports readiness before the child can be reaped is registered again,
//!   which re-arms it); elsewhere (macOS), or where `pidfd_open` is refused,
//!   a short-lived waiter thread per child;
//! * timers ([`Reactor::after`]), such as a monitor's 1000 ms drain deadline.
//!
//! A pipe streamed in small writes would wake the reactor for every write;
//! after a streak of small reads the reactor naps 200 µs before its next wait
//! so the next read carries more (coalesce.rs says when, and why no writer
//! ever blocks for it).
//!
//! Other threads talk to a reactor through its command queue and its waker;
//! registration returns at once.
//!
//! On Windows (`windows.rs`) the same API is built with threads: a reader
//! thread per pipe and a waiter thread per exit. What a task gives either
//! backend (its handlers, the pipe key, the read sizes) is declared once, in
//! `handlers.rs`.

#[cfg(unix)]
mod coalesce;
#[cfg(unix)]
mod exit_watch;
mod handlers;
#[cfg(test)]
mod tests;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

pub use handlers::{ExitHandler, PipeHandler, PipeKey, READS_PER_TURN, READ_CHUNK};
#[cfg(unix)]
pub use unix::{reactor_count, Reactor};
#[cfg(windows)]
pub use windows::{reactor_count, Reactor};
