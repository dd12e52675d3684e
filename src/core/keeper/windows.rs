//! What the keeper does differently on Windows. Its launcher already detached it (no console,
//! out of the host's jobs and console group: `persist/launch/windows.rs`), so there is nothing
//! to leave and no console signal can reach it: it stops on a cancel request, its lease, or its
//! own death. Its task's Job Object (kill on close) is held by this process alone, so however the
//! keeper ends, the system ends the whole tree with it.

use std::fs::OpenOptions;
use std::io;
use std::os::windows::io::{IntoRawHandle, RawHandle};

use windows_sys::Win32::Foundation::CloseHandle;
use windows_sys::Win32::System::Console::{
  GetStdHandle, SetStdHandle, STD_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
};

use crate::persist::records::TaskProcess;
use crate::process::{proc_table, ProcessGroup};

pub(super) fn detach() -> io::Result<()> {
  Ok(())
}

pub(super) fn install_signal_handlers() {}

/// No signal reaches a keeper on Windows.
pub(super) fn received_signal() -> Option<String> {
  None
}

/// Points stdin and stdout at `NUL` (after the handshake) and closes the pipes they were, so
/// the launcher's reader ends.
pub(super) fn close_stdio() {
  for which in [STD_INPUT_HANDLE, STD_OUTPUT_HANDLE] {
    replace_std_handle(which);
  }
}

fn replace_std_handle(which: STD_HANDLE) {
  let Ok(null) = OpenOptions::new().read(true).write(true).open("NUL") else {
    return;
  };
  let null: RawHandle = null.into_raw_handle();
  // SAFETY: the process's own standard handle slot; the old handle is ours (inherited for this
  // purpose) and nothing else in the keeper holds it once the slot is replaced; `null` stays
  // open for the rest of the process as the new standard handle.
  unsafe {
    let old = GetStdHandle(which);
    if SetStdHandle(which, null as _) != 0 && !old.is_null() && old as isize != -1 {
      CloseHandle(old);
    }
  }
}

/// The task as its record names it: the leader, its creation time and tag (no group or cgroup:
/// the tree is the keeper's Job Object, which no other process can name).
pub(super) fn task_process(pid: u32, group: &ProcessGroup) -> TaskProcess {
  TaskProcess {
    pid,
    pgid: pid,
    start_time: proc_table::start_time(pid),
    tag: group.task_tag.clone(),
    cgroup: None,
  }
}
