//! Waiting for a leader through its process handle.

use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::os::windows::process::ExitStatusExt;
use std::process::ExitStatus;

use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, WaitForSingleObject, INFINITE};

/// The exit status once the process exited (`None` when `no_hang` and it
/// still runs). Its handle stays open, so its id is not reused meanwhile.
pub fn wait_process(process: &OwnedHandle, no_hang: bool) -> io::Result<Option<ExitStatus>> {
  let handle = process.as_raw_handle() as HANDLE;
  // SAFETY: an open process handle of ours.
  match unsafe { WaitForSingleObject(handle, if no_hang { 0 } else { INFINITE }) } {
    WAIT_OBJECT_0 => {}
    WAIT_TIMEOUT => return Ok(None),
    _ => return Err(io::Error::last_os_error()),
  }
  let mut code = 0u32;
  // SAFETY: an open process handle and a valid out-pointer.
  if unsafe { GetExitCodeProcess(handle, &mut code) } == 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(Some(ExitStatus::from_raw(code)))
}
