//! What `restart()` (API.md §6.8) keeps of the tasks a registry may restart, for both kinds: the
//! options of each task `start()` or `executeBackground()` began and did not persist, kept until
//! its entry leaves the registry; for a restart that has to wait for the old run to settle, what
//! goes on once it settled, and what that run ended with. Why a restart is refused, and the
//! words that say so, are here too. The registries each hold one book: options `O`, the
//! counters `C` an ended run hands to the next, and `W`, what a waiting restart does next (the
//! binding's JavaScript values stay in `O` and `W`; the rules are here).

use std::collections::HashMap;

/// The words one kind's refusals use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartKind {
  /// How a message names the task: `Monitor "<id>" cannot be restarted: …`.
  pub title: &'static str,
  /// The kind's noun: `no such monitor`.
  pub noun: &'static str,
  /// Who starts a task that can be restarted: `only a monitor start() began, …`.
  pub starter: &'static str,
}

/// `MonitorRegistry.restart()`.
pub const MONITOR: RestartKind = RestartKind {
  title: "Monitor",
  noun: "monitor",
  starter: "start() began",
};

/// `BackgroundShellRegistry.restart()`.
pub const SHELL: RestartKind = RestartKind {
  title: "Background shell",
  noun: "shell",
  starter: "executeBackground() started",
};

/// Why `restart(id)` is refused. Refused at the call, nothing changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
  /// No entry has the id.
  Unknown,
  /// The entry was `register()`ed from JavaScript, or is persisted.
  NotRestartable,
  /// A restart of it waits for its run to settle already.
  UnderWay,
  /// The caller's `signal` given to its start was aborted.
  SignalAborted,
  /// Its run was cancelled and did not settle.
  StillRunning,
  /// A waiting restart's entry left the registry before its run ended.
  LeftBeforeEnd,
  /// The entry left the registry before the restart could take it.
  Left,
}

impl Refusal {
  fn why(self, kind: RestartKind) -> String {
    match self {
      Self::Unknown => format!("no such {}", kind.noun),
      Self::NotRestartable => format!(
        "only a {} {}, and not persisted, can be restarted",
        kind.noun, kind.starter
      ),
      Self::UnderWay => "a restart of it is already under way".into(),
      Self::SignalAborted => "its signal was aborted".into(),
      Self::StillRunning => "it is still running".into(),
      Self::LeftBeforeEnd => "it left the registry before its run ended".into(),
      Self::Left => "it left the registry".into(),
    }
  }

  /// The error message: `<Title> "<id>" cannot be restarted: <why>`.
  pub fn message(self, kind: RestartKind, id: &str) -> String {
    format!(
      "{} \"{id}\" cannot be restarted: {}",
      kind.title,
      self.why(kind)
    )
  }
}

/// What a restart does once it asked: go on now with what the last run ended with, or wait for
/// that run to settle ([`RestartBook::run_settled`] hands its continuation back then).
pub enum Begin<W, C> {
  Now(W, C),
  Waiting,
  /// The entry left meanwhile: `W` goes on with this refusal.
  Gone(W, String),
}

struct Kept<O, C, W> {
  options: O,
  /// What the last run ended with, once it settled.
  settled: Option<C>,
  /// A restart waiting for the last run to settle.
  waiting: Option<W>,
}

/// One registry's restartable tasks, by id.
pub struct RestartBook<O, C, W> {
  kind: RestartKind,
  kept: HashMap<String, Kept<O, C, W>>,
}

/// What an entry that left the registry had kept: its options, and a restart that was waiting
/// for it, with the message that refuses it ([`Refusal::LeftBeforeEnd`]).
pub struct Forgotten<O, W> {
  pub id: String,
  pub options: O,
  pub waiting: Option<W>,
  pub refusal: String,
}

impl<O, C: Clone, W> RestartBook<O, C, W> {
  pub fn new(kind: RestartKind) -> Self {
    Self {
      kind,
      kept: HashMap::new(),
    }
  }

  /// The error message of `refusal` for `id`.
  pub fn refuse(&self, id: &str, refusal: Refusal) -> String {
    refusal.message(self.kind, id)
  }

  /// Keeps what a later `restart(id)` needs; returns what an earlier run of `id` left.
  pub fn keep(&mut self, id: &str, options: O) -> Option<Forgotten<O, W>> {
    let kept = Kept {
      options,
      settled: None,
      waiting: None,
    };
    let earlier = self.kept.insert(id.to_owned(), kept)?;
    Some(self.forgotten(id, earlier))
  }

  /// The options kept for `id`, or why it cannot be restarted (`registered`: whether the
  /// registry has an entry `id`).
  pub fn options(&self, id: &str, registered: bool) -> Result<&O, String> {
    match self.kept.get(id) {
      Some(kept) if kept.waiting.is_some() => Err(self.refuse(id, Refusal::UnderWay)),
      Some(kept) => Ok(&kept.options),
      None if registered => Err(self.refuse(id, Refusal::NotRestartable)),
      None => Err(self.refuse(id, Refusal::Unknown)),
    }
  }

  /// A restart of `id` asked (after [`Self::options`] allowed it): if its last run settled it
  /// goes on now, otherwise `go_on` waits for [`Self::run_settled`].
  pub fn begin(&mut self, id: &str, go_on: W) -> Begin<W, C> {
    let Some(kept) = self.kept.get_mut(id) else {
      return Begin::Gone(go_on, self.refuse(id, Refusal::Left));
    };
    match kept.settled.clone() {
      Some(counters) => Begin::Now(go_on, counters),
      None => {
        kept.waiting = Some(go_on);
        Begin::Waiting
      }
    }
  }

  /// The run of `id` settled with `counters`: returns a restart waiting for it, to go on.
  pub fn run_settled(&mut self, id: &str, counters: &C) -> Option<(W, C)> {
    let kept = self.kept.get_mut(id)?;
    kept.settled = Some(counters.clone());
    kept.waiting.take().map(|go_on| (go_on, counters.clone()))
  }

  /// Takes what `id` kept, for its next run (which keeps its own).
  pub fn take(&mut self, id: &str) -> Result<O, String> {
    self
      .kept
      .remove(id)
      .map(|kept| kept.options)
      .ok_or_else(|| self.refuse(id, Refusal::Left))
  }

  /// These entries left the registry: what they kept goes.
  pub fn forget(&mut self, ids: &[String]) -> Vec<Forgotten<O, W>> {
    let gone: Vec<_> = ids
      .iter()
      .filter_map(|id| Some((id, self.kept.remove(id)?)))
      .collect();
    gone
      .into_iter()
      .map(|(id, kept)| self.forgotten(id, kept))
      .collect()
  }

  fn forgotten(&self, id: &str, kept: Kept<O, C, W>) -> Forgotten<O, W> {
    Forgotten {
      id: id.to_owned(),
      options: kept.options,
      waiting: kept.waiting,
      refusal: self.refuse(id, Refusal::LeftBeforeEnd),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  type Book = RestartBook<&'static str, u32, &'static str>;

  #[test]
  fn refusals_name_the_kind_and_the_id() {
    let book = Book::new(MONITOR);
    assert_eq!(
      book.options("mon_a", false).unwrap_err(),
      "Monitor \"mon_a\" cannot be restarted: no such monitor"
    );
    assert_eq!(
      book.options("fed", true).unwrap_err(),
      "Monitor \"fed\" cannot be restarted: only a monitor start() began, and not persisted, can be restarted"
    );
    let book = Book::new(SHELL);
    assert_eq!(
      book.options("fed", true).unwrap_err(),
      "Background shell \"fed\" cannot be restarted: only a shell executeBackground() started, and not persisted, can be restarted"
    );
    assert_eq!(
      book.refuse("bg_a", Refusal::SignalAborted),
      "Background shell \"bg_a\" cannot be restarted: its signal was aborted"
    );
  }

  #[test]
  fn a_restart_of_a_running_task_waits_for_its_run_and_refuses_a_second() {
    let mut book = Book::new(SHELL);
    assert!(book.keep("a", "opts").is_none());
    assert_eq!(book.options("a", true), Ok(&"opts"));
    assert!(matches!(book.begin("a", "go on"), Begin::Waiting));
    assert_eq!(
      book.options("a", true).unwrap_err(),
      "Background shell \"a\" cannot be restarted: a restart of it is already under way"
    );
    assert_eq!(book.run_settled("a", &7), Some(("go on", 7)));
    assert_eq!(book.take("a"), Ok("opts"));
    assert_eq!(
      book.take("a").unwrap_err(),
      "Background shell \"a\" cannot be restarted: it left the registry"
    );
  }

  #[test]
  fn a_restart_after_the_run_settled_goes_on_at_once_with_its_counters() {
    let mut book = Book::new(SHELL);
    book.keep("a", "opts");
    assert!(book.run_settled("a", &3).is_none(), "nobody waits yet");
    assert!(matches!(book.begin("a", "go on"), Begin::Now("go on", 3)));
    book.forget(&["a".into()]);
    assert!(
      matches!(book.begin("a", "go on"), Begin::Gone("go on", why) if why.ends_with("it left the registry"))
    );
  }

  #[test]
  fn an_entry_that_leaves_hands_back_its_options_and_a_waiting_restart() {
    let mut book = Book::new(SHELL);
    book.keep("a", "first");
    let earlier = book.keep("a", "second").expect("the earlier run's");
    assert_eq!((earlier.options, earlier.waiting), ("first", None));
    book.begin("a", "go on");
    let gone = book.forget(&["a".into(), "b".into()]);
    assert_eq!(gone.len(), 1);
    assert_eq!(
      (gone[0].options, gone[0].waiting),
      ("second", Some("go on"))
    );
    assert_eq!(
      gone[0].refusal,
      "Background shell \"a\" cannot be restarted: it left the registry before its run ended"
    );
    assert!(book.options("a", false).is_err());
  }
}
