//! A task's Job Object: every process of the task is in it from its first
//! instruction (the leader is created suspended, assigned, then resumed, and
//! every process it starts inherits the job), none may break away, and the
//! kernel kills every member when the last handle to the job closes
//! (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`). Only taskstream holds a handle
//! (it is never inheritable), so when Node dies, however it dies, every job
//! member dies with it.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::Arc;

use windows_sys::core::BOOL;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::JobObjects::{
  AssignProcessToJobObject, CreateJobObjectW, IsProcessInJob, JobObjectBasicAccountingInformation,
  JobObjectBasicProcessIdList, JobObjectExtendedLimitInformation, QueryInformationJobObject,
  SetInformationJobObject, TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
  JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};

/// The exit code every process of a stopped task gets: 1, as `TerminateProcess`
/// callers and `taskkill /f` conventionally use. A task taskstream stopped is
/// reported `cancelled` whatever the code.
pub const STOPPED_EXIT_CODE: u32 = 1;

/// An open job handle, closed (and so every member killed) on drop.
#[derive(Debug)]
pub struct Job {
  handle: OwnedHandle,
}

fn check(ok: BOOL) -> io::Result<()> {
  if ok == 0 {
    Err(io::Error::last_os_error())
  } else {
    Ok(())
  }
}

impl Job {
  /// A new unnamed job, its handle not inheritable, with kill-on-close, no
  /// breakaway (neither `BREAKAWAY_OK` nor `SILENT_BREAKAWAY_OK`: a member's
  /// `CREATE_BREAKAWAY_FROM_JOB` fails) and death on an unhandled exception
  /// (a crashed member never waits on an error-report dialog).
  pub fn new() -> io::Result<Job> {
    // SAFETY: no security attributes, no name; a null return is an error.
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
      return Err(io::Error::last_os_error());
    }
    // SAFETY: a new handle that nothing else owns.
    let job = Job {
      handle: unsafe { OwnedHandle::from_raw_handle(raw) },
    };
    // SAFETY: plain data; zero is every field's neutral value.
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    limits.BasicLimitInformation.LimitFlags =
      JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    // SAFETY: the structure and its size match the information class.
    check(unsafe {
      SetInformationJobObject(
        job.raw(),
        JobObjectExtendedLimitInformation,
        &limits as *const _ as *const _,
        std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
      )
    })?;
    Ok(job)
  }

  pub(super) fn raw(&self) -> HANDLE {
    self.handle.as_raw_handle() as HANDLE
  }

  /// Puts `process` (a handle with `PROCESS_SET_QUOTA | PROCESS_TERMINATE`)
  /// in the job.
  pub fn assign(&self, process: HANDLE) -> io::Result<()> {
    // SAFETY: both handles are open for the duration of the call.
    check(unsafe { AssignProcessToJobObject(self.raw(), process) })
  }

  /// Kills every member at once (the kernel's `TerminateJobObject`: no
  /// process of the job can survive or escape it, whatever its parent).
  pub fn terminate(&self) -> io::Result<()> {
    // SAFETY: an open job handle.
    check(unsafe { TerminateJobObject(self.raw(), STOPPED_EXIT_CODE) })
  }

  /// How many member processes are alive (0 once every one exited; a job
  /// with no live member never gets one again, since only taskstream
  /// assigns processes to it, at spawn).
  pub fn active_processes(&self) -> io::Result<u32> {
    // SAFETY: plain data filled in by the call.
    let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the structure and its size match the information class.
    check(unsafe {
      QueryInformationJobObject(
        self.raw(),
        JobObjectBasicAccountingInformation,
        &mut info as *mut _ as *mut _,
        std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
        std::ptr::null_mut(),
      )
    })?;
    Ok(info.ActiveProcesses)
  }

  /// The ids of the live members (at most 1024; for tests and diagnostics:
  /// an id alone never identifies a process for a kill).
  pub fn process_ids(&self) -> io::Result<Vec<u32>> {
    const MAX: usize = 1024;
    // JOBOBJECT_BASIC_PROCESS_ID_LIST: two u32 counts, then the ids as usize.
    let mut buffer = vec![0usize; 1 + MAX];
    // SAFETY: the buffer is large enough for the header and MAX ids.
    check(unsafe {
      QueryInformationJobObject(
        self.raw(),
        JobObjectBasicProcessIdList,
        buffer.as_mut_ptr() as *mut _,
        (buffer.len() * std::mem::size_of::<usize>()) as u32,
        std::ptr::null_mut(),
      )
    })?;
    let listed = (buffer[0] >> 32) as usize;
    Ok(
      buffer[1..=listed.min(MAX)]
        .iter()
        .map(|&id| id as u32)
        .collect(),
    )
  }

  /// Whether `process` is a member.
  pub fn contains(&self, process: HANDLE) -> io::Result<bool> {
    let mut result: BOOL = 0;
    // SAFETY: open handles and a valid out-pointer.
    check(unsafe { IsProcessInJob(process, self.raw(), &mut result) })?;
    Ok(result != 0)
  }
}

/// A task's containment on Windows: its job (shared by every clone; the
/// last clone to go closes it, which kills what is left) and its leader's
/// id. Two values are the same group when they share the job.
#[derive(Clone, Debug)]
pub struct ProcessGroup {
  /// The leader's process id (informational: nothing is ever killed by id).
  pub pid: u32,
  /// The value of `TASKSTREAM_TASK_ID` in the children's environment.
  pub task_tag: String,
  pub(crate) job: Arc<Job>,
}

impl PartialEq for ProcessGroup {
  fn eq(&self, other: &Self) -> bool {
    Arc::ptr_eq(&self.job, &other.job)
  }
}

impl Eq for ProcessGroup {}

impl ProcessGroup {
  /// The task's job.
  pub fn job(&self) -> &Job {
    &self.job
  }
}
