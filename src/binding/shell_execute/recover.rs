//! Persisted shells: `BackgroundShellRegistry.recover({ stateDir })`
//! (docs/persistence.md).

use super::*;
use crate::binding::layer::task_parts;
use crate::binding::persist::Recovering;
use crate::core::launch::{adopt, AdoptKind, Adoption};
use crate::core::persist::{EndView, KeeperLink, TaskKind, TaskRecord};
use crate::core::shell::persisted::ShellTaskOptions;

/// A recorded shell registered as running: its entry object and the settle of its run.
fn register_recorded<'a>(
  env: &'a Env,
  inner: &Rc<ShellInner>,
  record: &TaskRecord,
) -> Result<(Object<'a>, RegisteredShell)> {
  let id = record.id.as_str();
  let cwd = ShellTaskOptions::of_record(record).cwd(record).to_owned();
  let start = record.start_time as f64;
  // A recovered shell never holds Node open: nobody waits on a `done`.
  let (mut registration, _) = task_parts(env, false)?;
  registration.set_named_property("shellId", id)?;
  registration.set_named_property("command", record.command.as_str())?;
  registration.set_named_property("cwd", cwd.as_str())?;
  registration.set_named_property("status", "running")?;
  registration.set_named_property("outputPath", record.output_path.as_str())?;
  registration.set_named_property("startTime", start)?;
  registration.set_named_property("pid", record.task.pid)?;
  let reg = ShellRegistration {
    shell_id: id.to_owned(),
    command: record.command.clone(),
    cwd,
    start_time: start,
    output_path: record.output_path.clone(),
    pid: Some(record.task.pid),
    todo_work_chain_id: None,
  };
  let generation = inner.register(env, &registration, reg, true)?;
  let token = inner.hub.borrow_mut().begin_run(id);
  let settle = Settle {
    inner: Rc::clone(inner),
    run: token,
    shell_id: id.to_owned(),
    settled: None,
  };
  let settle = Rc::new(RefCell::new(Some(settle)));
  let registered = RegisteredShell {
    generation,
    token,
    settle,
  };
  Ok((registration, registered))
}

/// A recorded shell, registered: its object's generation, its run's token and its settle.
pub(crate) struct RegisteredShell {
  generation: u64,
  token: u64,
  settle: Rc<RefCell<Option<Settle>>>,
}

impl Recovering for BackgroundShellRegistry {
  const KIND: TaskKind = TaskKind::Shell;
  type Registered<'a> = RegisteredShell;

  fn register_recorded<'a>(
    &'a self,
    env: &'a Env,
    record: &TaskRecord,
  ) -> Result<(Object<'a>, RegisteredShell)> {
    register_recorded(env, &self.inner, record)
  }

  fn settle_recorded(
    &self,
    env: &Env,
    record: &TaskRecord,
    registered: RegisteredShell,
    end: &EndView,
  ) -> Result<()> {
    let outcome = ShellOutcome::from_record(end, false, None);
    if let Some(settle) = registered.settle.borrow_mut().take() {
      let waiting = settle.settled_at(env, outcome, end.end_time);
      go_on_after(env, &self.inner, &record.id, waiting);
    }
    Ok(())
  }

  fn adopt(
    &self,
    env: &Env,
    record: &TaskRecord,
    registered: RegisteredShell,
    link: Arc<KeeperLink>,
  ) -> Result<()> {
    let (inner, id) = (&self.inner, record.id.as_str());
    let RegisteredShell {
      generation,
      token,
      settle,
    } = registered;
    let settle_ms = ShellTaskOptions::of_record(record).settle_ms;
    let adopted = adopt(Adoption {
      id,
      pid: record.task.pid,
      link,
      kind: AdoptKind::Shell {
        output_path: Path::new(&record.output_path),
      },
    });
    let run = adopted
      .into_shell()
      .and_then(|shell| shell.start(settle_ms, || run_callbacks(env, &settle, inner, id)));
    attach_run(
      env,
      inner,
      (id, generation, token),
      &settle,
      run,
      js::wall_ms(),
    );
    Ok(())
  }
}
