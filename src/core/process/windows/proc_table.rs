//! The process table on Windows, what persistence needs of it (the Unix side is
//! `process/unix/proc_table.rs`): whether a pid is a live process, its creation time (to tell a
//! reused pid apart), and the values of a variable in the environment it was started with (the
//! keeper's and the task's tags). Nothing here ever signals or opens a process for anything but
//! reading.
//!
//! * **Liveness and start time**: `OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE)`;
//!   `ERROR_INVALID_PARAMETER` means no process has the pid; a signalled process handle means it
//!   exited (its object lingers while anyone holds a handle); the creation time is
//!   `GetProcessTimes`'s, in 100 ns units since 1601, unique per pid at any one time.
//! * **Environment**: the block the process was started with, read from its memory:
//!   `NtQueryInformationProcess(ProcessBasicInformation)` gives the PEB, whose
//!   `ProcessParameters` hold `Environment` and `EnvironmentSize` (fixed offsets of the 64-bit
//!   and 32-bit layouts, the same in Wine). It needs `PROCESS_QUERY_INFORMATION | PROCESS_VM_READ`,
//!   which a process of the same user grants; anything unreadable reads as no value.

use std::ffi::c_void;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Wdk::System::Threading::{NtQueryInformationProcess, ProcessBasicInformation};
use windows_sys::Win32::Foundation::{ERROR_INVALID_PARAMETER, FILETIME, HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Diagnostics::Debug::ReadProcessMemory;
use windows_sys::Win32::System::Threading::{
  GetProcessTimes, OpenProcess, WaitForSingleObject, PROCESS_QUERY_INFORMATION,
  PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, PROCESS_VM_READ,
};

pub use crate::process::liveness::Liveness;

/// Windows always has a process table.
pub fn available() -> bool {
  true
}

fn open(pid: u32, access: u32) -> Result<OwnedHandle, std::io::Error> {
  // SAFETY: plain arguments; a returned handle is owned below.
  let raw = unsafe { OpenProcess(access, 0, pid) };
  if raw.is_null() {
    return Err(std::io::Error::last_os_error());
  }
  // SAFETY: a new handle that nothing else owns.
  Ok(unsafe { OwnedHandle::from_raw_handle(raw as _) })
}

fn raw(handle: &OwnedHandle) -> HANDLE {
  handle.as_raw_handle() as HANDLE
}

/// Whether `pid` is a live process, and its creation time.
pub fn liveness(pid: u32) -> Liveness {
  if pid == 0 {
    return Liveness::Gone;
  }
  let handle = match open(pid, PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE) {
    Ok(handle) => handle,
    Err(error) if error.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) => {
      return Liveness::Gone
    }
    // It exists (access denied: another user's, or protected) but cannot be read.
    Err(_) => return Liveness::Live { start_time: None },
  };
  // SAFETY: a live handle with SYNCHRONIZE; a zero timeout only polls.
  if unsafe { WaitForSingleObject(raw(&handle), 0) } == WAIT_OBJECT_0 {
    return Liveness::Gone;
  }
  Liveness::Live {
    start_time: creation_time(&handle),
  }
}

/// The process's creation time (100 ns units since 1601), if it is alive.
pub fn start_time(pid: u32) -> Option<u64> {
  match liveness(pid) {
    Liveness::Live { start_time } => start_time,
    Liveness::Gone => None,
  }
}

fn creation_time(handle: &OwnedHandle) -> Option<u64> {
  let zero = FILETIME {
    dwLowDateTime: 0,
    dwHighDateTime: 0,
  };
  let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
  // SAFETY: a live handle with PROCESS_QUERY_LIMITED_INFORMATION; four out-pointers.
  let ok = unsafe {
    GetProcessTimes(
      raw(handle),
      &mut created,
      &mut exited,
      &mut kernel,
      &mut user,
    )
  };
  (ok != 0).then(|| (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
}

/// The values of every `<name>=` entry (names compare without case, as Windows does) of the
/// environment the process was started with. Empty if unreadable.
pub fn env_values(pid: u32, name: &str) -> Vec<String> {
  let Some(block) = environment(pid) else {
    return Vec::new();
  };
  let prefix: Vec<u16> = name.encode_utf16().chain([u16::from(b'=')]).collect();
  block
    .split(|&unit| unit == 0)
    .filter(|entry| {
      entry.len() >= prefix.len()
        && String::from_utf16_lossy(&entry[..prefix.len()])
          .eq_ignore_ascii_case(&String::from_utf16_lossy(&prefix))
    })
    .map(|entry| String::from_utf16_lossy(&entry[prefix.len()..]))
    .collect()
}

/// `PROCESS_BASIC_INFORMATION`, declared here (windows-sys puts it behind a large feature).
#[repr(C)]
#[allow(dead_code)] // the layout is the system's; only `peb` is read
struct BasicInformation {
  exit_status: i32,
  peb: usize,
  affinity_mask: usize,
  base_priority: i32,
  pid: usize,
  parent_pid: usize,
}

/// Offsets in the PEB and in `RTL_USER_PROCESS_PARAMETERS`, for this build's pointer width (a
/// host reads processes of its own width: the keeper and the tasks it starts).
#[cfg(target_pointer_width = "64")]
mod offsets {
  pub const PROCESS_PARAMETERS: usize = 0x20;
  pub const ENVIRONMENT: usize = 0x80;
  pub const ENVIRONMENT_SIZE: usize = 0x3f0;
}
#[cfg(target_pointer_width = "32")]
mod offsets {
  pub const PROCESS_PARAMETERS: usize = 0x10;
  pub const ENVIRONMENT: usize = 0x48;
  pub const ENVIRONMENT_SIZE: usize = 0x290;
}

/// Largest environment block read.
const MAX_ENVIRONMENT: usize = 1 << 20;

fn read(handle: &OwnedHandle, address: usize, buffer: &mut [u8]) -> bool {
  let mut done = 0usize;
  // SAFETY: reads another process's memory into our own buffer of that length.
  let ok = unsafe {
    ReadProcessMemory(
      raw(handle),
      address as *const c_void,
      buffer.as_mut_ptr().cast(),
      buffer.len(),
      &mut done,
    )
  };
  ok != 0 && done == buffer.len()
}

fn read_usize(handle: &OwnedHandle, address: usize) -> Option<usize> {
  let mut bytes = [0u8; std::mem::size_of::<usize>()];
  read(handle, address, &mut bytes).then(|| usize::from_ne_bytes(bytes))
}

/// The environment block in UTF-16 units, up to its terminating empty entry.
fn environment(pid: u32) -> Option<Vec<u16>> {
  let handle = open(pid, PROCESS_QUERY_INFORMATION | PROCESS_VM_READ).ok()?;
  // SAFETY: plain data, filled by the call.
  let mut info: BasicInformation = unsafe { std::mem::zeroed() };
  let mut len = 0u32;
  // SAFETY: a live handle with PROCESS_QUERY_INFORMATION; `info` is the class's structure.
  let status = unsafe {
    NtQueryInformationProcess(
      raw(&handle),
      ProcessBasicInformation,
      (&mut info as *mut BasicInformation).cast(),
      std::mem::size_of::<BasicInformation>() as u32,
      &mut len,
    )
  };
  if status < 0 || info.peb == 0 {
    return None;
  }
  let parameters = read_usize(&handle, info.peb + offsets::PROCESS_PARAMETERS)?;
  let block = read_usize(&handle, parameters + offsets::ENVIRONMENT)?;
  if block == 0 {
    return None;
  }
  let size = read_usize(&handle, parameters + offsets::ENVIRONMENT_SIZE).unwrap_or(0);
  let mut bytes = Vec::new();
  if size > 0 && size <= MAX_ENVIRONMENT {
    bytes.resize(size & !1, 0);
    if !read(&handle, block, &mut bytes) {
      return None;
    }
  } else {
    // No recorded size: read page-sized pieces until the block's end (two NUL units).
    const PIECE: usize = 4096;
    while bytes.len() < MAX_ENVIRONMENT {
      let mut piece = vec![0u8; PIECE - (block + bytes.len()) % PIECE];
      if !read(&handle, block + bytes.len(), &mut piece) {
        break;
      }
      bytes.extend_from_slice(&piece);
      if units(&bytes).windows(2).any(|w| w == [0, 0]) {
        break;
      }
    }
  }
  let units = units(&bytes);
  let end = units
    .windows(2)
    .position(|w| w == [0, 0])
    .map_or(units.len(), |at| at + 1);
  Some(units[..end].to_vec())
}

fn units(bytes: &[u8]) -> Vec<u16> {
  bytes
    .chunks_exact(2)
    .map(|pair| u16::from_ne_bytes([pair[0], pair[1]]))
    .collect()
}
