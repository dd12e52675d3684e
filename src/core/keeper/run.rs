//! The keeper's life, the same on every platform; `unix.rs` and `windows.rs` hold what
//! differs (leaving the host, signals, the null device, the task's recorded identity).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::clock::{Clock, SharedClock};

use crate::end::{EndVia, TaskEnd};
use crate::persist::lease::last_renewal;
use crate::persist::records::{
  check_task_id, private_mode, read_cancel, write_record, EndRecord, KeeperConfig, ProcessIdentity,
  TaskFiles, TaskKind, TaskRecord, RECORD_VERSION,
};
use crate::persist::state_dir::validate_state_dir;
use crate::persist::KEEPER_TAG_VAR;
use crate::process::{
  self, kill_now, proc_table, signal_name, terminate, tree_alive, ExitStatusInfo, ProcessGroup,
  SpawnRequest, SpawnedProcess,
};
use crate::reactor::{ExitHandler, PipeHandler, PipeKey, Reactor};
use crate::shell::{
  write_status_sidecar, OutputWriter, ShellEntry, ShellOutcome, ShellRun, ShellStatus, ShellVerdict,
};
use crate::sync::lock;

use super::pace::{lease_expired, AfterStop, Pace, END_TREE_KILL_AGAIN_MS};
use super::platform;

// ---------------------------------------------------------------- keeper

/// How often the keeper looks at its signals, the cancel file and the lease.
const STEP: Duration = Duration::from_millis(100);
/// Largest config read from stdin.
const MAX_CONFIG_BYTES: u64 = 64 << 20;

/// The keeper's whole life: reads its config from stdin, runs the task, and
/// returns the process exit code (0 once the end record is written, 1 when
/// the task or its end failed, 2 for a bad config). The caller exits with it
/// at once.
pub fn keeper_main() -> i32 {
  let clock = SharedClock::default();
  let started = clock.wall_ms();
  if let Err(error) = platform::detach() {
    answer(&format!(
      "err the keeper cannot leave its host's session: {error}"
    ));
    return 1;
  }
  platform::install_signal_handlers();
  let config = match read_config() {
    Ok(config) => config,
    Err(error) => {
      answer(&format!("err invalid keeper config: {error}"));
      return 2;
    }
  };
  eprintln!(
    "taskstream keeper {} for {} task {}: starting",
    std::process::id(),
    config.kind.as_str(),
    config.id
  );
  let code = match Keeper::start(config, clock, started) {
    Ok(keeper) => keeper.run(),
    Err(error) => {
      answer(&format!("err {}", one_line(&error.to_string())));
      1
    }
  };
  eprintln!(
    "taskstream keeper {}: exiting with {code}",
    std::process::id()
  );
  code
}

fn read_config() -> io::Result<KeeperConfig> {
  let mut bytes = Vec::new();
  io::stdin()
    .lock()
    .take(MAX_CONFIG_BYTES)
    .read_to_end(&mut bytes)?;
  let config: KeeperConfig =
    serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
  if config.version != RECORD_VERSION {
    return Err(io::Error::new(
      io::ErrorKind::InvalidData,
      format!("version {}, expected {RECORD_VERSION}", config.version),
    ));
  }
  Ok(config)
}

fn one_line(text: &str) -> String {
  text.replace(['\n', '\r'], " ")
}

/// Writes the handshake line (on a line of its own, whatever was printed
/// before it), then points stdin and stdout at the null device: the launcher
/// reads nothing more, and may be gone.
fn answer(line: &str) {
  let mut out = io::stdout().lock();
  let _ = write!(out, "\n{line}\n");
  let _ = out.flush();
  drop(out);
  platform::close_stdio();
}

fn wall_ms(time: SystemTime) -> f64 {
  time
    .duration_since(UNIX_EPOCH)
    .map_or(0.0, |d| d.as_millis() as f64)
}

/// What the readers and the exit watcher tell the keeper's loop.
enum Event {
  /// The leader exited (`None`: it could not be waited for).
  Exited(Option<ExitStatusInfo>),
  /// A monitor pipe reached EOF or failed.
  PipeClosed,
  /// A shell run settled (output finished and closed).
  Settled(ShellOutcome),
}

/// A monitor's raw log: bytes as read, capped; past the cap counted.
struct RawLog {
  file: Option<File>,
  cap: u64,
  written: u64,
  dropped: u64,
}

impl RawLog {
  fn create(path: &Path, cap: u64) -> io::Result<Self> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    private_mode(&mut options);
    let file = options.open(path).map_err(|error| {
      io::Error::new(
        error.kind(),
        format!("Cannot open output file {}: {error}", path.display()),
      )
    })?;
    Ok(Self {
      file: Some(file),
      cap,
      written: 0,
      dropped: 0,
    })
  }

  fn append(&mut self, bytes: &[u8]) {
    let room = usize::try_from(self.cap.saturating_sub(self.written)).unwrap_or(usize::MAX);
    let take = bytes.len().min(room);
    let mut done = 0;
    if let Some(file) = self.file.as_mut() {
      match file.write_all(&bytes[..take]) {
        Ok(()) => done = take,
        Err(error) => {
          eprintln!("taskstream keeper: writing the log failed: {error}");
          self.file = None;
        }
      }
    }
    self.written += done as u64;
    self.dropped += (bytes.len() - done) as u64;
  }

  fn close(&mut self) {
    self.file = None;
  }
}

/// A monitor's pipes and exit, handled on a reactor thread.
struct MonitorSink {
  log: Mutex<RawLog>,
  events: Mutex<mpsc::Sender<Event>>,
}

impl MonitorSink {
  fn send(&self, event: Event) {
    let _ = lock(&self.events).send(event);
  }
}

impl PipeHandler for MonitorSink {
  fn data(&self, _tag: u8, bytes: &[u8]) {
    lock(&self.log).append(bytes);
  }

  fn closed(&self, _tag: u8, error: Option<io::Error>) {
    if let Some(error) = error {
      eprintln!("taskstream keeper: reading a pipe failed: {error}");
    }
    self.send(Event::PipeClosed);
  }
}

impl ExitHandler for MonitorSink {
  fn exited(&self, status: io::Result<ExitStatus>) {
    self.send(Event::Exited(status.ok().map(ExitStatusInfo::from)));
  }
}

enum Run {
  Monitor {
    sink: Arc<MonitorSink>,
    reactor: Arc<Reactor>,
    pipes: [PipeKey; 2],
  },
  Shell(Arc<ShellRun>),
}

struct Keeper {
  config: KeeperConfig,
  files: TaskFiles,
  state_dir: PathBuf,
  pid: u32,
  group: ProcessGroup,
  run: Run,
  events: mpsc::Receiver<Event>,
  /// Every time the keeper reads (the real clock; see `pace.rs` for its decisions).
  clock: SharedClock,
  /// When the keeper started (the clock's wall ms).
  started: f64,
}

impl Keeper {
  /// Opens the output, spawns the task, writes the task record and answers
  /// `ok`. An error before the answer is the caller's `err` line.
  fn start(config: KeeperConfig, clock: SharedClock, started: f64) -> io::Result<Keeper> {
    check_task_id(&config.id)?;
    let state_dir = PathBuf::from(&config.state_dir);
    validate_state_dir(&state_dir)?;
    let files = TaskFiles::new(&state_dir, &config.id);
    // Left by an earlier task of this id that was never forgotten: a stale
    // cancel request would stop this one at once, a stale end or cursor
    // would mislead its host.
    for stale in [&files.cancel, &files.end, &files.cursor] {
      match std::fs::remove_file(stale) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
          return Err(io::Error::new(
            error.kind(),
            format!("cannot remove {}: {error}", stale.display()),
          ))
        }
      }
    }
    let output_path = match config.kind {
      TaskKind::Monitor => files.log.clone(),
      TaskKind::Shell => PathBuf::from(&config.output_path),
    };
    enum Output {
      Log(RawLog),
      Shell(Box<OutputWriter>),
    }
    let output = match config.kind {
      TaskKind::Monitor => Output::Log(RawLog::create(&output_path, config.max_output_bytes)?),
      TaskKind::Shell => Output::Shell(Box::new(OutputWriter::create(
        &output_path,
        config.max_output_bytes,
      )?)),
    };
    let request = SpawnRequest {
      program: PathBuf::from(&config.program),
      args: config.args.clone(),
      cwd: PathBuf::from(&config.cwd),
      env: config
        .env
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect(),
      task_tag: config.task_tag.clone(),
      terminal: None,
      limits: None,
    };
    let spawned = process::spawn(request)?;
    let pid = spawned.pid;
    let group = spawned.group.clone();
    let (sender, events) = mpsc::channel();
    let run = match output {
      Output::Log(log) => start_monitor(spawned, log, sender),
      Output::Shell(writer) => {
        let settled = Mutex::new(sender);
        ShellRun::start(
          spawned,
          *writer,
          Box::new(move |outcome| {
            let _ = lock(&settled).send(Event::Settled(outcome));
          }),
        )
        .map(Run::Shell)
      }
    };
    let run = run.inspect_err(|_| kill_now(&group))?;
    let me = std::process::id();
    let record = TaskRecord {
      version: RECORD_VERSION,
      kind: config.kind,
      id: config.id.clone(),
      command: config.command.clone(),
      description: config.description.clone(),
      cwd: config.cwd.clone(),
      start_time: config.start_time,
      lease_ms: config.lease_ms,
      output_path: output_path.to_string_lossy().into_owned(),
      status_path: config.status_path.clone(),
      max_output_bytes: config.max_output_bytes,
      options: config.options.clone(),
      keeper: ProcessIdentity {
        pid: me,
        start_time: proc_table::start_time(me),
        tag: std::env::var(KEEPER_TAG_VAR).unwrap_or_default(),
      },
      task: platform::task_process(pid, &group),
    };
    let written = write_record(&files.task, &record)
      .and_then(|()| crate::persist::records::render_record(&record));
    let line = match written {
      Ok(line) => line,
      Err(error) => {
        kill_now(&group);
        return Err(io::Error::new(
          error.kind(),
          format!("cannot write {}: {error}", files.task.display()),
        ));
      }
    };
    answer(&format!("ok {}", line.trim_end()));
    eprintln!(
      "taskstream keeper {me}: task {} runs as pid {pid} (answered {:.1} ms after the keeper started)",
      config.id,
      clock.wall_ms() - started
    );
    Ok(Keeper {
      config,
      files,
      state_dir,
      pid,
      group,
      run,
      events,
      clock,
      started,
    })
  }

  /// The loop: until the task finished (or a stop gave up waiting), then
  /// the end record. Returns the exit code.
  fn run(self) -> i32 {
    let mut lease_seen = self.started;
    let mut exit: Option<Option<ExitStatusInfo>> = None;
    let mut pace = Pace::default();
    let mut pipes_open = 2u8;
    let mut outcome: Option<ShellOutcome> = None;
    let mut stop: Option<TaskEnd> = None;
    loop {
      match self.events.recv_timeout(STEP) {
        Ok(event) => {
          let mut next = Some(event);
          while let Some(event) = next {
            match event {
              Event::Exited(status) => {
                exit = Some(status);
                pace.exited(self.clock.mono_ms());
              }
              Event::PipeClosed => pipes_open = pipes_open.saturating_sub(1),
              Event::Settled(settled) => outcome = Some(settled),
            }
            next = self.events.try_recv().ok();
          }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {}
        // Nothing more can come (a shell run that will never settle): the
        // checks below still run, at the same pace.
        Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(STEP),
      }
      let finished = match &self.run {
        Run::Shell(_) => outcome.is_some(),
        Run::Monitor { .. } => pace.monitor_finished(self.clock.mono_ms(), pipes_open),
      };
      if finished {
        break;
      }
      if stop.is_none() {
        if let Some(end) = self.stop_requested(&mut lease_seen) {
          eprintln!(
            "taskstream keeper {}: stopping the task: {} {}",
            std::process::id(),
            end.reason_str(),
            end.detail.as_deref().or(end.via_str()).unwrap_or("")
          );
          self.stop(&end);
          stop = Some(end);
          pace.stopped(self.clock.mono_ms());
        }
      } else {
        match pace.after_stop(self.clock.mono_ms()) {
          AfterStop::Wait => {}
          AfterStop::KillAgain => kill_now(&self.group),
          AfterStop::GiveUp => {
            eprintln!(
              "taskstream keeper: the stopped task did not finish; recording its end anyway"
            );
            break;
          }
        }
      }
    }
    self.finish(exit.flatten(), outcome, stop)
  }

  /// A signal, a cancel request or an expired lease: the end to record.
  fn stop_requested(&self, lease_seen: &mut f64) -> Option<TaskEnd> {
    if let Some(signal) = platform::received_signal() {
      return Some(TaskEnd {
        detail: Some(format!("keeper received {signal}")),
        ..TaskEnd::host_exit()
      });
    }
    if let Some(request) = read_cancel(&self.files.cancel) {
      return Some(TaskEnd::cancelled(request.via));
    }
    if let Some(renewed) = last_renewal(&self.state_dir) {
      *lease_seen = lease_seen.max(wall_ms(renewed));
    }
    if lease_expired(self.clock.wall_ms(), *lease_seen, self.config.lease_ms) {
      return Some(TaskEnd {
        detail: Some(format!("lease of {} ms expired", self.config.lease_ms)),
        ..TaskEnd::host_exit()
      });
    }
    None
  }

  /// Ends the whole tree: SIGTERM, SIGKILL 200 ms later, tag scan, cgroup.
  fn stop(&self, end: &TaskEnd) {
    match &self.run {
      Run::Shell(run) => {
        run.cancel_via(end.via.unwrap_or(EndVia::Cancel));
        run.cancel();
      }
      Run::Monitor { .. } => terminate(&self.group),
    }
  }

  /// Closes the output, makes sure the tree is gone, writes the shell's
  /// final sidecar and, last, the end record.
  fn finish(
    self,
    exit: Option<ExitStatusInfo>,
    outcome: Option<ShellOutcome>,
    stop: Option<TaskEnd>,
  ) -> i32 {
    let (output_bytes, dropped_bytes) = match &self.run {
      Run::Monitor {
        sink,
        reactor,
        pipes,
      } => {
        for key in pipes {
          reactor.close_pipe(*key);
        }
        let mut log = lock(&sink.log);
        log.close();
        (log.written, log.dropped)
      }
      Run::Shell(_) => outcome.as_ref().map_or((0, 0), |o| {
        (o.counters.bytes_written, o.counters.bytes_not_written)
      }),
    };
    self.end_tree();
    let exit = outcome.as_ref().map(|o| o.exit).or(exit);
    let end_time = self.clock.wall_ms() as u64;
    let end = match (&self.run, &stop, &outcome) {
      (_, Some(stop), _) => stop.clone(),
      (Run::Shell(_), None, Some(outcome)) => outcome.end(),
      _ => exit_end(exit),
    };
    if let Run::Shell(_) = &self.run {
      self.write_sidecar(outcome.as_ref(), &stop, &end, end_time);
    }
    let record = EndRecord {
      version: RECORD_VERSION,
      id: self.config.id.clone(),
      end_time,
      end,
      exit_code: exit.and_then(|e| e.code),
      output_bytes,
      dropped_bytes,
    };
    if let Err(error) = write_record(&self.files.end, &record) {
      eprintln!(
        "taskstream keeper: cannot write {}: {error}",
        self.files.end.display()
      );
      return 1;
    }
    eprintln!(
      "taskstream keeper {}: task {} ended: {}",
      std::process::id(),
      self.config.id,
      serde_json::to_string(&record.end).unwrap_or_default()
    );
    0
  }

  /// Waits until nothing of the tree is alive (whatever a task left behind
  /// dies with it, as for a host's own tasks): SIGTERM, then SIGKILL again
  /// every half second, for at most [`super::pace::STOP_DEADLINE_MS`].
  fn end_tree(&self) {
    if !tree_alive(&self.group) {
      return;
    }
    terminate(&self.group);
    let mut pace = Pace::default();
    pace.stopped_every(self.clock.mono_ms(), END_TREE_KILL_AGAIN_MS);
    while tree_alive(&self.group) {
      match pace.after_stop(self.clock.mono_ms()) {
        AfterStop::Wait => std::thread::sleep(Duration::from_millis(50)),
        AfterStop::KillAgain => kill_now(&self.group),
        AfterStop::GiveUp => return,
      }
    }
  }

  /// The shell's status sidecar with its end, as the registry writes it.
  fn write_sidecar(
    &self,
    outcome: Option<&ShellOutcome>,
    stop: &Option<TaskEnd>,
    end: &TaskEnd,
    end_time: u64,
  ) {
    let mut entry = ShellEntry {
      id: self.config.id.clone(),
      command: self.config.command.clone(),
      cwd: self.config.cwd.clone(),
      pid: Some(self.pid),
      status: ShellStatus::Running,
      exit_code: None,
      error: None,
      start_time: self.config.start_time as f64,
      end_time: None,
      output_path: self.config.output_path.clone(),
      notified: false,
      todo_work_chain_id: None,
      end: None,
      ending: stop.clone(),
    };
    let verdict = match (stop, outcome) {
      (Some(_), _) => ShellVerdict::Cancelled,
      (None, Some(outcome)) => outcome.verdict(),
      (None, None) => ShellVerdict::Failed("the keeper lost track of the task".to_owned()),
    };
    verdict.apply(&mut entry, end.clone(), end_time as f64);
    write_status_sidecar(&entry, std::process::id());
  }
}

/// How a leader's exit status reads as an end.
fn exit_end(exit: Option<ExitStatusInfo>) -> TaskEnd {
  match exit {
    Some(ExitStatusInfo {
      signal: Some(signal),
      ..
    }) => TaskEnd::signaled(&signal_name(signal)),
    Some(ExitStatusInfo { code, .. }) => TaskEnd::exited(code),
    None => TaskEnd::io_error("the task's exit could not be waited for"),
  }
}

fn start_monitor(
  spawned: SpawnedProcess,
  log: RawLog,
  sender: mpsc::Sender<Event>,
) -> io::Result<Run> {
  let SpawnedProcess {
    stdout,
    stderr,
    child,
    ..
  } = spawned;
  let sink = Arc::new(MonitorSink {
    log: Mutex::new(log),
    events: Mutex::new(sender),
  });
  let reactor = Reactor::pick()?;
  let pipes = [
    reactor.watch_pipe(stdout, 0, sink.clone()),
    reactor.watch_pipe(stderr, 1, sink.clone()),
  ];
  reactor.watch_exit(child, sink.clone())?;
  Ok(Run::Monitor {
    sink,
    reactor,
    pipes,
  })
}
