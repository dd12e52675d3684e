//! The TCP ports a task's tree listens on (API.md §6.8 `ports`), on Windows: the processes of the
//! task's Job Object (escapees cannot leave it) against the owning process ids of the listening
//! TCP sockets, IPv4 and IPv6 (`GetExtendedTcpTable`, `TCP_TABLE_OWNER_PID_LISTENER`).

use std::collections::HashSet;
use std::io;

use windows_sys::Win32::NetworkManagement::IpHelper::{
  GetExtendedTcpTable, MIB_TCP6ROW_OWNER_PID, MIB_TCPROW_OWNER_PID, TCP_TABLE_OWNER_PID_LISTENER,
};

use super::job::ProcessGroup;

/// `AF_INET` and `AF_INET6` (ws2def.h), as `GetExtendedTcpTable` takes them.
const AF_INET: u32 = 2;
const AF_INET6: u32 = 23;
/// `ERROR_INSUFFICIENT_BUFFER`: the table grew between the size query and the read.
const ERROR_INSUFFICIENT_BUFFER: u32 = 122;

/// Where a row's fields sit: its size, and the offsets of `dwLocalPort` and `dwOwningPid`.
struct RowLayout {
  size: usize,
  port: usize,
  pid: usize,
}

const IPV4: RowLayout = RowLayout {
  size: std::mem::size_of::<MIB_TCPROW_OWNER_PID>(),
  port: std::mem::offset_of!(MIB_TCPROW_OWNER_PID, dwLocalPort),
  pid: std::mem::offset_of!(MIB_TCPROW_OWNER_PID, dwOwningPid),
};
const IPV6: RowLayout = RowLayout {
  size: std::mem::size_of::<MIB_TCP6ROW_OWNER_PID>(),
  port: std::mem::offset_of!(MIB_TCP6ROW_OWNER_PID, dwLocalPort),
  pid: std::mem::offset_of!(MIB_TCP6ROW_OWNER_PID, dwOwningPid),
};

/// The ports `group`'s tree listens on, sorted, each once (IPv4 and IPv6 alike).
pub fn listening_ports(group: &ProcessGroup) -> io::Result<Vec<u16>> {
  let pids: HashSet<u32> = group.job().process_ids()?.into_iter().collect();
  if pids.is_empty() {
    return Ok(Vec::new());
  }
  let mut ports = Vec::new();
  for (family, layout) in [(AF_INET, &IPV4), (AF_INET6, &IPV6)] {
    ports.extend(listening_rows(&tcp_table(family)?, layout, &pids));
  }
  ports.sort_unstable();
  ports.dedup();
  Ok(ports)
}

/// The listening-socket table of `family`, as the bytes `GetExtendedTcpTable` wrote (a `u32`
/// entry count, then the rows).
fn tcp_table(family: u32) -> io::Result<Vec<u8>> {
  let mut size = 0u32;
  let mut buffer: Vec<u32> = Vec::new();
  // The table may grow between the size query and the read: ask again, a few times.
  for _ in 0..8 {
    // SAFETY: `buffer` holds `size` writable bytes (u32-aligned, as the rows need).
    let status = unsafe {
      GetExtendedTcpTable(
        buffer.as_mut_ptr().cast(),
        &mut size,
        0,
        family,
        TCP_TABLE_OWNER_PID_LISTENER,
        0,
      )
    };
    match status {
      0 => {
        let bytes: Vec<u8> = buffer.iter().flat_map(|word| word.to_ne_bytes()).collect();
        return Ok(bytes[..(size as usize).min(bytes.len())].to_vec());
      }
      ERROR_INSUFFICIENT_BUFFER => buffer = vec![0; (size as usize).div_ceil(4) + 16],
      other => return Err(io::Error::from_raw_os_error(other as i32)),
    }
  }
  Err(io::Error::other(
    "the TCP table kept growing while it was read",
  ))
}

/// The local ports of the rows in `table` owned by one of `pids`. The port is in network byte
/// order in the low 16 bits of `dwLocalPort`.
fn listening_rows(table: &[u8], layout: &RowLayout, pids: &HashSet<u32>) -> Vec<u16> {
  let word = |at: usize| {
    table
      .get(at..at + 4)
      .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
  };
  let count = word(0).unwrap_or(0) as usize;
  (0..count)
    .map_while(|i| {
      let row = 4 + i * layout.size;
      Some((word(row + layout.port)?, word(row + layout.pid)?))
    })
    .filter(|(_, pid)| pids.contains(pid))
    .map(|(port, _)| u16::from_be(port as u16))
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;

  fn table(layout: &RowLayout, rows: &[(u16, u32)]) -> Vec<u8> {
    let mut bytes = vec![0u8; 4 + rows.len() * layout.size];
    bytes[..4].copy_from_slice(&(rows.len() as u32).to_ne_bytes());
    for (i, &(port, pid)) in rows.iter().enumerate() {
      let row = 4 + i * layout.size;
      let port = u32::from(port.to_be());
      bytes[row + layout.port..row + layout.port + 4].copy_from_slice(&port.to_ne_bytes());
      bytes[row + layout.pid..row + layout.pid + 4].copy_from_slice(&pid.to_ne_bytes());
    }
    bytes
  }

  #[test]
  fn rows_of_the_tree_only_with_the_port_in_host_order() {
    let pids: HashSet<u32> = [10, 11].into();
    for layout in [&IPV4, &IPV6] {
      let bytes = table(layout, &[(3000, 10), (8080, 99), (5173, 11), (443, 4)]);
      assert_eq!(listening_rows(&bytes, layout, &pids), vec![3000, 5173]);
      // A table cut short yields the whole rows it has.
      assert_eq!(
        listening_rows(&bytes[..4 + layout.size + 2], layout, &pids),
        vec![3000]
      );
    }
    assert!(listening_rows(&[], &IPV4, &pids).is_empty());
  }

  /// Every row's (port, owning pid), read as `listening_rows` reads them.
  fn all_rows(table: &[u8]) -> Vec<(u16, u32)> {
    let word = |at: usize| u32::from_ne_bytes(table[at..at + 4].try_into().unwrap());
    (0..word(0) as usize)
      .map(|i| {
        let row = 4 + i * IPV4.size;
        (
          u16::from_be(word(row + IPV4.port) as u16),
          word(row + IPV4.pid),
        )
      })
      .collect()
  }

  #[test]
  fn the_table_lists_a_port_this_process_listens_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let rows = all_rows(&tcp_table(AF_INET).unwrap());
    assert!(rows.iter().any(|&(p, _)| p == port), "{port} in {rows:?}");
  }

  /// Skipped under Wine (scripts/test-windows.mjs): Wine 8 reports every owning pid as 0.
  #[test]
  fn a_listening_row_names_its_owning_process() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let me: HashSet<u32> = [std::process::id()].into();
    let table = tcp_table(AF_INET).unwrap();
    let found = listening_rows(&table, &IPV4, &me);
    assert!(found.contains(&port), "{port} in {:?}", all_rows(&table));
  }
}
