//! Owner-only files on Windows, the counterpart of mode `0600`: a protected
//! DACL (nothing inherited from the directory) holding one ACE, the current
//! user (the process token's user SID) with full control.
//!
//! Why only the user. `0600` leaves out every other account, root included
//! (root reads through privilege, not through the mode). The same holds here:
//! SYSTEM and Administrators get no ACE, and keep only what their privileges
//! give them (backup and restore, take ownership), as root does. A file's
//! owner keeps `READ_CONTROL` and `WRITE_DAC` whatever its DACL, so the user
//! (or, for an elevated process, the Administrators group that owns its new
//! files) can always read the ACL back and widen it.
//!
//! A new file gets the DACL at creation (`SECURITY_ATTRIBUTES` passed to
//! `CreateFileW`), so no other account can open it in between. An existing
//! file (a reused output file, truncated) is tightened through the open
//! handle (`SetSecurityInfo` with `PROTECTED_DACL_SECURITY_INFORMATION`,
//! which also drops every inherited ACE); a failure to tighten fails the
//! open, unless the volume cannot keep ACLs at all (FAT, exFAT, some network
//! shares: no `FILE_PERSISTENT_ACLS`), where there is nothing to tighten.
//! Character devices (`NUL`) are left alone; pipes are refused, as FIFOs are
//! on Unix. Symlinks are still followed (Windows has no `O_NOFOLLOW` for a
//! create; the shell's output file names are its own).
//!
//! Wine (8.0, as Debian builds it) keeps no DACL: both calls succeed, but
//! every read of a file's security, even through the handle that set it, is
//! made up from the Unix mode bits (SYSTEM, the owner, Everyone; never
//! protected), and its wineserver has no `user.wine.sd` xattr store. The
//! tests that read a file's DACL back therefore run on Windows only (the CI
//! workflow's Windows jobs); under Wine the descriptor itself is checked.

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::{
  ERROR_INSUFFICIENT_BUFFER, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Security::Authorization::{SetSecurityInfo, SE_FILE_OBJECT};
use windows_sys::Win32::Security::{
  AddAccessAllowedAceEx, GetLengthSid, GetTokenInformation, InitializeAcl,
  InitializeSecurityDescriptor, IsValidSid, SetSecurityDescriptorControl,
  SetSecurityDescriptorDacl, TokenUser, ACCESS_ALLOWED_ACE, ACL, ACL_REVISION,
  CONTAINER_INHERIT_ACE, DACL_SECURITY_INFORMATION, OBJECT_INHERIT_ACE,
  PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, SECURITY_ATTRIBUTES,
  SECURITY_DESCRIPTOR, SE_DACL_PROTECTED, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{
  CreateDirectoryW, CreateFileW, GetFileType, GetVolumeInformationByHandleW, CREATE_ALWAYS,
  CREATE_NEW, FILE_ALL_ACCESS, FILE_ATTRIBUTE_NORMAL, FILE_SHARE_DELETE, FILE_SHARE_READ,
  FILE_SHARE_WRITE, FILE_TYPE_CHAR, FILE_TYPE_DISK, OPEN_ALWAYS, READ_CONTROL, WRITE_DAC,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

// Two winnt.h constants, without windows-sys's large SystemServices feature.
const SECURITY_DESCRIPTOR_REVISION: u32 = 1;
const FILE_PERSISTENT_ACLS: u32 = 0x8;

/// The rights of the one ACE: `FILE_ALL_ACCESS`, what `0600` gives its owner
/// and more (the owner of a `0600` file may also chmod it).
pub(crate) const OWNER_RIGHTS: u32 = FILE_ALL_ACCESS;

fn check(ok: i32) -> io::Result<()> {
  if ok == 0 {
    Err(io::Error::last_os_error())
  } else {
    Ok(())
  }
}

/// The process token's `TOKEN_USER`, in a buffer aligned for it.
pub(crate) struct CurrentUser {
  buf: Vec<u64>,
}

impl CurrentUser {
  pub(crate) fn get() -> io::Result<Self> {
    let mut raw: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of this process; `raw` receives a new handle.
    check(unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut raw) })?;
    // SAFETY: a new handle that nothing else owns.
    let token = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut len = 0u32;
    // SAFETY: a size query (null buffer, zero length); it fails with
    // ERROR_INSUFFICIENT_BUFFER and sets `len`.
    let ok = unsafe {
      GetTokenInformation(
        token.as_raw_handle(),
        TokenUser,
        std::ptr::null_mut(),
        0,
        &mut len,
      )
    };
    if ok == 0 {
      let error = io::Error::last_os_error();
      if error.raw_os_error() != Some(ERROR_INSUFFICIENT_BUFFER as i32) {
        return Err(error);
      }
    }
    let mut buf = vec![0u64; (len as usize).div_ceil(8).max(1)];
    // SAFETY: `buf` holds `len` bytes, 8-byte aligned.
    check(unsafe {
      GetTokenInformation(
        token.as_raw_handle(),
        TokenUser,
        buf.as_mut_ptr().cast(),
        len,
        &mut len,
      )
    })?;
    let user = CurrentUser { buf };
    // SAFETY: the SID points into `buf`, which the token filled.
    if unsafe { IsValidSid(user.sid()) } == 0 {
      return Err(io::Error::other("the process token has no valid user SID"));
    }
    Ok(user)
  }

  /// The user's SID; valid as long as `self`.
  pub(crate) fn sid(&self) -> PSID {
    // SAFETY: `buf` holds a TOKEN_USER written by GetTokenInformation.
    unsafe { (*self.buf.as_ptr().cast::<TOKEN_USER>()).User.Sid }
  }
}

/// The owner-only DACL, one access-allowed ACE for the current user with
/// [`OWNER_RIGHTS`], in a security descriptor that marks it protected: what
/// a new file is created with and an existing one is tightened to.
pub(crate) struct OwnerOnly {
  /// The ACL, in a buffer aligned for it (the descriptor points into it).
  acl: Vec<u64>,
  descriptor: Box<SECURITY_DESCRIPTOR>,
}

impl OwnerOnly {
  pub(crate) fn new() -> io::Result<Self> {
    Self::with_ace_flags(0)
  }

  /// The same for a directory: the ACE is inherited by every file and folder made in it, so
  /// they are owner-only from their creation without a descriptor of their own.
  pub(crate) fn for_directory() -> io::Result<Self> {
    Self::with_ace_flags(OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE)
  }

  fn with_ace_flags(flags: u32) -> io::Result<Self> {
    let user = CurrentUser::get()?;
    // SAFETY: a valid SID (checked by CurrentUser::get).
    let sid_len = unsafe { GetLengthSid(user.sid()) } as usize;
    // ACCESS_ALLOWED_ACE ends with the SID's first u32 (`SidStart`).
    let size = std::mem::size_of::<ACL>() + std::mem::size_of::<ACCESS_ALLOWED_ACE>()
      - std::mem::size_of::<u32>()
      + sid_len;
    let size = size.next_multiple_of(4);
    let mut acl = vec![0u64; size.div_ceil(8)];
    let acl_ptr = acl.as_mut_ptr().cast::<ACL>();
    // SAFETY: `acl` holds `size` bytes, aligned; the SID is valid.
    check(unsafe { InitializeAcl(acl_ptr, size as u32, ACL_REVISION) })?;
    check(unsafe {
      AddAccessAllowedAceEx(acl_ptr, ACL_REVISION, flags, OWNER_RIGHTS, user.sid())
    })?;
    // SAFETY: plain data, initialised by InitializeSecurityDescriptor below.
    let mut descriptor: Box<SECURITY_DESCRIPTOR> = Box::new(unsafe { std::mem::zeroed() });
    let sd: PSECURITY_DESCRIPTOR = (&mut *descriptor as *mut SECURITY_DESCRIPTOR).cast::<c_void>();
    // SAFETY: an absolute descriptor pointing at `acl`'s heap buffer, which
    // lives (and stays put) as long as `self`.
    unsafe {
      check(InitializeSecurityDescriptor(
        sd,
        SECURITY_DESCRIPTOR_REVISION,
      ))?;
      check(SetSecurityDescriptorDacl(sd, 1, acl_ptr, 0))?;
      check(SetSecurityDescriptorControl(
        sd,
        SE_DACL_PROTECTED,
        SE_DACL_PROTECTED,
      ))?;
    }
    Ok(OwnerOnly { acl, descriptor })
  }

  fn acl(&self) -> *const ACL {
    self.acl.as_ptr().cast()
  }

  /// Security attributes (not inheritable) carrying [`Self::descriptor`]; valid as long as `self`.
  fn attributes(&self) -> SECURITY_ATTRIBUTES {
    SECURITY_ATTRIBUTES {
      nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
      lpSecurityDescriptor: self.descriptor(),
      bInheritHandle: 0,
    }
  }

  /// The descriptor (protected, with the owner-only DACL); valid as long as `self`.
  pub(crate) fn descriptor(&self) -> PSECURITY_DESCRIPTOR {
    (&*self.descriptor as *const SECURITY_DESCRIPTOR)
      .cast_mut()
      .cast::<c_void>()
  }
}

/// Creates the directory `path` (its parent must exist) with the owner-only DACL that its
/// files and folders inherit ([`OwnerOnly::for_directory`]). An existing path fails with
/// `AlreadyExists`.
pub(crate) fn create_owner_only_dir(path: &Path) -> io::Result<()> {
  let owner_only = OwnerOnly::for_directory()?;
  let attributes = owner_only.attributes();
  let wide = checked_wide_path(path)?;
  // SAFETY: a NUL-terminated path and live security attributes.
  check(unsafe { CreateDirectoryW(wide.as_ptr(), &attributes) })
}

/// What [`open_owner_only`] does with a file already at the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Disposition {
  /// Fail (`CREATE_NEW`).
  CreateNew,
  /// Truncate it (`CREATE_ALWAYS`).
  Truncate,
  /// Keep it and write after what it holds (`OPEN_ALWAYS`, then the end).
  Append,
}

/// Opens `path` for writing, owner-only: created with the owner-only DACL, or an existing one
/// (truncated or appended to, as `disposition` says) tightened to it. See the module
/// documentation.
pub(super) fn open_owner_only(path: &Path, disposition: Disposition) -> io::Result<File> {
  let owner_only = OwnerOnly::new()?;
  let attributes = owner_only.attributes();
  let wide = checked_wide_path(path)?;
  // SAFETY: a NUL-terminated path and live security attributes; the handle
  // is owned below. The share mode is std's (readers, writers and renames of
  // others are not blocked).
  let raw = unsafe {
    CreateFileW(
      wide.as_ptr(),
      GENERIC_WRITE | READ_CONTROL | WRITE_DAC,
      FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
      &attributes,
      match disposition {
        Disposition::CreateNew => CREATE_NEW,
        Disposition::Truncate => CREATE_ALWAYS,
        Disposition::Append => OPEN_ALWAYS,
      },
      FILE_ATTRIBUTE_NORMAL,
      std::ptr::null_mut(),
    )
  };
  if raw == INVALID_HANDLE_VALUE {
    return Err(io::Error::last_os_error());
  }
  // SAFETY: a new handle that nothing else owns.
  let mut file = unsafe { File::from_raw_handle(raw) };
  // SAFETY: a live handle.
  match unsafe { GetFileType(raw) } {
    FILE_TYPE_DISK => tighten(&file, &owner_only)?,
    FILE_TYPE_CHAR => {}
    _ => {
      return Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file",
      ))
    }
  }
  if disposition == Disposition::Append {
    // The only writer is this handle: writing from the end is appending.
    std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0))?;
  }
  Ok(file)
}

/// Sets the protected owner-only DACL on the open file (a no-op for a file
/// just created with it; what tightens a reused one).
fn tighten(file: &File, owner_only: &OwnerOnly) -> io::Result<()> {
  // SAFETY: a live handle opened with WRITE_DAC; a valid ACL.
  let code = unsafe {
    SetSecurityInfo(
      file.as_raw_handle(),
      SE_FILE_OBJECT,
      DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
      std::ptr::null_mut(),
      std::ptr::null_mut(),
      owner_only.acl(),
      std::ptr::null(),
    )
  };
  if code == 0 {
    return Ok(());
  }
  let error = io::Error::from_raw_os_error(code as i32);
  if keeps_acls(file) == Some(false) {
    return Ok(());
  }
  Err(io::Error::new(
    error.kind(),
    format!("cannot make the file owner-only: {error}"),
  ))
}

/// Whether the file's volume keeps ACLs (`FILE_PERSISTENT_ACLS`); `None`
/// when the volume cannot be asked.
fn keeps_acls(file: &File) -> Option<bool> {
  let mut flags = 0u32;
  // SAFETY: a live handle; only the flags are asked for.
  let ok = unsafe {
    GetVolumeInformationByHandleW(
      file.as_raw_handle(),
      std::ptr::null_mut(),
      0,
      std::ptr::null_mut(),
      std::ptr::null_mut(),
      &mut flags,
      std::ptr::null_mut(),
      0,
    )
  };
  (ok != 0).then_some(flags & FILE_PERSISTENT_ACLS != 0)
}

/// `path` NUL-terminated for `CreateFileW`, made absolute and verbatim
/// (`\\?\`) when it is too long for the plain Win32 form, as std does for
/// its own opens.
/// [`wide_path`], refusing a path with a NUL character inside (it would end the path early).
fn checked_wide_path(path: &Path) -> io::Result<Vec<u16>> {
  let wide = wide_path(path);
  if wide[..wide.len() - 1].contains(&0) {
    return Err(io::Error::new(
      io::ErrorKind::InvalidInput,
      "path contains a NUL character",
    ));
  }
  Ok(wide)
}

fn wide_path(path: &Path) -> Vec<u16> {
  const MAX_PATH: usize = 260;
  let plain: Vec<u16> = path.as_os_str().encode_wide().collect();
  // Room for the 8.3 name CreateFileW may append (std's margin).
  let mut wide = if plain.len() < MAX_PATH - 12 {
    plain
  } else {
    match std::path::absolute(path) {
      Ok(absolute) => verbatim(absolute.as_os_str().encode_wide().collect()),
      Err(_) => plain,
    }
  };
  wide.push(0);
  wide
}

/// `C:\x` → `\\?\C:\x`, `\\server\share\x` → `\\?\UNC\server\share\x`;
/// a path already verbatim or a device path as it is.
fn verbatim(absolute: Vec<u16>) -> Vec<u16> {
  let text = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
  if absolute.starts_with(&text(r"\\?\")) || absolute.starts_with(&text(r"\\.\")) {
    return absolute;
  }
  if let Some(share) = absolute.strip_prefix(&text(r"\\")[..]) {
    return [text(r"\\?\UNC\").as_slice(), share].concat();
  }
  [text(r"\\?\").as_slice(), &absolute].concat()
}
