//! Random identifiers: `mon_` + 16 hex for monitors, `bg_` + 8 hex for shells.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// `len` lowercase hex characters from the OS random source (falling back to a
/// randomly keyed hash of a counter and the time where there is none).
pub fn random_hex(len: usize) -> String {
  let mut bytes = vec![0u8; len.div_ceil(2)];
  if !fill_from_os(&mut bytes) {
    fill_from_hasher(&mut bytes);
  }
  let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
  hex.truncate(len);
  hex
}

/// The longest `shellId` `executeBackground` takes, in UTF-8 bytes. The id
/// becomes part of file names: `shell-<id>.output`, `shell-<id>.status` and the
/// sidecar's temporary `.shell-<id>.status.<pid>.<8 hex>.tmp` (the id plus at
/// most 38 bytes), which must all fit the 255-byte name limit of common file
/// systems.
pub const MAX_SHELL_ID_BYTES: usize = 200;

/// Why `id` cannot be the `shellId` of a background shell, or `None`. The id
/// is one component of the output path (`<outputDir>/shell-<id>.output`) on
/// every platform, so it must be non-empty, at most [`MAX_SHELL_ID_BYTES`]
/// long, not `.` or `..`, and free of path separators (`/`, `\`), control
/// characters (NUL included) and the characters Windows refuses in names
/// (`:` would even name an NTFS alternate data stream).
pub fn shell_id_problem(id: &str) -> Option<String> {
  const WINDOWS_RESERVED: [char; 7] = [':', '*', '?', '"', '<', '>', '|'];
  if id.is_empty() {
    return Some("must be a non-empty string".to_owned());
  }
  if id.len() > MAX_SHELL_ID_BYTES {
    return Some(format!(
      "must be at most {MAX_SHELL_ID_BYTES} bytes long in UTF-8 (it is {})",
      id.len()
    ));
  }
  if id == "." || id == ".." {
    return Some("must not be \".\" or \"..\"".to_owned());
  }
  if let Some(c) = id.chars().find(|c| matches!(c, '/' | '\\')) {
    return Some(format!("must not contain a path separator ({c:?})"));
  }
  if id.contains('\0') {
    return Some("must not contain null bytes".to_owned());
  }
  if id.chars().any(char::is_control) {
    return Some("must not contain control characters".to_owned());
  }
  if let Some(c) = id.chars().find(|c| WINDOWS_RESERVED.contains(c)) {
    return Some(format!(
      "must not contain {c:?} (one of the characters {} that file names cannot hold on Windows)",
      WINDOWS_RESERVED.iter().collect::<String>()
    ));
  }
  None
}

fn fill_from_os(bytes: &mut [u8]) -> bool {
  std::fs::File::open("/dev/urandom")
    .and_then(|mut f| f.read_exact(bytes))
    .is_ok()
}

fn fill_from_hasher(bytes: &mut [u8]) {
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  for chunk in bytes.chunks_mut(8) {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
      std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos()),
    );
    let value = hasher.finish().to_le_bytes();
    chunk.copy_from_slice(&value[..chunk.len()]);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn hex_of_the_requested_length_and_distinct() {
    let a = random_hex(16);
    let b = random_hex(16);
    assert_eq!(a.len(), 16);
    assert_eq!(random_hex(8).len(), 8);
    assert!(a
      .chars()
      .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_ne!(a, b);
    let mut fallback = [0u8; 4];
    fill_from_hasher(&mut fallback);
  }

  #[test]
  fn shell_ids_are_single_safe_file_name_components() {
    for good in [
      "bg_0123abcd",
      "a",
      "shell.1",
      "a..b",
      "...",
      "my-task_2 (copy)",
      "é😀",
      &"x".repeat(MAX_SHELL_ID_BYTES),
    ] {
      assert_eq!(shell_id_problem(good), None, "{good:?}");
    }
    let bad = [
      ("", "non-empty"),
      (".", "\".\""),
      ("..", "\".\""),
      ("../x", "path separator ('/')"),
      ("a/b", "path separator ('/')"),
      ("a\\b", "path separator ('\\\\')"),
      ("a\0b", "null bytes"),
      ("a\nb", "control characters"),
      ("a\u{7f}", "control characters"),
      ("a\u{85}", "control characters"),
      ("c:x", "':'"),
      ("a|b", "'|'"),
      ("a*", "'*'"),
    ];
    for (id, wanted) in bad {
      let problem = shell_id_problem(id).unwrap_or_default();
      assert!(problem.contains(wanted), "{id:?}: {problem:?}");
    }
    let long = "é".repeat(MAX_SHELL_ID_BYTES / 2 + 1);
    assert!(shell_id_problem(&long)
      .unwrap_or_default()
      .contains(&format!("it is {}", MAX_SHELL_ID_BYTES + 2)));
  }
}
