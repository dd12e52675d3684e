//! Starting a keeper on Windows (the host's side): the platform half of `launch_keeper`.
//!
//! The keeper must outlive the host, so it is started outside every job of the host's: with
//! `CREATE_BREAKAWAY_FROM_JOB` (a host that runs in a job, a CI runner's or a terminal's, would
//! otherwise take the keeper down with it when that job closes). A job that forbids breakaway
//! refuses the start with `ERROR_ACCESS_DENIED`; the keeper is then started inside it, and lives
//! as long as that job does (docs/persistence.md "Windows"). `DETACHED_PROCESS` gives it no
//! console, so no console's Ctrl+C or close reaches it, and `CREATE_NEW_PROCESS_GROUP` keeps it
//! out of the host's console group. Its working directory is the system's (`%SystemRoot%`): a
//! process's working directory cannot be removed while it runs, and the keeper must hold none of
//! the user's.

use std::io;
use std::os::windows::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command};

use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, HMODULE, MAX_PATH};
use windows_sys::Win32::System::LibraryLoader::{
  GetModuleFileNameW, GetModuleHandleExW, GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS,
  GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
};
use windows_sys::Win32::System::Threading::{
  CREATE_BREAKAWAY_FROM_JOB, CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS,
};

pub(super) fn spawn(command: &mut Command) -> io::Result<Child> {
  if let Some(root) = std::env::var_os("SystemRoot") {
    command.current_dir(root);
  }
  let detached = DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP;
  // Under the spawn lock: no task pipe of ours is inheritable while std starts it.
  crate::process::spawn_serialized(|| {
    match command
      .creation_flags(detached | CREATE_BREAKAWAY_FROM_JOB)
      .spawn()
    {
      Err(error) if error.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => {
        tracing::debug!("taskstream: the host's job forbids breakaway; the keeper starts in it");
        command.creation_flags(detached).spawn()
      }
      started => started,
    }
  })
}

/// A keeper that answered: its handle is closed (no zombie on Windows).
pub(super) fn release(child: Child) {
  drop(child);
}

/// The file this code was loaded from (the addon's `.node` file in Node, the test binary in
/// `cargo test`, the keeper executable in a keeper): the module that holds one of its functions.
pub fn addon_path() -> io::Result<PathBuf> {
  let mut module: HMODULE = std::ptr::null_mut();
  let address = addon_path as fn() -> io::Result<PathBuf> as *const u16;
  // SAFETY: the address is one of our own functions; `module` is a valid out-pointer; the
  // reference count is left alone (the module is this code's own, loaded while it runs).
  let ok = unsafe {
    GetModuleHandleExW(
      GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
      address,
      &mut module,
    )
  };
  if ok == 0 {
    return Err(io::Error::other(format!(
      "cannot find the addon's file ({})",
      io::Error::last_os_error()
    )));
  }
  let mut buffer = vec![0u16; MAX_PATH as usize];
  loop {
    // SAFETY: a live module handle and a buffer of that many units.
    let len = unsafe { GetModuleFileNameW(module, buffer.as_mut_ptr(), buffer.len() as u32) };
    if len == 0 {
      return Err(io::Error::last_os_error());
    }
    if (len as usize) < buffer.len() {
      use std::os::windows::ffi::OsStringExt;
      return Ok(PathBuf::from(std::ffi::OsString::from_wide(
        &buffer[..len as usize],
      )));
    }
    if buffer.len() >= 1 << 15 {
      return Err(io::Error::other("the addon's path is too long"));
    }
    buffer.resize(buffer.len() * 2, 0);
  }
}
