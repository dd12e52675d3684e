//! The keeper program of a Node host: `node -e <script> <addonPath>`, where
//! the script loads this very addon and runs its hidden keeper export. The
//! addon's path comes from `dladdr` on one of its own functions.

use std::ffi::{CStr, OsString};
use std::io;
use std::path::PathBuf;

/// The hidden export the keeper script calls.
pub const KEEPER_EXPORT: &str = "__taskstreamKeeper";

/// The script run by `node -e`: `process.argv[1]` is the addon's path.
pub fn keeper_script() -> String {
  format!("const m={{exports:{{}}}};process.dlopen(m,process.argv[1]);m.exports.{KEEPER_EXPORT}();")
}

/// The file this code was loaded from (the `.node` addon in a Node host).
pub fn addon_path() -> io::Result<PathBuf> {
  let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
  let address = addon_path as *const libc::c_void;
  // SAFETY: dladdr only reads the address and fills `info`.
  let found = unsafe { libc::dladdr(address, &mut info) };
  if found == 0 || info.dli_fname.is_null() {
    return Err(io::Error::other("dladdr found no file for the addon"));
  }
  // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
  let name = unsafe { CStr::from_ptr(info.dli_fname) };
  use std::os::unix::ffi::OsStrExt;
  let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
  std::fs::canonicalize(&path).or(Ok(path))
}

/// `(program, args)`: this process's executable (node) with `-e <script> <addon>`.
pub fn node_keeper_program() -> io::Result<(PathBuf, Vec<OsString>)> {
  let node = std::env::current_exe()?;
  let addon = addon_path()?;
  Ok((
    node,
    vec![
      OsString::from("-e"),
      OsString::from(keeper_script()),
      addon.into_os_string(),
    ],
  ))
}
