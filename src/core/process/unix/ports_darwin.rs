//! The TCP ports a task's tree listens on (API.md §6.8 `ports`), on macOS: each process of the
//! tree's descriptors (`proc_pidinfo` `PROC_PIDLISTFDS`), and for each socket its TCP state and
//! local port (`proc_pidfdinfo` `PROC_PIDFDSOCKETINFO`, xnu's bsd/sys/proc_info.h). A process we
//! may not read contributes nothing.
//!
//! The libc crate has `proc_fdinfo` but not the socket structures; they are declared here, each
//! with its size from the header checked at compile time, and only the fields read are named.

use std::mem::{size_of, MaybeUninit};
use std::os::raw::{c_int, c_void};

use super::kill::tree_pids;
use crate::process::group::ProcessGroup;

/// `PROC_PIDFDSOCKETINFO`, `SOCKINFO_TCP` and `TSI_S_LISTEN` (bsd/sys/proc_info.h).
const PROC_PIDFDSOCKETINFO: c_int = 3;
const SOCKINFO_TCP: c_int = 2;
const TSI_S_LISTEN: c_int = 1;

/// `struct proc_fileinfo`.
#[repr(C)]
struct ProcFileInfo {
  _open_flags: u32,
  _status: u32,
  _offset: i64,
  _type: i32,
  _guard_flags: u32,
}

/// `struct sockbuf_info`.
#[repr(C)]
struct SockbufInfo {
  _counts: [u32; 5],
  _flags: i16,
  _timeo: i16,
}

/// `struct in_sockinfo`: the ports are `int`s holding the port in network byte order.
#[repr(C)]
struct InSockInfo {
  _foreign_port: c_int,
  local_port: c_int,
  _rest: [u8; 72],
}

/// `struct tcp_sockinfo`: the addresses, then the TCP state.
#[repr(C)]
struct TcpSockInfo {
  ini: InSockInfo,
  state: c_int,
  _rest: [u8; 36],
}

/// `struct socket_info`: its `vinfo_stat` (136 bytes) and header, the kind, then the union
/// whose member `soi_kind` names.
#[repr(C)]
struct SocketInfo {
  _stat: [u64; 17],
  _so: u64,
  _pcb: u64,
  _type: c_int,
  _protocol: c_int,
  _family: c_int,
  _shorts: [i16; 7],
  _error: u16,
  _oobmark: u32,
  _rcv: SockbufInfo,
  _snd: SockbufInfo,
  kind: c_int,
  _rfu: u32,
  proto: [u64; 66],
}

/// `struct socket_fdinfo`.
#[repr(C)]
struct SocketFdInfo {
  _file: ProcFileInfo,
  socket: SocketInfo,
}

// The sizes of bsd/sys/proc_info.h (xnu), as `proc_pidfdinfo` checks them.
const _: () = assert!(size_of::<ProcFileInfo>() == 24);
const _: () = assert!(size_of::<SockbufInfo>() == 24);
const _: () = assert!(size_of::<InSockInfo>() == 80);
const _: () = assert!(size_of::<TcpSockInfo>() == 120);
const _: () = assert!(size_of::<SocketInfo>() == 768);
const _: () = assert!(size_of::<SocketFdInfo>() == 792);
const _: () = assert!(std::mem::offset_of!(SocketInfo, kind) == 232);

/// The ports `group`'s tree listens on, sorted, each once (IPv4 and IPv6 alike).
pub fn listening_ports(group: &ProcessGroup) -> std::io::Result<Vec<u16>> {
  let mut ports: Vec<u16> = tree_pids(group)
    .into_iter()
    .flat_map(|pid| socket_fds(pid).into_iter().map(move |fd| (pid, fd)))
    .filter_map(|(pid, fd)| listening_port(pid, fd))
    .collect();
  ports.sort_unstable();
  ports.dedup();
  Ok(ports)
}

/// The descriptors of `pid` that are sockets (none when it cannot be read).
fn socket_fds(pid: u32) -> Vec<c_int> {
  let pid = pid as c_int;
  // SAFETY: a null buffer asks for the size only.
  let bytes = unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, std::ptr::null_mut(), 0) };
  if bytes <= 0 {
    return Vec::new();
  }
  // Room for descriptors opened meanwhile.
  let capacity = bytes as usize / size_of::<libc::proc_fdinfo>() + 16;
  let mut fds: Vec<libc::proc_fdinfo> = Vec::with_capacity(capacity);
  // SAFETY: the buffer holds `capacity` entries; the kernel writes at most that many bytes and
  // returns how many it wrote.
  let written = unsafe {
    libc::proc_pidinfo(
      pid,
      libc::PROC_PIDLISTFDS,
      0,
      fds.as_mut_ptr().cast::<c_void>(),
      (capacity * size_of::<libc::proc_fdinfo>()) as c_int,
    )
  };
  if written <= 0 {
    return Vec::new();
  }
  // SAFETY: `written` bytes of whole entries were initialised.
  unsafe { fds.set_len(written as usize / size_of::<libc::proc_fdinfo>()) };
  fds
    .iter()
    .filter(|fd| fd.proc_fdtype as c_int == libc::PROX_FDTYPE_SOCKET)
    .map(|fd| fd.proc_fd)
    .collect()
}

/// The local port of `pid`'s descriptor `fd` if it is a listening TCP socket.
fn listening_port(pid: u32, fd: c_int) -> Option<u16> {
  let mut info = MaybeUninit::<SocketFdInfo>::zeroed();
  let size = size_of::<SocketFdInfo>() as c_int;
  // SAFETY: `info` is a writable buffer of `size` bytes.
  let written = unsafe {
    libc::proc_pidfdinfo(
      pid as c_int,
      fd,
      PROC_PIDFDSOCKETINFO,
      info.as_mut_ptr().cast::<c_void>(),
      size,
    )
  };
  if written != size {
    return None;
  }
  // SAFETY: fully written by the kernel (and zeroed before).
  let info = unsafe { info.assume_init() };
  if info.socket.kind != SOCKINFO_TCP {
    return None;
  }
  // SAFETY: `soi_kind` says the union holds a `tcp_sockinfo`; the storage is 8-aligned and
  // larger than it.
  let tcp = unsafe { std::ptr::read(info.socket.proto.as_ptr().cast::<TcpSockInfo>()) };
  (tcp.state == TSI_S_LISTEN).then(|| u16::from_be(tcp.ini.local_port as u16))
}
