//! Persisted native monitors (docs/persistence.md): `start()` with
//! `persist`, and `recover({ stateDir })`.

use std::sync::Arc;

use napi::bindgen_prelude::*;

use super::args;
use super::js::{self, RealClock};
use super::monitor::MonitorRegistry;
use super::monitor_options::StartOptions;
use super::persist::{self as host_persist, PersistOptions, Recovering};
use crate::core::launch::{
  adopt, launch, AdoptKind, Adoption, Contained, Kept, LaunchKind, LaunchRequest, Launched,
  Reading, ShellCommand, TaskOptions, Term,
};
use crate::core::monitor::persisted::monitor_description;
use crate::core::monitor::persisted::MonitorTaskOptions;
use crate::core::persist::{self, TaskKind, TaskRecord};
use crate::core::persist::{EndView, KeeperLink};

/// The raw log of a persisted monitor is capped like a shell's output file.
const LOG_CAP_BYTES: u64 = 1 << 30;

impl MonitorRegistry {
  /// `start()` with `persist`: the state directory is checked and the lock
  /// taken (a failure throws, nothing started), then a keeper runs the
  /// command; a keeper that fails gives a `failed` entry, as a spawn failure.
  pub(crate) fn start_persisted(
    &self,
    env: &Env,
    opts: StartOptions,
    command: String,
    id: String,
  ) -> Result<Unknown<'static>> {
    let persist: PersistOptions = opts.persist.clone().expect("persist");
    persist::records::check_task_id(&id).map_err(|e| {
      args::value_error(
        env,
        format!("The \"options.monitorId\" property cannot name a persisted task: {e}"),
      )
    })?;
    let link = host_persist::prepare(&persist, &id)?;
    let (now_wall, now_mono) = (js::wall_ms(), js::mono_ms());
    let description = monitor_description(opts.description.as_deref(), &command);
    let request = ShellCommand {
      command: &command,
      cwd: &opts.cwd,
      env: &opts.env,
      remove_env: &self.remove_env,
      term: Term::Monitor,
      terminal: None,
      limits: None,
    };
    let launched = launch(LaunchRequest {
      command: request,
      kind: LaunchKind::Monitor,
      kept: Some(Kept {
        persist: &persist,
        link,
        id: &id,
        description: &description,
        start_time: now_wall,
        max_output_bytes: LOG_CAP_BYTES,
        options: TaskOptions::Monitor(opts.task_options()),
      }),
    })
    .map(Launched::into_monitor);
    let pid = launched.as_ref().ok().map(Contained::pid);
    let registration =
      opts
        .task_options()
        .native_registration(&id, &command, &description, now_wall, pid);
    let reading = Reading {
      throttle: self.throttle,
      signal: opts.signal,
      max_events: opts.max_events,
      screen_settle_ms: None,
    };
    let object = self.register_native(env, registration, now_mono, opts.keep_alive)?;
    self.commit_native(env, &id, now_wall, launched, reading);
    Ok(args::out(env, &object))
  }
}

impl Recovering for MonitorRegistry {
  const KIND: TaskKind = TaskKind::Monitor;
  type Registered<'a> = MonitorTaskOptions;

  fn register_recorded<'a>(
    &'a self,
    env: &'a Env,
    record: &TaskRecord,
  ) -> Result<(Object<'a>, MonitorTaskOptions)> {
    let o = MonitorTaskOptions::of_record(record);
    let object = self.register_native(env, o.registration(record), js::mono_ms(), false)?;
    Ok((object, o))
  }

  fn settle_recorded(
    &self,
    env: &Env,
    record: &TaskRecord,
    _: MonitorTaskOptions,
    end: &EndView,
  ) -> Result<()> {
    self
      .hub
      .apply(|r| r.settle_from_record(&record.id, &end.end, false, end.end_time));
    self.drain_for(env, &record.id);
    Ok(())
  }

  fn adopt(
    &self,
    env: &Env,
    record: &TaskRecord,
    o: MonitorTaskOptions,
    link: Arc<KeeperLink>,
  ) -> Result<()> {
    let reading = Reading {
      throttle: self.throttle,
      signal: o.signal_config(),
      max_events: o.max_events,
      screen_settle_ms: None,
    };
    let adopted = adopt(Adoption {
      id: &record.id,
      pid: record.task.pid,
      link,
      kind: AdoptKind::Monitor,
    });
    let followed = adopted
      .into_monitor()
      .start_monitor(&self.hub, &record.id, reading, RealClock);
    self.started_native(env, &record.id, js::wall_ms(), followed);
    Ok(())
  }
}
