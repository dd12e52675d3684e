//! How `MonitorRegistry.recover({ stateDir })` takes a persisted monitor over
//! (docs/persistence.md); `start()` with `persist` is `monitor_native.rs`'s start.

use std::sync::Arc;

use napi::bindgen_prelude::*;

use super::js::{self, RealClock};
use super::monitor::MonitorRegistry;
use super::persist::Recovering;
use crate::core::launch::{adopt, AdoptKind, Adoption, Reading};
use crate::core::monitor::persisted::MonitorTaskOptions;
use crate::core::persist::{EndView, KeeperLink};
use crate::core::persist::{TaskKind, TaskRecord};

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
