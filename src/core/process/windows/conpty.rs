//! Terminal mode on Windows: a pseudo console (ConPTY, Windows 10 1809 and
//! later) as the task leader's console.
//!
//! * [`open`] makes two anonymous pipes and the pseudo console on their far
//!   ends: the console host (`conhost.exe` or `OpenConsole.exe`, which the
//!   system starts for the pseudo console) reads our input pipe and writes the
//!   screen's VT rendering (UTF-8) to our output pipe. Its ends are closed in
//!   this process at once: the host has its own copies.
//! * The leader is created with `PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE`
//!   (spawn.rs), suspended, assigned to the task's job and resumed, as in
//!   pipe mode: the command and everything it starts are job members from
//!   their first instruction, so every stop and kill-on-close still hold.
//!   Its standard handles are explicitly null (`STARTF_USESTDHANDLES`): a
//!   console program then uses the pseudo console's, never Node's (whose
//!   redirected handles it would otherwise inherit; microsoft/terminal#4380).
//! * The host is not a job member (the system starts it, outside any
//!   attribute of ours). Its lifetime is the pseudo console's: it ends when
//!   [`PseudoConsole`] is closed, which [`close_when_job_empties`] does once
//!   the leader has exited and the job has no process left (so the output
//!   pipe reaches EOF only after the last process attached could write, as a
//!   Unix terminal hangs up when its last process closes it); and when Node
//!   dies, however it dies, the kernel closes our handles to the host, which
//!   then exits, while kill-on-close ends the job's members.
//! * The functions are looked up at run time, so the addon still loads
//!   where they do not exist; a terminal spawn there fails with an error
//!   naming the missing feature.

use std::fs::File;
use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use once_cell::sync::Lazy;
use windows_sys::core::HRESULT;
use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Console::{COORD, HPCON};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
use windows_sys::Win32::System::Threading::{WaitForSingleObject, INFINITE};

use super::job::Job;
use crate::process::terminal_size::TerminalSize;
use crate::sync::lock;

type CreateFn = unsafe extern "system" fn(COORD, HANDLE, HANDLE, u32, *mut HPCON) -> HRESULT;
type ResizeFn = unsafe extern "system" fn(HPCON, COORD) -> HRESULT;
type CloseFn = unsafe extern "system" fn(HPCON);

/// The three ConPTY functions of kernel32, when it has them.
struct Api {
  create: CreateFn,
  resize: ResizeFn,
  close: CloseFn,
}

static API: Lazy<Option<Api>> = Lazy::new(|| {
  let name: Vec<u16> = "kernel32.dll\0".encode_utf16().collect();
  // SAFETY: kernel32 is loaded in every process; the names are NUL-terminated;
  // each pointer found is a function of the documented signature.
  unsafe {
    let module = GetModuleHandleW(name.as_ptr());
    if module.is_null() {
      return None;
    }
    let create = GetProcAddress(module, c"CreatePseudoConsole".as_ptr().cast())?;
    let resize = GetProcAddress(module, c"ResizePseudoConsole".as_ptr().cast())?;
    let close = GetProcAddress(module, c"ClosePseudoConsole".as_ptr().cast())?;
    Some(Api {
      create: std::mem::transmute::<unsafe extern "system" fn() -> isize, CreateFn>(create),
      resize: std::mem::transmute::<unsafe extern "system" fn() -> isize, ResizeFn>(resize),
      close: std::mem::transmute::<unsafe extern "system" fn() -> isize, CloseFn>(close),
    })
  }
});

/// The error of a terminal spawn where Windows has no ConPTY.
pub const MISSING_MESSAGE: &str =
  "taskstream: terminal mode needs ConPTY (CreatePseudoConsole), which this Windows lacks: \
   Windows 10 version 1809 or later is required";

fn api() -> io::Result<&'static Api> {
  API
    .as_ref()
    .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, MISSING_MESSAGE))
}

fn coord(size: TerminalSize) -> COORD {
  // TerminalSize keeps both within 1..=1000.
  COORD {
    X: size.cols as i16,
    Y: size.rows as i16,
  }
}

fn hresult(result: HRESULT) -> io::Result<()> {
  if result < 0 {
    Err(io::Error::from_raw_os_error(result))
  } else {
    Ok(())
  }
}

/// An open pseudo console. [`PseudoConsole::close`] (or dropping the last
/// clone) closes it: its host exits, after writing what it still had, and
/// our output pipe then reaches EOF. Cheap to clone; every clone is the same
/// console.
#[derive(Clone, Debug)]
pub struct PseudoConsole {
  handle: Arc<Mutex<Option<Hpcon>>>,
}

/// The raw `HPCON`, closed on drop.
#[derive(Debug)]
struct Hpcon(HPCON);

// SAFETY: an HPCON is a handle to kernel objects, usable from any thread;
// every use is serialised by the mutex around it.
unsafe impl Send for Hpcon {}

impl Drop for Hpcon {
  fn drop(&mut self) {
    if let Ok(api) = api() {
      // SAFETY: a pseudo console we created and close once (here).
      unsafe { (api.close)(self.0) };
    }
  }
}

impl PseudoConsole {
  /// `ResizePseudoConsole`: the console's buffer and window take the new
  /// size, and the program sees a window-size event, as SIGWINCH on Unix.
  pub fn resize(&self, size: TerminalSize) -> io::Result<()> {
    let guard = lock(&self.handle);
    let Some(console) = guard.as_ref() else {
      return Err(io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the pseudo console is closed",
      ));
    };
    // SAFETY: an open pseudo console (the lock keeps it open during the call).
    hresult(unsafe { (api()?.resize)(console.0, coord(size)) })
  }

  /// Closes the console (its host exits). Later resizes fail; idempotent.
  /// `ClosePseudoConsole` may wait for the host to write its last output,
  /// so the output pipe must still be read (the task's reader does).
  pub fn close(&self) {
    let console = lock(&self.handle).take();
    drop(console);
  }

  pub fn is_closed(&self) -> bool {
    lock(&self.handle).is_none()
  }

  pub(super) fn raw(&self) -> Option<HPCON> {
    lock(&self.handle).as_ref().map(|c| c.0)
  }
}

/// What [`open`] gives: the console, our end of its input and of its output.
pub struct ConPty {
  pub console: PseudoConsole,
  pub input: File,
  pub output: File,
}

/// A pseudo console of `size` on two new pipes (see the module documentation).
pub fn open(size: TerminalSize) -> io::Result<ConPty> {
  let api = api()?;
  let (input_read, input_write) = super::handles::pipe()?;
  let (output_read, output_write) = super::handles::pipe()?;
  let mut raw: HPCON = 0;
  // SAFETY: two open pipe ends and a valid out-pointer; the host duplicates
  // the ends it is given, so ours are closed below whatever the result.
  let result = unsafe {
    (api.create)(
      coord(size),
      input_read.as_raw_handle() as HANDLE,
      output_write.as_raw_handle() as HANDLE,
      0,
      &mut raw,
    )
  };
  drop((input_read, output_write));
  hresult(result)?;
  Ok(ConPty {
    console: PseudoConsole {
      handle: Arc::new(Mutex::new(Some(Hpcon(raw)))),
    },
    input: File::from(input_write),
    output: File::from(output_read),
  })
}

/// How often the job is checked for members once the leader has exited.
const EMPTY_JOB_POLL: Duration = Duration::from_millis(50);

/// Closes `console` once `leader` (a process handle of our own) has exited
/// and `job` has no process left, or at once if the console was closed
/// meanwhile; on a thread of its own (`taskstream-conpty`), blocked on the
/// leader while it runs. A task stopped by taskstream gets there too: its
/// job is terminated, so it empties.
pub fn close_when_job_empties(
  console: PseudoConsole,
  leader: OwnedHandle,
  job: Arc<Job>,
) -> io::Result<()> {
  std::thread::Builder::new()
    .name("taskstream-conpty".into())
    .stack_size(64 * 1024)
    .spawn(move || {
      // SAFETY: our own open process handle.
      let waited = unsafe { WaitForSingleObject(leader.as_raw_handle() as HANDLE, INFINITE) };
      if waited == WAIT_OBJECT_0 {
        while !console.is_closed() && job.active_processes().map_or(false, |n| n > 0) {
          std::thread::sleep(EMPTY_JOB_POLL);
        }
      }
      console.close();
    })
    .map(|_| ())
}
