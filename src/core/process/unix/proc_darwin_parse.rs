//! The pure half of the macOS backend (`proc_darwin.rs`): turning what
//! libproc and `sysctl` return into [`ProcStat`]s and tags. No system calls,
//! so it is compiled and unit-tested on every Unix.

use super::proc_stat::{tag_values, ProcStat};

/// The fields of libproc's `struct proc_bsdinfo` (`PROC_PIDTBSDINFO`) that
/// the tree code needs, copied out of the C struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct BsdInfo {
  /// `pbi_pid`.
  pub(super) pid: u32,
  /// `pbi_ppid`.
  pub(super) ppid: u32,
  /// `pbi_pgid`.
  pub(super) pgid: u32,
  /// `pbi_status`, the `p_stat` of `<sys/proc.h>`: `SIDL`, `SRUN`, `SSLEEP`,
  /// `SSTOP` or [`SZOMB`].
  pub(super) status: u32,
  /// `pbi_start_tvsec`: wall-clock seconds of the fork.
  pub(super) start_tvsec: u64,
  /// `pbi_start_tvusec`: the microseconds of that second.
  pub(super) start_tvusec: u64,
}

/// `SZOMB` of `<sys/proc.h>`: exited, awaiting collection by its parent.
pub(super) const SZOMB: u32 = 5;

/// The [`ProcStat`] of `info`, which `proc_pidinfo` returned for `pid`;
/// `None` if it describes another process. The start time is microseconds
/// since the epoch, `pbi_start_tvsec * 10^6 + pbi_start_tvusec`: two
/// processes that ever held the same pid never share it.
pub(super) fn proc_stat(pid: u32, info: &BsdInfo) -> Option<ProcStat> {
  if info.pid != pid {
    return None;
  }
  Some(ProcStat {
    pid,
    ppid: info.ppid,
    pgid: info.pgid,
    start_time: info
      .start_tvsec
      .saturating_mul(1_000_000)
      .saturating_add(info.start_tvusec.min(999_999)),
    zombie: info.status == SZOMB,
  })
}

/// The environment strings of a `sysctl` `{CTL_KERN, KERN_PROCARGS2, pid}`
/// buffer, whose documented layout is:
///
/// ```text
/// argc            4 bytes, native byte order
/// exec_path\0     the executable's path
/// \0\0…           NUL padding
/// argv[0]\0 … argv[argc-1]\0
/// envp[0]\0 … envp[n-1]\0
/// \0…             then more NULs (and the kernel's own "apple" strings)
/// ```
///
/// The environment ends at the first empty string or at the end of `buf`; a
/// last string without its NUL (a truncated buffer) is dropped. A malformed
/// buffer (too short, negative argc, fewer arguments than argc) has no
/// environment. An empty `argv[0]` cannot be told apart from the padding, so
/// then one environment string is taken for the last argument (every tool
/// reading this buffer has that limit; shells never start a child that way).
pub(super) fn procargs2_env(buf: &[u8]) -> Vec<&[u8]> {
  let Some((argc, rest)) = buf.split_first_chunk::<4>() else {
    return Vec::new();
  };
  let Ok(argc) = usize::try_from(i32::from_ne_bytes(*argc)) else {
    return Vec::new();
  };
  let Some(path_end) = rest.iter().position(|&b| b == 0) else {
    return Vec::new();
  };
  let rest = &rest[path_end..];
  let Some(args_start) = rest.iter().position(|&b| b != 0) else {
    return Vec::new();
  };
  // Every string below ends with its NUL; the last piece of the split is
  // whatever follows the last NUL (empty, or a truncated string).
  let mut strings = rest[args_start..].split(|&b| b == 0);
  let mut complete = rest[args_start..].iter().filter(|&&b| b == 0).count();
  for _ in 0..argc {
    if complete == 0 || strings.next().is_none() {
      return Vec::new();
    }
    complete -= 1;
  }
  strings
    .take(complete)
    .take_while(|entry| !entry.is_empty())
    .collect()
}

/// The values of the `TASKSTREAM_TASK_ID=` entries in the environment of a
/// `KERN_PROCARGS2` buffer (see [`procargs2_env`]).
pub(super) fn procargs2_tags(buf: &[u8]) -> Vec<String> {
  tag_values(procargs2_env(buf))
}

/// The values of the `<name>=` entries in the environment of a
/// `KERN_PROCARGS2` buffer.
#[cfg(target_os = "macos")]
pub(super) fn procargs2_values(buf: &[u8], name: &str) -> Vec<String> {
  super::proc_stat::named_values(procargs2_env(buf), name)
}
