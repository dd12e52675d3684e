//! Handle helpers shared by the spawn code and ConPTY: owning a raw handle, borrowing one, and
//! an anonymous pipe. A leaf, so `conpty.rs` and `spawn.rs` do not use each other for it.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Pipes::CreatePipe;

pub(super) fn owned(raw: HANDLE) -> OwnedHandle {
  // SAFETY: called only on handles just returned to us and owned by nobody else.
  unsafe { OwnedHandle::from_raw_handle(raw as _) }
}

pub(super) fn raw(handle: &OwnedHandle) -> HANDLE {
  handle.as_raw_handle() as HANDLE
}

/// An anonymous pipe (read end, write end), neither inheritable.
pub(super) fn pipe() -> io::Result<(OwnedHandle, OwnedHandle)> {
  let (mut read, mut write): (HANDLE, HANDLE) = (std::ptr::null_mut(), std::ptr::null_mut());
  // SAFETY: valid out-pointers; no security attributes (not inheritable).
  if unsafe { CreatePipe(&mut read, &mut write, std::ptr::null(), 0) } == 0 {
    return Err(io::Error::last_os_error());
  }
  Ok((owned(read), owned(write)))
}
