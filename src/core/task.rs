//! What monitors and background shells share: the task lifecycle states and
//! the two output streams (CONTRACT.md §1.1).

/// `running` leads to exactly one terminal status (CONTRACT.md §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
  Running,
  Completed,
  Failed,
  Cancelled,
}

impl TaskStatus {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::Running => "running",
      Self::Completed => "completed",
      Self::Failed => "failed",
      Self::Cancelled => "cancelled",
    }
  }

  /// The words used in terminal notifications.
  pub fn status_text(self) -> &'static str {
    match self {
      Self::Cancelled => "was cancelled",
      other => other.as_str(),
    }
  }
}

/// Which pipe the bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
  Stdout = 0,
  Stderr = 1,
}

/// A terminal entry as the retention and replay orderings see it.
pub struct TerminalKey<'a> {
  pub id: &'a str,
  pub start_time: f64,
  pub end_time: Option<f64>,
}

/// Ids oldest first by `(endTime ?? startTime, startTime)`; the sort is stable,
/// so ties keep insertion order (CONTRACT.md §2.7, §2.13 replay).
pub fn oldest_first(mut entries: Vec<TerminalKey<'_>>) -> Vec<String> {
  let key = |e: &TerminalKey| (e.end_time.unwrap_or(e.start_time), e.start_time);
  entries.sort_by(|a, b| {
    let ((a_end, a_start), (b_end, b_start)) = (key(a), key(b));
    a_end.total_cmp(&b_end).then(a_start.total_cmp(&b_start))
  });
  entries.into_iter().map(|e| e.id.to_owned()).collect()
}

/// The oldest ids to drop so that at most `cap` terminal entries remain
/// (CONTRACT.md §2.7). `keep` (the entry settling now) is never chosen, so its
/// notification can still be built.
pub fn prune_ids(entries: Vec<TerminalKey<'_>>, cap: usize, keep: &str) -> Vec<String> {
  let excess = entries.len().saturating_sub(cap);
  oldest_first(entries)
    .into_iter()
    .filter(|id| id != keep)
    .take(excess)
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;

  fn key(id: &str, start_time: f64, end_time: Option<f64>) -> TerminalKey<'_> {
    TerminalKey {
      id,
      start_time,
      end_time,
    }
  }

  #[test]
  fn orders_by_end_then_start_and_keeps_ties_stable() {
    let entries = vec![
      key("c", 5.0, Some(9.0)),
      key("a", 1.0, None),
      key("b", 2.0, Some(1.0)),
      key("d", 1.0, Some(1.0)),
    ];
    assert_eq!(oldest_first(entries), ["a", "d", "b", "c"]);
  }

  #[test]
  fn prunes_the_oldest_but_never_the_kept_entry() {
    let entries = vec![
      key("old", 0.0, Some(1.0)),
      key("mid", 0.0, Some(2.0)),
      key("new", 0.0, Some(3.0)),
    ];
    assert_eq!(prune_ids(entries, 1, "new"), ["old", "mid"]);
    let entries = vec![key("old", 0.0, Some(1.0)), key("new", 0.0, Some(3.0))];
    assert_eq!(prune_ids(entries, 1, "old"), ["new"]);
    assert!(prune_ids(vec![key("a", 0.0, None)], 1, "a").is_empty());
  }
}
