//! A task's Job Object: every process of the task is in it from its first
//! instruction (the leader is created suspended, assigned, then resumed, and
//! every process it starts inherits the job), none may break away, and the
//! kernel kills every member when the last handle to the job closes
//! (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`). Only taskstream holds a handle
//! (it is never inheritable), so when Node dies, however it dies, every job
//! member dies with it.

//!
//! `limits` (API.md §6.8) are the job's own: `JOB_OBJECT_LIMIT_JOB_MEMORY` (the committed
//! memory of every member together), `JOB_OBJECT_LIMIT_ACTIVE_PROCESS`, and a hard-capped CPU
//! rate. The job tells of an allocation refused at its memory limit on a completion port
//! (`JOB_OBJECT_MSG_JOB_MEMORY_LIMIT`), which [`Job::memory_limit_hit`] reads.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use once_cell::sync::Lazy;
use windows_sys::core::BOOL;
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::JobObjects::{
  AssignProcessToJobObject, CreateJobObjectW, IsProcessInJob,
  JobObjectAssociateCompletionPortInformation, JobObjectBasicAccountingInformation,
  JobObjectBasicProcessIdList, JobObjectCpuRateControlInformation,
  JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
  TerminateJobObject, JOBOBJECT_ASSOCIATE_COMPLETION_PORT, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
  JOBOBJECT_CPU_RATE_CONTROL_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
  JOB_OBJECT_CPU_RATE_CONTROL_ENABLE, JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP,
  JOB_OBJECT_LIMIT_ACTIVE_PROCESS, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
  JOB_OBJECT_LIMIT_JOB_MEMORY, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::IO::{
  CreateIoCompletionPort, GetQueuedCompletionStatus, OVERLAPPED,
};

use crate::process::limits::{Limits, Usage};

/// `JOB_OBJECT_MSG_JOB_MEMORY_LIMIT` (winnt.h): a member's allocation passed the job's limit.
const JOB_OBJECT_MSG_JOB_MEMORY_LIMIT: u32 = 10;

/// The exit code every process of a stopped task gets: 1, as `TerminateProcess`
/// callers and `taskkill /f` conventionally use. A task taskstream stopped is
/// reported `cancelled` whatever the code.
pub const STOPPED_EXIT_CODE: u32 = 1;

/// An open job handle, closed (and so every member killed) on drop.
#[derive(Debug)]
pub struct Job {
  handle: OwnedHandle,
  /// The task's `limits` (none: all `None`).
  limits: Limits,
  /// With a memory limit: the completion port the job reports on.
  port: Option<OwnedHandle>,
  /// The job reported its memory limit (sticky).
  memory_hit: AtomicBool,
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
    Self::with_limits(Limits::default())
  }

  /// [`Self::new`] with the task's `limits` set before any process is in it; an error when
  /// the system refuses one (never a job without a limit asked for).
  pub fn with_limits(limits: Limits) -> io::Result<Job> {
    // SAFETY: no security attributes, no name; a null return is an error.
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
      return Err(io::Error::last_os_error());
    }
    // SAFETY: a new handle that nothing else owns.
    let mut job = Job {
      handle: unsafe { OwnedHandle::from_raw_handle(raw) },
      limits,
      port: None,
      memory_hit: AtomicBool::new(false),
    };
    // SAFETY: plain data; zero is every field's neutral value.
    let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    info.BasicLimitInformation.LimitFlags =
      JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    if let Some(bytes) = limits.memory_bytes {
      info.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_JOB_MEMORY;
      info.JobMemoryLimit = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    if let Some(max) = limits.max_processes {
      info.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_ACTIVE_PROCESS;
      info.BasicLimitInformation.ActiveProcessLimit = max;
    }
    job.set(JobObjectExtendedLimitInformation, &info)?;
    if let Some(percent) = limits.cpu_percent {
      job.set(JobObjectCpuRateControlInformation, &cpu_rate(percent))?;
    }
    if limits.memory_bytes.is_some() {
      job.port = Some(job.completion_port()?);
    }
    Ok(job)
  }

  /// The task's `limits`.
  pub fn limits(&self) -> &Limits {
    &self.limits
  }

  /// `SetInformationJobObject` with one structure of `class`.
  fn set<T>(&self, class: i32, info: &T) -> io::Result<()> {
    // SAFETY: the caller passes the structure of the information class.
    check(unsafe {
      SetInformationJobObject(
        self.raw(),
        class,
        info as *const T as *const _,
        std::mem::size_of::<T>() as u32,
      )
    })
  }

  /// A completion port the job posts its messages to.
  fn completion_port(&self) -> io::Result<OwnedHandle> {
    // SAFETY: a new port not tied to a file; a null return is an error.
    let raw = unsafe { CreateIoCompletionPort(INVALID_HANDLE_VALUE, std::ptr::null_mut(), 0, 1) };
    if raw.is_null() {
      return Err(io::Error::last_os_error());
    }
    // SAFETY: a new handle that nothing else owns.
    let port = unsafe { OwnedHandle::from_raw_handle(raw) };
    let association = JOBOBJECT_ASSOCIATE_COMPLETION_PORT {
      CompletionKey: std::ptr::null_mut(),
      CompletionPort: port.as_raw_handle() as HANDLE,
    };
    self.set(JobObjectAssociateCompletionPortInformation, &association)?;
    Ok(port)
  }

  /// The task's `memoryBytes` once the job reported an allocation refused at it (the
  /// messages queued on its port are read without waiting).
  pub fn memory_limit_hit(&self) -> Option<u64> {
    let bytes = self.limits.memory_bytes?;
    if let Some(port) = &self.port {
      loop {
        let (mut message, mut key, mut overlapped) =
          (0u32, 0usize, std::ptr::null_mut::<OVERLAPPED>());
        // SAFETY: an open port and valid out-pointers; a zero timeout never blocks.
        let got = unsafe {
          GetQueuedCompletionStatus(
            port.as_raw_handle() as HANDLE,
            &mut message,
            &mut key,
            &mut overlapped,
            0,
          )
        };
        if got == 0 {
          break;
        }
        if message == JOB_OBJECT_MSG_JOB_MEMORY_LIMIT {
          self.memory_hit.store(true, Ordering::Release);
        }
      }
    }
    self.memory_hit.load(Ordering::Acquire).then_some(bytes)
  }

  /// CPU time and peak committed memory of every member so far; `None` for a job without
  /// limits.
  pub fn usage(&self) -> Option<Usage> {
    if self.limits.is_empty() {
      return None;
    }
    // SAFETY: plain data filled in by the calls.
    let mut accounting: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
    let mut extended: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    let cpu_ms = self
      .query(JobObjectBasicAccountingInformation, &mut accounting)
      .ok()
      .map(|()| (accounting.TotalUserTime + accounting.TotalKernelTime).max(0) as u64 / 10_000);
    let peak = self
      .query(JobObjectExtendedLimitInformation, &mut extended)
      .ok()
      .map(|()| extended.PeakJobMemoryUsed as u64);
    Some(Usage {
      cpu_ms,
      peak_memory_bytes: peak,
    })
  }

  /// `QueryInformationJobObject` into one structure of `class`.
  fn query<T>(&self, class: i32, info: &mut T) -> io::Result<()> {
    // SAFETY: the caller passes the structure of the information class.
    check(unsafe {
      QueryInformationJobObject(
        self.raw(),
        class,
        info as *mut T as *mut _,
        std::mem::size_of::<T>() as u32,
        std::ptr::null_mut(),
      )
    })
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

/// A hard cap of `percent` of one core, as the job's rate: hundredths of a percent of the
/// whole machine (every processor), at least 1.
fn cpu_rate(percent: u32) -> JOBOBJECT_CPU_RATE_CONTROL_INFORMATION {
  let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
  let rate = (u64::from(percent) * 100 / cores).clamp(1, 10_000) as u32;
  // SAFETY: plain data; zero is every field's neutral value.
  let mut info: JOBOBJECT_CPU_RATE_CONTROL_INFORMATION = unsafe { std::mem::zeroed() };
  info.ControlFlags = JOB_OBJECT_CPU_RATE_CONTROL_ENABLE | JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP;
  info.Anonymous.CpuRate = rate;
  info
}

/// Whether this is Wine (its ntdll exports `wine_get_version`).
fn under_wine() -> bool {
  use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
  let name: Vec<u16> = "ntdll.dll\0".encode_utf16().collect();
  // SAFETY: a NUL-terminated name; ntdll is always loaded, and a null module is checked.
  unsafe {
    let ntdll = GetModuleHandleW(name.as_ptr());
    !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
  }
}

/// Which limits the system's Job Objects take, tried once on a job of their own: an error naming
/// the first one refused. Wine's Job Objects accept memory and process limits without enforcing
/// them (and refuse CPU rate control), so under Wine every limit is refused.
pub fn check_limits_supported(limits: &Limits) -> Result<(), String> {
  static WINE: Lazy<bool> = Lazy::new(under_wine);
  if *WINE {
    return Err(
      "limits cannot be enforced under Wine: its Job Objects accept memory and process limits without enforcing them, and refuse CPU rate control"
        .to_owned(),
    );
  }
  static CPU: Lazy<Result<(), String>> = Lazy::new(|| {
    Job::with_limits(Limits {
      cpu_percent: Some(50),
      ..Limits::default()
    })
    .map(drop)
    .map_err(|e| e.to_string())
  });
  static MEMORY: Lazy<Result<(), String>> = Lazy::new(|| {
    Job::with_limits(Limits {
      memory_bytes: Some(Limits::MAX_MEMORY_BYTES),
      max_processes: Some(Limits::MAX_PROCESSES),
      ..Limits::default()
    })
    .map(drop)
    .map_err(|e| e.to_string())
  });
  if limits.memory_bytes.is_some() || limits.max_processes.is_some() {
    if let Err(why) = &*MEMORY {
      return Err(format!(
        "limits cannot be enforced on this host: its Job Objects refuse a memory or process limit ({why})"
      ));
    }
  }
  if limits.cpu_percent.is_some() {
    if let Err(why) = &*CPU {
      return Err(format!(
        "limits.cpuPercent cannot be enforced on this host: its Job Objects refuse CPU rate control ({why})"
      ));
    }
  }
  Ok(())
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
