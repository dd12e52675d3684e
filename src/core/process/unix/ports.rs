//! The TCP ports a task's tree listens on (API.md §6.8 `ports`), on Linux: the tree's socket
//! inodes (`/proc/<pid>/fd/*` links `socket:[<inode>]`) against the listening sockets of
//! `/proc/net/tcp` and `/proc/net/tcp6` (state `0A`). A process we may not read contributes
//! nothing; a table we cannot read is an error.

use std::collections::HashSet;
use std::io;

use super::cgroup;
use super::kill::tree_pids;
use crate::process::group::ProcessGroup;

/// The ports `group`'s tree listens on, sorted, each once (IPv4 and IPv6 alike). The tree is
/// the task's cgroup when it has one (one file to read, escapees included), else one scan of
/// the process table.
pub fn listening_ports(group: &ProcessGroup) -> io::Result<Vec<u16>> {
  let pids = match group.cgroup.as_deref() {
    Some(dir) => cgroup::pids(dir),
    None => tree_pids(group),
  };
  let mut inodes = HashSet::new();
  for pid in pids {
    socket_inodes(pid, &mut inodes);
  }
  if inodes.is_empty() {
    return Ok(Vec::new());
  }
  let mut ports = Vec::new();
  for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
    match std::fs::read_to_string(table) {
      Ok(text) => ports.extend(parse_tcp_table(&text, &inodes)),
      // A kernel without IPv6 has no tcp6.
      Err(error) if error.kind() == io::ErrorKind::NotFound && table.ends_with('6') => {}
      Err(error) => return Err(error),
    }
  }
  ports.sort_unstable();
  ports.dedup();
  Ok(ports)
}

/// Adds the inodes of `pid`'s sockets to `inodes` (nothing when its fds cannot be read).
pub fn socket_inodes(pid: u32, inodes: &mut HashSet<u64>) {
  let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
    return;
  };
  for entry in dir.flatten() {
    let Ok(target) = std::fs::read_link(entry.path()) else {
      continue;
    };
    let target = target.to_string_lossy();
    if let Some(inode) = target
      .strip_prefix("socket:[")
      .and_then(|rest| rest.strip_suffix(']'))
      .and_then(|n| n.parse().ok())
    {
      inodes.insert(inode);
    }
  }
}

/// The local ports of the listening sockets (state `0A`) of a `/proc/net/tcp{,6}` table whose
/// inode is in `inodes`.
pub fn parse_tcp_table(text: &str, inodes: &HashSet<u64>) -> Vec<u16> {
  text
    .lines()
    .skip(1)
    .filter_map(|row| {
      let fields: Vec<&str> = row.split_whitespace().collect();
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
      let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
      if *state != "0A" || !inodes.contains(&inode.parse().ok()?) {
        return None;
      }
      u16::from_str_radix(local.rsplit(':').next()?, 16).ok()
    })
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;

  const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 999 1 0000000000000000 100 0 0 10 0
   2: 0100007F:0BB9 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0000000000000000 100 0 0 10 0
";

  #[test]
  fn only_listening_sockets_of_the_tree() {
    let inodes = HashSet::from([4242, 4243]);
    // 3000 listens and is ours; 8080 listens but is not; 3001 is ours but connected.
    assert_eq!(parse_tcp_table(TABLE, &inodes), [3000]);
    assert!(parse_tcp_table(TABLE, &HashSet::new()).is_empty());
    assert!(parse_tcp_table("header only\n", &inodes).is_empty());
  }

  #[test]
  fn a_socket_of_this_process_is_found() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut inodes = HashSet::new();
    socket_inodes(std::process::id(), &mut inodes);
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    assert!(parse_tcp_table(&table, &inodes).contains(&port));
  }
}
