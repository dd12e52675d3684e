//! The task's environment tag (CONTRACT.md §4 item 5): every child carries
//! `TASKSTREAM_TASK_ID=<tag>`, so descendants that left the process group
//! (`setsid`, double fork) can still be found through `/proc/<pid>/environ`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use once_cell::sync::Lazy;

/// The environment variable that carries the tag.
pub const TASK_TAG_VAR: &str = "TASKSTREAM_TASK_ID";

/// Longest tag accepted by [`is_valid_task_tag`].
const MAX_TAG_LEN: usize = 128;

/// `<our pid>-<nanoseconds at first use>`, both hex: no other live host, and no
/// earlier host with our pid, shares it.
static HOST_PREFIX: Lazy<String> = Lazy::new(|| {
  let nanos = SystemTime::now()
    .duration_since(UNIX_EPOCH)
    .map_or(0, |d| d.as_nanos());
  format!("{:x}-{:x}", std::process::id(), nanos)
});

static NEXT_SEQUENCE: AtomicU64 = AtomicU64::new(1);

/// A fresh tag, unique across tasks and across host processes. Tags chosen by
/// callers (for example a user-given monitor id) could collide with another
/// host's tasks, and a kill by tag would then reach that host's processes.
pub fn new_task_tag() -> String {
  let sequence = NEXT_SEQUENCE.fetch_add(1, Ordering::Relaxed);
  format!("{}-{}", *HOST_PREFIX, sequence)
}

/// A tag must be 1..=128 characters of `[A-Za-z0-9._:-]`: it travels in an
/// environment entry and in the watchdog's line protocol, where spaces,
/// newlines or NULs would break the framing.
pub fn is_valid_task_tag(tag: &str) -> bool {
  !tag.is_empty()
    && tag.len() <= MAX_TAG_LEN
    && tag
      .bytes()
      .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}
