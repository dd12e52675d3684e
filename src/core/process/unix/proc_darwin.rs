//! The macOS backend of `proc_table.rs` (CONTRACT.md §4 item 5), without
//! procfs: libproc lists the pids (`proc_listallpids`) and describes each one
//! (`proc_pidinfo` `PROC_PIDTBSDINFO`: parent, group, status, start time), and
//! `sysctl` `KERN_PROCARGS2` returns the environment a process started with,
//! where the task tag is. The parsing is in `proc_darwin_parse.rs`.
//!
//! Both calls answer only for processes of the same user (or for root):
//! others are left out of a scan, which cannot signal them anyway. Start
//! times are microseconds since the epoch, with the wall clock of the fork.

use std::ffi::{c_int, c_void};
use std::mem::{size_of, MaybeUninit};
use std::ptr;

use once_cell::sync::Lazy;

use super::proc_darwin_parse::{proc_stat, procargs2_tags, procargs2_values, BsdInfo};
use super::proc_stat::ProcStat;

/// Start times are wall-clock times, and the clock may be stepped back (by
/// hand, or by `timed` after a long sleep). A process started up to an hour
/// "before" the host may still be the host's descendant, so its environment
/// is read too.
pub(super) const START_TIME_SLACK: u64 = 3600 * 1_000_000;

/// The watchdog (`watchdog.rs`) reads the process table with this `ps`, by
/// absolute path; it is part of the base system.
pub(super) const WATCHDOG_PS: &str = "/bin/ps";

static AVAILABLE: Lazy<bool> = Lazy::new(|| stat(std::process::id()).is_some());

/// Whether libproc describes processes here (it does unless a sandbox forbids it).
pub fn available() -> bool {
  *AVAILABLE
}

/// The process `pid`, zombies included, or `None` if it does not exist or
/// belongs to another user.
pub fn stat(pid: u32) -> Option<ProcStat> {
  let raw = c_int::try_from(pid).ok()?;
  let mut info = MaybeUninit::<libc::proc_bsdinfo>::zeroed();
  let size = size_of::<libc::proc_bsdinfo>() as c_int;
  // `arg` 1 asks for zombies too (xnu `proc_pidinfo`: `findzomb`), so an
  // exited leader we have not reaped still shows its start time.
  // SAFETY: `info` is a writable buffer of `size` bytes.
  let written = unsafe {
    libc::proc_pidinfo(
      raw,
      libc::PROC_PIDTBSDINFO,
      1,
      info.as_mut_ptr().cast(),
      size,
    )
  };
  if written != size {
    return None;
  }
  // SAFETY: the kernel filled all `size` bytes (and they were zeroed first).
  let info = unsafe { info.assume_init() };
  proc_stat(pid, &bsd_info(&info))
}

fn bsd_info(info: &libc::proc_bsdinfo) -> BsdInfo {
  BsdInfo {
    pid: info.pbi_pid,
    ppid: info.pbi_ppid,
    pgid: info.pbi_pgid,
    status: info.pbi_status,
    start_tvsec: info.pbi_start_tvsec,
    start_tvusec: info.pbi_start_tvusec,
  }
}

const _: () = assert!(super::proc_darwin_parse::SZOMB == libc::SZOMB);

/// Every pid on the system (pid 0, the kernel, left out).
pub fn list_pids() -> Vec<u32> {
  // SAFETY: a null buffer asks only for the count, with some room to grow.
  let estimate = unsafe { libc::proc_listallpids(ptr::null_mut(), 0) };
  let Ok(mut capacity) = usize::try_from(estimate) else {
    return Vec::new();
  };
  // A full buffer may have cut the list short: retry with more room.
  for _ in 0..4 {
    capacity += capacity / 2 + 64;
    let mut pids: Vec<c_int> = vec![0; capacity];
    let Ok(bytes) = c_int::try_from(capacity * size_of::<c_int>()) else {
      return Vec::new();
    };
    // SAFETY: `pids` holds `bytes` writable bytes; the result is a count.
    let count = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast::<c_void>(), bytes) };
    let Ok(count) = usize::try_from(count) else {
      return Vec::new();
    };
    if count < capacity {
      pids.truncate(count);
      return pids
        .into_iter()
        .filter_map(|pid| u32::try_from(pid).ok())
        .filter(|&pid| pid > 0)
        .collect();
    }
  }
  Vec::new()
}

/// `kern.argmax`: the most bytes of arguments and environment a process can
/// have, so the largest `KERN_PROCARGS2` answer (1 MiB on current macOS).
static ARG_MAX: Lazy<usize> = Lazy::new(|| {
  let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
  let mut value: c_int = 0;
  let mut len = size_of::<c_int>();
  // SAFETY: `value` is a writable `c_int` and `len` its size.
  let result = unsafe {
    libc::sysctl(
      mib.as_mut_ptr(),
      mib.len() as libc::c_uint,
      (&mut value as *mut c_int).cast(),
      &mut len,
      ptr::null_mut(),
      0,
    )
  };
  match usize::try_from(value) {
    Ok(max) if result == 0 && max > 0 => max,
    _ => 1 << 20,
  }
});

/// Reads the `KERN_PROCARGS2` of `pid` (its arguments and the environment it
/// started with) into `buf`, which a scan reuses for every process; the
/// length read. `None` if unreadable: another user's process, a zombie, or a
/// process that is gone.
fn procargs2(pid: u32, buf: &mut Vec<u8>) -> Option<usize> {
  let Ok(raw) = c_int::try_from(pid) else {
    return None;
  };
  if buf.len() < *ARG_MAX {
    // Zeroed lazily by the allocator: only the pages the kernel writes cost.
    *buf = vec![0; *ARG_MAX];
  }
  let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, raw];
  let mut len = buf.len();
  // SAFETY: `buf` holds `len` writable bytes; the kernel writes at most
  // `len` and stores the count in `len`.
  let result = unsafe {
    libc::sysctl(
      mib.as_mut_ptr(),
      mib.len() as libc::c_uint,
      buf.as_mut_ptr().cast(),
      &mut len,
      ptr::null_mut(),
      0,
    )
  };
  if result != 0 {
    return None;
  }
  Some(len.min(buf.len()))
}

/// The values of every `TASKSTREAM_TASK_ID=` entry of the environment `pid`
/// started with, reading through `buf`. Empty if unreadable.
pub(super) fn env_tags_with(pid: u32, buf: &mut Vec<u8>) -> Vec<String> {
  match procargs2(pid, buf) {
    Some(len) => procargs2_tags(&buf[..len]),
    None => Vec::new(),
  }
}

/// The values of the `<name>=` entries of the process's environment.
pub(super) fn env_values(pid: u32, name: &str) -> Vec<String> {
  let mut buf = Vec::new();
  match procargs2(pid, &mut buf) {
    Some(len) => procargs2_values(&buf[..len], name),
    None => Vec::new(),
  }
}

/// The short command name (`proc_name`, as `ps -o comm` shows it).
#[cfg(test)]
pub(crate) fn name(pid: u32) -> Option<String> {
  let raw = c_int::try_from(pid).ok()?;
  let mut buf = [0u8; 2 * libc::MAXCOMLEN + 1];
  // SAFETY: `buf` holds `buf.len()` writable bytes; the result is the length.
  let len = unsafe { libc::proc_name(raw, buf.as_mut_ptr().cast(), buf.len() as u32) };
  let len = usize::try_from(len).ok().filter(|&len| len > 0)?;
  Some(String::from_utf8_lossy(&buf[..len.min(buf.len())]).into_owned())
}
