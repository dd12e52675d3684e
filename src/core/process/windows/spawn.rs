//! Starting a task's leader inside its job, before its first instruction.
//!
//! 1. Anonymous pipes for stdout and stderr and a handle on `NUL` for stdin.
//!    They are made non-inheritable; only the child's three ends are marked
//!    inheritable, under [`SPAWN_LOCK`], for the `CreateProcessW` call alone,
//!    and `PROC_THREAD_ATTRIBUTE_HANDLE_LIST` names exactly those three, so
//!    the child inherits nothing else this process holds (other tasks' pipe
//!    ends, whose EOF would otherwise wait for this child too).
//! 2. `CreateProcessW` with `CREATE_SUSPENDED` (no instruction runs yet),
//!    `CREATE_NO_WINDOW` (a console program gets a console of its own with
//!    no window: nothing flashes, and it shares no console with Node),
//!    `CREATE_NEW_PROCESS_GROUP` (a Ctrl+C typed at Node's console never
//!    reaches it), `CREATE_UNICODE_ENVIRONMENT` and the full environment
//!    block given by the caller.
//! 3. `AssignProcessToJobObject` into a new job (job.rs); if that fails the
//!    suspended process is terminated through its handle and the error
//!    returned: nothing ever runs outside a job.
//! 4. `ResumeThread`. Every process the command starts from then on is born
//!    inside the job.
//!
//! What remains of the inheritance window: a `CreateProcess` with
//! `bInheritHandles` and no handle list made by *another* library in this
//! process (libuv's `child_process.spawn` is one) during step 2 may inherit
//! the three ends too. That only delays the EOF of this task's pipes until
//! that other child exits; taskstream's own spawns are serialised by the lock.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::windows::io::OwnedHandle;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use windows_sys::Win32::Foundation::{SetHandleInformation, HANDLE, HANDLE_FLAG_INHERIT};
use windows_sys::Win32::Security::SECURITY_ATTRIBUTES;
use windows_sys::Win32::Storage::FileSystem::{
  CreateFileW, FILE_GENERIC_READ, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING,
};
use windows_sys::Win32::System::Console::HPCON;
use windows_sys::Win32::System::Threading::{
  CreateProcessW, DeleteProcThreadAttributeList, InitializeProcThreadAttributeList, ResumeThread,
  TerminateProcess, UpdateProcThreadAttribute, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW,
  CREATE_SUSPENDED, CREATE_UNICODE_ENVIRONMENT, EXTENDED_STARTUPINFO_PRESENT, PROCESS_INFORMATION,
  PROC_THREAD_ATTRIBUTE_HANDLE_LIST, PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE, STARTF_USESTDHANDLES,
  STARTUPINFOEXW,
};

use super::conpty;
use super::handles::{owned, pipe, raw};
use super::job::{Job, STOPPED_EXIT_CODE};
use crate::process::cmdline::{command_line, environment_block, wide_nul};
use crate::process::spawn::SpawnRequest;

/// Serialises taskstream's own spawns, so no spawn of ours inherits another
/// one's ends while they are briefly inheritable.
static SPAWN_LOCK: Mutex<()> = Mutex::new(());

/// Runs `spawn` (a process started some other way, with inherited standard handles: a keeper
/// by std's `Command`) while none of our spawns has a handle briefly inheritable, so that it
/// inherits only its own.
pub fn spawn_serialized<R>(spawn: impl FnOnce() -> R) -> R {
  let _serialised = crate::sync::lock(&SPAWN_LOCK);
  spawn()
}

/// What [`spawn_in_job`] hands back: the leader (id and process handle),
/// its job, and our ends of its stdout and stderr.
pub struct Contained {
  pub pid: u32,
  pub process: OwnedHandle,
  pub job: Job,
  pub stdout: File,
  pub stderr: File,
}

/// A read handle on `NUL`, not inheritable.
fn null_device() -> io::Result<OwnedHandle> {
  let name: Vec<u16> = "NUL\0".encode_utf16().collect();
  let attributes = SECURITY_ATTRIBUTES {
    nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
    lpSecurityDescriptor: std::ptr::null_mut(),
    bInheritHandle: 0,
  };
  // SAFETY: a NUL-terminated name and valid attributes.
  let handle = unsafe {
    CreateFileW(
      name.as_ptr(),
      FILE_GENERIC_READ,
      FILE_SHARE_READ | FILE_SHARE_WRITE,
      &attributes,
      OPEN_EXISTING,
      0,
      std::ptr::null_mut(),
    )
  };
  if handle == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
    return Err(io::Error::last_os_error());
  }
  Ok(owned(handle))
}

fn set_inheritable(handle: &OwnedHandle, inheritable: bool) -> io::Result<()> {
  let flags = if inheritable { HANDLE_FLAG_INHERIT } else { 0 };
  // SAFETY: an open handle of ours.
  if unsafe { SetHandleInformation(raw(handle), HANDLE_FLAG_INHERIT, flags) } == 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(())
}

/// An initialised attribute list with one entry (the handle list, or the
/// pseudo console); deleted on drop. What the entry points to must outlive
/// it (the list points into it).
struct AttributeList {
  buffer: Vec<usize>,
}

impl AttributeList {
  fn with_handles(handles: &[HANDLE]) -> io::Result<AttributeList> {
    // SAFETY: `handles` outlives every use of the list (the caller's contract).
    unsafe {
      Self::with_entry(
        PROC_THREAD_ATTRIBUTE_HANDLE_LIST as usize,
        handles.as_ptr() as *const _,
        std::mem::size_of_val(handles),
      )
    }
  }

  /// `PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE`: the value is the `HPCON` itself.
  fn with_console(console: HPCON) -> io::Result<AttributeList> {
    // SAFETY: the attribute's value is the handle, passed by value.
    unsafe {
      Self::with_entry(
        PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE as usize,
        console as *const _,
        std::mem::size_of::<HPCON>(),
      )
    }
  }

  /// # Safety
  /// `value` and `size` as `UpdateProcThreadAttribute` takes them for
  /// `attribute`; what `value` points to outlives the list.
  unsafe fn with_entry(
    attribute: usize,
    value: *const core::ffi::c_void,
    size: usize,
  ) -> io::Result<AttributeList> {
    let mut bytes = 0usize;
    // SAFETY: the documented size query (null list); it "fails" with
    // ERROR_INSUFFICIENT_BUFFER and sets `bytes`.
    unsafe { InitializeProcThreadAttributeList(std::ptr::null_mut(), 1, 0, &mut bytes) };
    if bytes == 0 {
      return Err(io::Error::last_os_error());
    }
    let mut list = AttributeList {
      buffer: vec![0usize; bytes.div_ceil(std::mem::size_of::<usize>())],
    };
    // SAFETY: the buffer holds `bytes` bytes, suitably aligned.
    if unsafe { InitializeProcThreadAttributeList(list.ptr(), 1, 0, &mut bytes) } == 0 {
      let error = io::Error::last_os_error();
      std::mem::forget(list);
      return Err(error);
    }
    // SAFETY: an initialised list; the value as the caller promised.
    let ok = unsafe {
      UpdateProcThreadAttribute(
        list.ptr(),
        0,
        attribute,
        value,
        size,
        std::ptr::null_mut(),
        std::ptr::null(),
      )
    };
    if ok == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok(list)
  }

  fn ptr(&mut self) -> *mut core::ffi::c_void {
    self.buffer.as_mut_ptr() as *mut _
  }
}

impl Drop for AttributeList {
  fn drop(&mut self) {
    // SAFETY: initialised in `with_handles`.
    unsafe { DeleteProcThreadAttributeList(self.ptr()) };
  }
}

/// `program` as given when it names a path; a bare name is looked up on the
/// child's `PATH` (with `.exe` when it has no extension), since letting
/// `CreateProcessW` search would try the current directory first.
fn locate(program: &Path, env: &[(std::ffi::OsString, std::ffi::OsString)]) -> io::Result<PathBuf> {
  if program.components().count() > 1 || program.is_absolute() {
    return Ok(program.to_path_buf());
  }
  let name = if program.extension().is_some() {
    program.to_path_buf()
  } else {
    program.with_extension("exe")
  };
  let path = env
    .iter()
    .rev()
    .find(|(n, _)| n.eq_ignore_ascii_case("PATH"))
    .map(|(_, v)| v.clone());
  path
    .as_deref()
    .into_iter()
    .flat_map(std::env::split_paths)
    .filter(|dir| !dir.as_os_str().is_empty())
    .map(|dir| dir.join(&name))
    .find(|candidate| candidate.is_file())
    .ok_or_else(|| {
      io::Error::new(
        io::ErrorKind::NotFound,
        format!("program not found: {}", program.display()),
      )
    })
}

/// The leader's standard handles: three inheritable handles of ours, or a
/// pseudo console (conpty.rs) with null standard handles.
enum Stdio {
  Handles([HANDLE; 3]),
  Console(HPCON),
}

/// The leader, created suspended in a new job and resumed: steps 2–4 of the
/// module documentation. The caller made `Stdio::Handles` inheritable (under
/// [`SPAWN_LOCK`], which it holds).
fn create_in_job(request: &SpawnRequest, stdio: Stdio) -> io::Result<(u32, OwnedHandle, Job)> {
  let program = locate(&request.program, &request.env)?;
  let mut line: Vec<u16> = wide_nul(
    OsStr::new(&command_line(&program, &request.args)?),
    "command line",
  )?;
  let application = wide_nul(program.as_os_str(), "program path")?;
  let environment = environment_block(&request.env)?;
  let cwd = if request.cwd.as_os_str().is_empty() {
    None
  } else {
    Some(wide_nul(request.cwd.as_os_str(), "working directory")?)
  };
  let job = Job::with_limits(request.limits.unwrap_or_default())?;

  // SAFETY: plain data; zero is every field's neutral value.
  let mut startup: STARTUPINFOEXW = unsafe { std::mem::zeroed() };
  startup.StartupInfo.cb = std::mem::size_of::<STARTUPINFOEXW>() as u32;
  startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  let (mut attributes, inherit, flags) = match &stdio {
    Stdio::Handles(handles) => {
      startup.StartupInfo.hStdInput = handles[0];
      startup.StartupInfo.hStdOutput = handles[1];
      startup.StartupInfo.hStdError = handles[2];
      // No window, and a Ctrl+C typed at Node's console never reaches it.
      let flags = CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP;
      (AttributeList::with_handles(handles)?, 1, flags)
    }
    // Null standard handles (zeroed above): the console's are used. No
    // handle is inherited. Neither CREATE_NO_WINDOW (that asks for a console
    // of its own) nor CREATE_NEW_PROCESS_GROUP (that would ignore the Ctrl+C
    // an agent writes to the terminal); Node's console is not this one.
    Stdio::Console(console) => (AttributeList::with_console(*console)?, 0, 0),
  };
  startup.lpAttributeList = attributes.ptr();
  // SAFETY: plain data filled in by the call.
  let mut info: PROCESS_INFORMATION = unsafe { std::mem::zeroed() };
  let flags = flags | CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT;
  // SAFETY: every string is NUL-terminated and outlives the call; the
  // command line buffer is writable, as CreateProcessW requires; the
  // environment block is double-NUL-terminated UTF-16; the startup
  // information carries an initialised attribute list whose handles are open.
  let created = unsafe {
    CreateProcessW(
      application.as_ptr(),
      line.as_mut_ptr(),
      std::ptr::null(),
      std::ptr::null(),
      inherit,
      flags,
      environment.as_ptr() as *const _,
      cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
      &startup.StartupInfo,
      &mut info,
    )
  };
  let create_error = (created == 0).then(io::Error::last_os_error);
  drop(attributes);
  if let Some(error) = create_error {
    return Err(error);
  }
  let process = owned(info.hProcess);
  let thread = owned(info.hThread);
  if let Err(error) = job.assign(raw(&process)) {
    // Still suspended: not one instruction ran. Killed through its handle.
    // SAFETY: our open process handle.
    unsafe { TerminateProcess(raw(&process), STOPPED_EXIT_CODE) };
    return Err(error);
  }
  // SAFETY: our open thread handle.
  if unsafe { ResumeThread(raw(&thread)) } == u32::MAX {
    let error = io::Error::last_os_error();
    let _ = job.terminate();
    return Err(error);
  }
  Ok((info.dwProcessId, process, job))
}

/// Starts `request` suspended, puts it in a new job and resumes it (see the
/// module documentation), with stdin from `NUL` and stdout and stderr pipes.
pub fn spawn_in_job(request: &SpawnRequest) -> io::Result<Contained> {
  let stdin = null_device()?;
  let (stdout_read, stdout_write) = pipe()?;
  let (stderr_read, stderr_write) = pipe()?;
  let inherited = [raw(&stdin), raw(&stdout_write), raw(&stderr_write)];

  let serialised = crate::sync::lock(&SPAWN_LOCK);
  for handle in [&stdin, &stdout_write, &stderr_write] {
    set_inheritable(handle, true)?;
  }
  let created = create_in_job(request, Stdio::Handles(inherited));
  // The child has its copies (or there is no child): ours go now, so EOF on
  // our read ends means every process holding the write ends closed them.
  drop((stdin, stdout_write, stderr_write));
  drop(serialised);
  let (pid, process, job) = created?;
  Ok(Contained {
    pid,
    process,
    job,
    stdout: File::from(stdout_read),
    stderr: File::from(stderr_read),
  })
}

/// Windows: the leader is created suspended, put in a Job Object of its own
/// and resumed ([`spawn_in_job`]); the job is tracked before the caller sees
/// the child. Terminal mode: the same inside the job, attached to a pseudo
/// console (conpty.rs) whose output is `stdout`, with `stderr` a pipe
/// already at EOF and the console closed once the job empties.
pub fn spawn(request: SpawnRequest) -> io::Result<crate::process::SpawnedProcess> {
  if !crate::process::is_valid_task_tag(&request.task_tag) {
    let message = format!("invalid task tag {:?}", request.task_tag);
    return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
  }
  let (contained, terminal) = match request.terminal {
    None => (spawn_in_job(&request)?, None),
    Some(size) => {
      let (contained, console, input) = spawn_with_console(&request, size)?;
      (contained, Some((console, input, size)))
    }
  };
  let job = std::sync::Arc::new(contained.job);
  let group = super::job::ProcessGroup {
    pid: contained.pid,
    task_tag: request.task_tag,
    job: std::sync::Arc::clone(&job),
  };
  super::kill::register(group.clone());
  let terminal = match terminal {
    None => None,
    Some((console, input, size)) => {
      let closer = contained.process.try_clone().and_then(|leader| {
        conpty::close_when_job_empties(console.clone(), leader, std::sync::Arc::clone(&job))
      });
      if let Err(error) = closer {
        // Without the closer the output would never reach EOF: stop now.
        let _ = job.terminate();
        console.close();
        return Err(error);
      }
      match crate::process::terminal_handle::new_handle(console.clone(), input, size) {
        Ok(handle) => Some(handle),
        Err(error) => {
          // No input writer: nothing may run half-started.
          let _ = job.terminate();
          console.close();
          return Err(error);
        }
      }
    }
  };
  Ok(crate::process::SpawnedProcess {
    pid: contained.pid,
    group,
    stdout: contained.stdout,
    stderr: contained.stderr,
    child: crate::process::Child {
      pid: contained.pid,
      status: None,
      process: contained.process,
    },
    terminal,
  })
}

/// The leader in its job on a new pseudo console of `size`: `stdout` is the
/// console's output, `stderr` a pipe already at EOF; also the console and
/// our end of its input.
fn spawn_with_console(
  request: &SpawnRequest,
  size: crate::process::terminal_size::TerminalSize,
) -> io::Result<(Contained, conpty::PseudoConsole, File)> {
  size.check_not_empty()?;
  let conpty = conpty::open(size)?;
  let Some(console) = conpty.console.raw() else {
    return Err(io::Error::other("the pseudo console closed"));
  };
  let created = create_in_job(request, Stdio::Console(console));
  let (pid, process, job) = match created {
    Ok(created) => created,
    Err(error) => {
      conpty.console.close();
      return Err(error);
    }
  };
  let (stderr_read, stderr_write) = pipe()?;
  drop(stderr_write);
  Ok((
    Contained {
      pid,
      process,
      job,
      stdout: conpty.output,
      stderr: File::from(stderr_read),
    },
    conpty.console,
    conpty.input,
  ))
}
