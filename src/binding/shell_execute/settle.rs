//! How a background shell settles on the JavaScript thread: the registry
//! settles the entry, and the JavaScript layer's `settled` resolves `done` with the
//! `BackgroundShellResult` and lets what the shell held go.

use std::rc::Rc;

use napi::bindgen_prelude::*;

use crate::binding::js::{self, Persistent};
use crate::binding::layer::call_once;
use crate::binding::shell::ShellInner;
use crate::core::end::TaskEnd;
use crate::core::shell::{OutputCounters, ShellOutcome, ShellSettled, ShellVerdict};

/// What the JavaScript thread needs when the shell settles.
pub(super) struct Settle {
  pub(super) inner: Rc<ShellInner>,
  pub(super) shell_id: String,
  /// The registry's token for this run: `done` reports the status the
  /// registry settled the shell with, even once the entry has left it.
  pub(super) run: u64,
  /// The JavaScript layer's `settled(result)` of an `executeBackground()` run (a recovered
  /// shell has none: nobody waits on its `done`).
  pub(super) settled: Option<Persistent>,
}

impl Settle {
  /// §2.15 step 9, after the runner flushed and closed the file. Each way to settle returns the
  /// counters a restart that waited for this run goes on with (`super::go_on`).
  pub(super) fn settled(self, env: &Env, outcome: ShellOutcome) -> Option<OutputCounters> {
    // A persisted run ended when its keeper says.
    let end_time = outcome
      .recorded_end_time
      .map_or_else(js::wall_ms, |t| t as f64);
    self.settled_at(env, outcome, end_time)
  }

  /// [`Self::settled`] at a given end time (a recorded end's).
  pub(super) fn settled_at(
    self,
    env: &Env,
    outcome: ShellOutcome,
    end_time: f64,
  ) -> Option<OutputCounters> {
    let settled = self.inner.finish_run(
      env,
      &self.shell_id,
      self.run,
      outcome.verdict(),
      outcome.end(),
      end_time,
    );
    self.finish(env, &outcome, &settled)
  }

  /// The spawn failed: the entry fails with the OS error text and `done` resolves.
  pub(super) fn failed_to_start(
    self,
    env: &Env,
    error: &str,
    end: TaskEnd,
    now: f64,
  ) -> Option<OutputCounters> {
    let settled = self.inner.finish_run(
      env,
      &self.shell_id,
      self.run,
      ShellVerdict::Failed(error.to_owned()),
      end,
      now,
    );
    let outcome = ShellOutcome::failed_to_start(error);
    self.finish(env, &outcome, &settled)
  }

  fn finish(
    mut self,
    env: &Env,
    outcome: &ShellOutcome,
    settled: &ShellSettled,
  ) -> Option<OutputCounters> {
    if let Some(settled_fn) = self.settled.take() {
      match self.result(env, outcome, settled) {
        Ok(result) => call_once(env, settled_fn, "executeBackground", result),
        Err(error) => {
          tracing::warn!(%error, "taskstream: could not build a background shell result");
          call_once(env, settled_fn, "executeBackground", ());
        }
      }
    }
    self.inner.settle_waits(env, &self.shell_id, settled.status);
    let waiting = (self.inner.restarts.borrow_mut()).run_settled(&self.shell_id, &outcome.counters);
    waiting.map(|((), counters)| counters)
  }

  /// `BackgroundShellResult` (CONTRACT.md §2.15): `status` and `error` as
  /// the registry settled the shell, the rest as the process ended.
  fn result<'a>(
    &self,
    env: &'a Env,
    outcome: &ShellOutcome,
    settled: &ShellSettled,
  ) -> Result<Object<'a>> {
    let counters = &outcome.counters;
    let mut result = Object::new(env)?;
    result.set_named_property("shellId", self.shell_id.as_str())?;
    result.set_named_property("status", settled.status.as_str())?;
    set_or_null(&mut result, "exitCode", outcome.exit.code)?;
    set_or_null(&mut result, "signal", outcome.exit.signal)?;
    js::set_opt(&mut result, "error", settled.error.as_deref())?;
    result.set_named_property("aborted", outcome.aborted)?;
    result.set_named_property("bytesRead", counters.bytes_read as f64)?;
    result.set_named_property("bytesWritten", counters.bytes_written as f64)?;
    result.set_named_property("bytesNotWritten", counters.bytes_not_written as f64)?;
    result.set_named_property("binaryDetected", counters.binary_detected)?;
    let end = settled.end.clone().unwrap_or_else(|| outcome.end());
    result.set_named_property("end", crate::binding::registry::end_object(env, &end)?)?;
    Ok(result)
  }
}

fn set_or_null(object: &mut Object, key: &str, value: Option<i32>) -> Result<()> {
  match value {
    Some(v) => object.set_named_property(key, v),
    None => object.set_named_property(key, Null),
  }
}
