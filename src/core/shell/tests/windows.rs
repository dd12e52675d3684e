//! Owner-only output files and sidecars on Windows (`core/private_file/windows.rs`),
//! through the code paths a background shell uses: the output file of
//! [`OutputWriter::create`] and the sidecar of [`write_status_sidecar`]. Each
//! file's DACL is read back by path (`GetNamedSecurityInfoW`, what any other
//! opener is checked against) and compared ACE by ACE. They run natively in
//! the CI workflow's Windows jobs (`cargo test`). Wine keeps no DACL (see
//! `core/private_file/windows.rs`), so `npm run test:windows` skips the three
//! that read a file's DACL back, by name, and runs the descriptor check.

use std::fs;
use std::path::Path;

use windows_sys::Win32::Foundation::LocalFree;
use windows_sys::Win32::Security::Authorization::{
  ConvertSidToStringSidW, GetNamedSecurityInfoW, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
  AclSizeInformation, GetAce, GetAclInformation, GetSecurityDescriptorControl,
  GetSecurityDescriptorDacl, ACCESS_ALLOWED_ACE, ACL, ACL_SIZE_INFORMATION,
  DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, SE_DACL_PROTECTED,
};

use crate::private_file::{CurrentUser, OwnerOnly, OWNER_RIGHTS};
use crate::shell::entry::{ShellEntry, ShellStatus};
use crate::shell::output::{OutputWriter, Stream};
use crate::shell::sidecar::write_status_sidecar;
use crate::shell::test_support::TempDir;

/// `ACCESS_ALLOWED_ACE_TYPE` (winnt.h).
const ACCESS_ALLOWED: u8 = 0;

#[derive(Debug, PartialEq, Eq)]
struct Ace {
  kind: u8,
  flags: u8,
  mask: u32,
  sid: String,
}

/// A file's DACL as another opener would see it: whether it is protected
/// (nothing inherited) and its ACEs in order; `None` for a null DACL.
#[derive(Debug, PartialEq, Eq)]
struct Dacl {
  protected: bool,
  aces: Option<Vec<Ace>>,
}

fn sid_string(sid: PSID) -> String {
  let mut text: *mut u16 = std::ptr::null_mut();
  // SAFETY: a valid SID; the string is allocated by the call and freed below.
  assert_ne!(
    unsafe { ConvertSidToStringSidW(sid, &mut text) },
    0,
    "ConvertSidToStringSidW"
  );
  // SAFETY: a NUL-terminated string from the call above.
  let value = unsafe {
    let len = (0..).take_while(|&i| *text.add(i) != 0).count();
    String::from_utf16_lossy(std::slice::from_raw_parts(text, len))
  };
  unsafe { LocalFree(text.cast()) };
  value
}

/// The ACEs of `acl` in order; `None` for a null DACL.
fn aces(acl: *const ACL) -> Option<Vec<Ace>> {
  if acl.is_null() {
    return None;
  }
  let mut size = ACL_SIZE_INFORMATION::default();
  // SAFETY: a valid ACL.
  assert_ne!(
    unsafe {
      GetAclInformation(
        acl,
        (&mut size as *mut ACL_SIZE_INFORMATION).cast(),
        std::mem::size_of::<ACL_SIZE_INFORMATION>() as u32,
        AclSizeInformation,
      )
    },
    0
  );
  let aces = (0..size.AceCount)
    .map(|index| {
      let mut ace: *mut std::ffi::c_void = std::ptr::null_mut();
      // SAFETY: an index below the ACE count.
      assert_ne!(unsafe { GetAce(acl, index, &mut ace) }, 0);
      // SAFETY: every ACE starts with ACE_HEADER; the access-allowed and
      // access-denied ACEs have the mask and the SID at the same places.
      let ace = unsafe { &*ace.cast::<ACCESS_ALLOWED_ACE>() };
      Ace {
        kind: ace.Header.AceType,
        flags: ace.Header.AceFlags,
        mask: ace.Mask,
        sid: sid_string((&ace.SidStart as *const u32).cast_mut().cast()),
      }
    })
    .collect();
  Some(aces)
}

fn dacl(path: &Path) -> Dacl {
  let wide: Vec<u16> = path
    .as_os_str()
    .to_string_lossy()
    .encode_utf16()
    .chain(std::iter::once(0))
    .collect();
  let mut acl: *mut ACL = std::ptr::null_mut();
  let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
  // SAFETY: a NUL-terminated path; the descriptor is allocated by the call
  // (freed below) and `acl` points into it.
  let code = unsafe {
    GetNamedSecurityInfoW(
      wide.as_ptr(),
      SE_FILE_OBJECT,
      DACL_SECURITY_INFORMATION,
      std::ptr::null_mut(),
      std::ptr::null_mut(),
      &mut acl,
      std::ptr::null_mut(),
      &mut sd,
    )
  };
  assert_eq!(code, 0, "GetNamedSecurityInfoW({})", path.display());
  let mut control = 0u16;
  let mut revision = 0u32;
  // SAFETY: the descriptor from the call above.
  assert_ne!(
    unsafe { GetSecurityDescriptorControl(sd, &mut control, &mut revision) },
    0
  );
  let aces = aces(acl);
  // SAFETY: allocated by GetNamedSecurityInfoW.
  unsafe { LocalFree(sd) };
  Dacl {
    protected: control & SE_DACL_PROTECTED != 0,
    aces,
  }
}

/// What every output file and sidecar must carry: protected, one ACE, the
/// process token's user with full control, nothing inherited.
fn owner_only_dacl() -> Dacl {
  let user = CurrentUser::get().expect("the process token's user");
  Dacl {
    protected: true,
    aces: Some(vec![Ace {
      kind: ACCESS_ALLOWED,
      flags: 0,
      mask: OWNER_RIGHTS,
      sid: sid_string(user.sid()),
    }]),
  }
}

fn entry(output_path: &Path) -> ShellEntry {
  ShellEntry {
    id: "bg_1".into(),
    command: "echo hi".into(),
    cwd: "C:\\repo".into(),
    pid: Some(1234),
    status: ShellStatus::Running,
    exit_code: None,
    error: None,
    start_time: 1_700_000_000_123.0,
    end_time: None,
    output_path: output_path.to_string_lossy().into_owned(),
    notified: false,
    todo_work_chain_id: None,
    end: None,
    ending: None,
  }
}

#[test]
fn windows_owner_only_descriptor_is_protected_with_one_user_ace() {
  let owner_only = OwnerOnly::new().expect("the owner-only descriptor");
  let sd = owner_only.descriptor();
  let mut control = 0u16;
  let mut revision = 0u32;
  // SAFETY: the descriptor lives as long as `owner_only`.
  assert_ne!(
    unsafe { GetSecurityDescriptorControl(sd, &mut control, &mut revision) },
    0
  );
  let mut present = 0;
  let mut defaulted = 0;
  let mut acl: *mut ACL = std::ptr::null_mut();
  // SAFETY: as above; `acl` points into `owner_only`.
  assert_ne!(
    unsafe { GetSecurityDescriptorDacl(sd, &mut present, &mut acl, &mut defaulted) },
    0
  );
  assert_eq!((present, defaulted), (1, 0), "a DACL, given explicitly");
  let seen = Dacl {
    protected: control & SE_DACL_PROTECTED != 0,
    aces: aces(acl),
  };
  let expected = owner_only_dacl();
  assert!(
    expected.aces.as_ref().unwrap()[0].sid.starts_with("S-1-5-"),
    "{expected:?}"
  );
  assert_eq!(seen, expected);
}

#[test]
fn windows_output_file_is_created_owner_only() {
  let dir = TempDir::new("acl-new");
  let path = dir.path().join("shell-bg_1.output");
  let mut writer = OutputWriter::create(&path, 1 << 20).expect("open the output file");
  writer.write(Stream::Stdout, b"hello\n");
  writer.finish();
  drop(writer);
  assert_eq!(dacl(&path), owner_only_dacl());
  assert_eq!(fs::read_to_string(&path).unwrap(), "hello\n");
}

#[test]
fn windows_reused_output_file_is_truncated_and_tightened() {
  let dir = TempDir::new("acl-reused");
  let path = dir.file("shell-bg_1.output", b"an earlier run's secret\n");
  let before = dacl(&path);
  assert_ne!(
    before,
    owner_only_dacl(),
    "a file made by fs::write inherits its directory's ACL"
  );
  let writer = OutputWriter::create(&path, 1 << 20).expect("open the output file");
  assert_eq!(dacl(&path), owner_only_dacl(), "was {before:?}");
  drop(writer);
  assert_eq!(fs::read_to_string(&path).unwrap(), "");
}

#[test]
fn windows_sidecar_is_owner_only_and_leaves_no_temporary_file() {
  let dir = TempDir::new("acl-sidecar");
  let status = dir.file("shell-bg_1.status", b"old");
  let before = dacl(&status);
  write_status_sidecar(&entry(&dir.path().join("shell-bg_1.output")), 1);
  assert_eq!(dacl(&status), owner_only_dacl(), "was {before:?}");
  let value: serde_json::Value =
    serde_json::from_str(&fs::read_to_string(&status).unwrap()).unwrap();
  assert_eq!(value["status"], "running");
  let names: Vec<String> = fs::read_dir(dir.path())
    .unwrap()
    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
    .collect();
  assert_eq!(names, ["shell-bg_1.status"]);
}
