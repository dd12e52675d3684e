//! Starting a keeper on Unix (the host's side): the platform half of `launch_keeper`.

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command};

/// No `pre_exec`: std starts it with posix_spawn (vfork and exec), not a fork of the whole
/// host, which cost a Node host milliseconds per start. The keeper detaches itself first thing
/// (`core::keeper`: its own session, default signal dispositions, no inherited descriptor). Its
/// working directory is `/`, so that it holds no mount busy.
pub(super) fn spawn(command: &mut Command) -> io::Result<Child> {
  command.current_dir("/").spawn()
}

/// A keeper that answered: a thread of ours reaps it when it exits (no zombie).
pub(super) fn release(mut child: Child) {
  let spawned = std::thread::Builder::new()
    .name("taskstream-keeper-reaper".into())
    .spawn(move || {
      let _ = child.wait();
    });
  if let Err(error) = spawned {
    tracing::warn!(%error, "taskstream: cannot start the keeper's reaper thread");
  }
}

/// The file this code was loaded from (the addon's `.node` file in Node, the
/// test binary in `cargo test`, the keeper executable in a keeper), found with `dladdr` on one of its functions.
pub fn addon_path() -> io::Result<PathBuf> {
  // SAFETY: `info` is a valid out-pointer; the address is one of our own
  // functions; `dli_fname` is a NUL-terminated string owned by the dynamic
  // linker, copied before anything can unload the object.
  unsafe {
    let mut info: libc::Dl_info = std::mem::zeroed();
    let address = addon_path as fn() -> io::Result<PathBuf> as *const libc::c_void;
    if libc::dladdr(address, &mut info) == 0 || info.dli_fname.is_null() {
      return Err(io::Error::other(
        "cannot find the addon's file (dladdr found nothing)",
      ));
    }
    let name = std::ffi::CStr::from_ptr(info.dli_fname);
    use std::os::unix::ffi::OsStrExt;
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    // A main program may be named as it was started (relative): resolve it.
    std::fs::canonicalize(&path).or(Ok(path))
  }
}
