//! `limits` on Linux (API.md §6.8): the task's tree in cgroups that carry its limits.
//!
//! Two ways, chosen once per host by what it offers, cgroup v2 first:
//! * **v2**: the task's own cgroup (cgroup.rs) holds the limits. The host's cgroup must
//!   delegate the `memory`, `cpu` and `pids` controllers a limit needs (they are in the
//!   `cgroup.controllers` of taskstream's base directory); they are enabled in the base's
//!   `cgroup.subtree_control`. Files: `memory.max`, `memory.swap.max` 0, `cpu.max`, `pids.max`;
//!   a memory kill is `oom_kill` in `memory.events`; usage from `cpu.stat` and `memory.peak`.
//! * **v1** (hosts that mount the controllers as v1 hierarchies, like this project's CI VM):
//!   one directory per hierarchy, `<mount>/<the host's path>/taskstream-<host pid>/<task tag>`,
//!   beside the v2 containment cgroup. Files: `memory.limit_in_bytes` and
//!   `memory.memsw.limit_in_bytes` (swap off), `cpu.cfs_quota_us` over a 100 ms
//!   `cpu.cfs_period_us`, `pids.max`; a memory kill is `oom_kill` in `memory.oom_control`; usage
//!   from `cpuacct.usage` and `memory.max_usage_in_bytes`.
//!
//! The child enters every one of them itself, in `pre_exec`, before it can fork; a failed
//! entry fails the spawn (never a task without its limits). The directories are removed with
//! the task's cgroup when its tree is forgotten (tracker.rs); a crashed host's empty v1
//! directories are swept by the next host that uses limits.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use once_cell::sync::Lazy;

use crate::process::limits::{LimitDirs, Limits, Usage, V1Dirs};

/// The controllers a limit needs, by its field.
const MEMORY: &str = "memory";
const CPU: &str = "cpu";
const CPUACCT: &str = "cpuacct";
const PIDS: &str = "pids";
/// `cpu.max` and `cpu.cfs_period_us`: a 100 ms period.
const CPU_PERIOD_US: u64 = 100_000;

/// What this host offers, found once.
enum Mode {
  V2,
  V1(V1Bases),
}

/// The v1 base directory of each hierarchy this host could write to.
#[derive(Default)]
struct V1Bases {
  memory: Option<PathBuf>,
  cpu: Option<PathBuf>,
  cpuacct: Option<PathBuf>,
  pids: Option<PathBuf>,
}

impl V1Bases {
  fn get(&self, controller: &str) -> Option<&PathBuf> {
    match controller {
      MEMORY => self.memory.as_ref(),
      CPU => self.cpu.as_ref(),
      CPUACCT => self.cpuacct.as_ref(),
      PIDS => self.pids.as_ref(),
      _ => None,
    }
  }
}

/// The v2 controllers enabled under the base (when the host delegates them), and the v1 bases.
struct Offer {
  v2: Option<(PathBuf, Vec<String>)>,
  v1: V1Bases,
  v1_why: String,
}

static OFFER: Lazy<Offer> = Lazy::new(find_offer);

fn find_offer() -> Offer {
  let v2 = super::cgroup::base().map(|base| (base.to_owned(), enable_v2_controllers(base)));
  let (v1, v1_why) = find_v1_bases();
  Offer { v2, v1, v1_why }
}

/// Enables what the base may have of memory, cpu and pids; returns what is enabled then.
fn enable_v2_controllers(base: &Path) -> Vec<String> {
  let available = fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
  for controller in [MEMORY, CPU, PIDS] {
    if available.split_whitespace().any(|c| c == controller) {
      let _ = fs::write(
        base.join("cgroup.subtree_control"),
        format!("+{controller}"),
      );
    }
  }
  fs::read_to_string(base.join("cgroup.subtree_control"))
    .unwrap_or_default()
    .split_whitespace()
    .map(str::to_owned)
    .collect()
}

/// The controllers `limits` needs.
fn needed(limits: &Limits) -> Vec<&'static str> {
  let mut needed = Vec::new();
  if limits.memory_bytes.is_some() {
    needed.push(MEMORY);
  }
  if limits.cpu_percent.is_some() {
    needed.push(CPU);
  }
  if limits.max_processes.is_some() {
    needed.push(PIDS);
  }
  needed
}

/// The way `limits` are enforced on this host, or why they cannot be.
fn mode_for(limits: &Limits) -> Result<Mode, String> {
  let offer = &*OFFER;
  let needed = needed(limits);
  let v2_missing: Vec<&str> = match &offer.v2 {
    Some((_, enabled)) => needed
      .iter()
      .copied()
      .filter(|c| !enabled.iter().any(|e| e == c))
      .collect(),
    None => needed.clone(),
  };
  if offer.v2.is_some() && v2_missing.is_empty() {
    return Ok(Mode::V2);
  }
  let v1_missing: Vec<&str> = needed
    .iter()
    .copied()
    .filter(|c| offer.v1.get(c).is_none())
    .collect();
  if v1_missing.is_empty() {
    return Ok(Mode::V1(V1Bases {
      memory: offer.v1.memory.clone(),
      cpu: offer.v1.cpu.clone(),
      cpuacct: offer.v1.cpuacct.clone(),
      pids: offer.v1.pids.clone(),
    }));
  }
  let v2_why = match &offer.v2 {
    Some((base, _)) => format!(
      "the cgroup v2 directory {} is not given the {} controller{} by the host's cgroup",
      base.display(),
      v2_missing.join(", "),
      if v2_missing.len() == 1 { "" } else { "s" }
    ),
    None => "there is no writable cgroup v2 directory for this process (or TASKSTREAM_CGROUP=0)"
      .to_owned(),
  };
  Err(format!(
    "limits cannot be enforced on this host: {v2_why}, and {} (cgroup v1: {})",
    if v1_missing.len() == needed.len() {
      "no cgroup v1 hierarchy offers them either".to_owned()
    } else {
      format!(
        "no writable cgroup v1 hierarchy has {}",
        v1_missing.join(", ")
      )
    },
    offer.v1_why
  ))
}

pub fn check_supported(limits: &Limits) -> Result<(), String> {
  mode_for(limits).map(|_| ())
}

/// Creates the limits' directories for the task `tag` (`task_cgroup`: its v2 cgroup, where it
/// has one) and writes the limits into them; nothing is left behind on an error.
pub fn create(limits: &Limits, tag: &str, task_cgroup: Option<&Path>) -> io::Result<LimitDirs> {
  match mode_for(limits).map_err(io::Error::other)? {
    Mode::V2 => {
      let dir = task_cgroup.ok_or_else(|| {
        io::Error::other("limits cannot be enforced: the task's cgroup could not be created")
      })?;
      write_v2(dir, limits)?;
      Ok(LimitDirs::V2(dir.to_owned()))
    }
    Mode::V1(bases) => {
      let mut dirs = V1Dirs::default();
      let result = (|| {
        for (controller, slot) in [
          (MEMORY, &mut dirs.memory),
          (CPU, &mut dirs.cpu),
          (CPUACCT, &mut dirs.cpuacct),
          (PIDS, &mut dirs.pids),
        ] {
          let wanted = match controller {
            CPU => limits.cpu_percent.is_some(),
            PIDS => limits.max_processes.is_some(),
            _ => true,
          };
          if let (true, Some(base)) = (wanted, bases.get(controller)) {
            let dir = base.join(tag);
            match fs::create_dir(&dir) {
              Ok(()) => {}
              // `cpu,cpuacct` mounted together: one directory for both.
              Err(e) if e.kind() == io::ErrorKind::AlreadyExists && controller == CPUACCT => {}
              Err(e) => return Err(context(e, &dir)),
            }
            *slot = Some(dir);
          }
        }
        write_v1(&dirs, limits)
      })();
      match result {
        Ok(()) => Ok(LimitDirs::V1(dirs)),
        Err(error) => {
          remove(&LimitDirs::V1(dirs));
          Err(error)
        }
      }
    }
  }
}

fn context(error: io::Error, path: &Path) -> io::Error {
  io::Error::new(error.kind(), format!("limits: {}: {error}", path.display()))
}

fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
  let path = dir.join(file);
  fs::write(&path, value).map_err(|e| context(e, &path))
}

fn write_v2(dir: &Path, limits: &Limits) -> io::Result<()> {
  if let Some(bytes) = limits.memory_bytes {
    write(dir, "memory.max", &bytes.to_string())?;
    // No swap for the task: past its memory it is killed, not paged out.
    if dir.join("memory.swap.max").exists() {
      write(dir, "memory.swap.max", "0")?;
    }
  }
  if let Some(percent) = limits.cpu_percent {
    write(
      dir,
      "cpu.max",
      &format!("{} {CPU_PERIOD_US}", cpu_quota_us(percent)),
    )?;
  }
  if let Some(max) = limits.max_processes {
    write(dir, "pids.max", &max.to_string())?;
  }
  Ok(())
}

fn write_v1(dirs: &V1Dirs, limits: &Limits) -> io::Result<()> {
  if let (Some(bytes), Some(dir)) = (limits.memory_bytes, &dirs.memory) {
    write(dir, "memory.limit_in_bytes", &bytes.to_string())?;
    // memsw (memory and swap) is at least the memory limit: equal means no swap.
    if dir.join("memory.memsw.limit_in_bytes").exists() {
      write(dir, "memory.memsw.limit_in_bytes", &bytes.to_string())?;
    }
  }
  if let (Some(percent), Some(dir)) = (limits.cpu_percent, &dirs.cpu) {
    write(dir, "cpu.cfs_period_us", &CPU_PERIOD_US.to_string())?;
    write(dir, "cpu.cfs_quota_us", &cpu_quota_us(percent).to_string())?;
  }
  if let (Some(max), Some(dir)) = (limits.max_processes, &dirs.pids) {
    write(dir, "pids.max", &max.to_string())?;
  }
  Ok(())
}

/// The CPU time per 100 ms period that `percent` of one core is (at least 1 ms, the kernel's
/// smallest quota).
pub(crate) fn cpu_quota_us(percent: u32) -> u64 {
  (u64::from(percent) * CPU_PERIOD_US / 100).max(1_000)
}

/// The `cgroup.procs` files the child writes itself into, each opened now (before the fork).
pub fn procs_files(dirs: &LimitDirs) -> io::Result<Vec<File>> {
  let paths: Vec<PathBuf> = match dirs {
    LimitDirs::V2(dir) => vec![dir.join("cgroup.procs")],
    LimitDirs::V1(v1) => v1.all().iter().map(|d| d.join("cgroup.procs")).collect(),
  };
  paths
    .iter()
    .map(|path| {
      OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| context(e, path))
    })
    .collect()
}

/// Whether the kernel killed a process of the tree for its memory limit.
pub fn memory_limit_hit(dirs: &LimitDirs) -> bool {
  let (dir, file) = match dirs {
    LimitDirs::V2(dir) => (dir.as_path(), "memory.events"),
    LimitDirs::V1(V1Dirs {
      memory: Some(dir), ..
    }) => (dir.as_path(), "memory.oom_control"),
    LimitDirs::V1(_) => return false,
  };
  fs::read_to_string(dir.join(file))
    .ok()
    .and_then(|text| keyed_value(&text, "oom_kill"))
    .is_some_and(|kills| kills > 0)
}

/// CPU time and peak memory of the tree so far.
pub fn usage(dirs: &LimitDirs) -> Usage {
  let read = |dir: &Path, file: &str| fs::read_to_string(dir.join(file)).ok();
  match dirs {
    LimitDirs::V2(dir) => Usage {
      cpu_ms: read(dir, "cpu.stat")
        .and_then(|text| keyed_value(&text, "usage_usec"))
        .map(|us| us / 1000),
      peak_memory_bytes: read(dir, "memory.peak").and_then(|text| text.trim().parse().ok()),
    },
    LimitDirs::V1(v1) => Usage {
      cpu_ms: v1
        .cpuacct
        .as_deref()
        .and_then(|dir| read(dir, "cpuacct.usage"))
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(|ns| ns / 1_000_000),
      peak_memory_bytes: v1
        .memory
        .as_deref()
        .and_then(|dir| read(dir, "memory.max_usage_in_bytes"))
        .and_then(|text| text.trim().parse().ok()),
    },
  }
}

/// Removes the v1 directories (a v2 task cgroup is removed with the containment).
pub fn remove(dirs: &LimitDirs) {
  if let LimitDirs::V1(v1) = dirs {
    for dir in v1.all() {
      let _ = fs::remove_dir(dir);
    }
  }
}

/// The value of `key` in a flat-keyed cgroup file (`key value` lines).
pub(crate) fn keyed_value(text: &str, key: &str) -> Option<u64> {
  text.lines().find_map(|line| {
    let (name, value) = line.trim().split_once(' ')?;
    (name == key).then(|| value.trim().parse().ok())?
  })
}

/// The v1 hierarchies: for each controller, the mount whose super options name it and the
/// host's path in it (`/proc/self/cgroup`), with `taskstream-<pid>` made there.
fn find_v1_bases() -> (V1Bases, String) {
  if std::env::var_os(super::cgroup::CGROUP_ENV).is_some_and(|v| v == "0") {
    return (V1Bases::default(), "TASKSTREAM_CGROUP=0".to_owned());
  }
  let (Ok(cgroups), Ok(mounts)) = (
    fs::read_to_string("/proc/self/cgroup"),
    fs::read_to_string("/proc/self/mountinfo"),
  ) else {
    return (V1Bases::default(), "no /proc/self/cgroup".to_owned());
  };
  let mut bases = V1Bases::default();
  let mut why = Vec::new();
  for controller in [MEMORY, CPU, CPUACCT, PIDS] {
    let Some((mount, own)) = v1_location(&cgroups, &mounts, controller) else {
      why.push(format!("{controller} not mounted"));
      continue;
    };
    let parent = mount.join(own.trim_start_matches('/'));
    sweep_stale(&parent);
    let base = parent.join(format!("taskstream-{}", std::process::id()));
    match fs::create_dir(&base) {
      Ok(()) => {}
      Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
      Err(e) => {
        why.push(format!("{}: {e}", base.display()));
        continue;
      }
    }
    let slot = match controller {
      MEMORY => &mut bases.memory,
      CPU => &mut bases.cpu,
      CPUACCT => &mut bases.cpuacct,
      _ => &mut bases.pids,
    };
    *slot = Some(base);
  }
  let why = if why.is_empty() {
    "every hierarchy writable".to_owned()
  } else {
    why.join("; ")
  };
  (bases, why)
}

/// The mount point of the v1 hierarchy of `controller` and the host's path in it.
pub(crate) fn v1_location(
  cgroups: &str,
  mountinfo: &str,
  controller: &str,
) -> Option<(PathBuf, String)> {
  let own = cgroups.lines().find_map(|line| {
    let mut fields = line.splitn(3, ':');
    let (_id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
    controllers
      .split(',')
      .any(|c| c == controller)
      .then(|| path.to_owned())
  })?;
  let mount = mountinfo.lines().find_map(|line| {
    let (fields, rest) = line.split_once(" - ")?;
    let mut rest = rest.split(' ');
    let (fstype, _source, options) = (rest.next()?, rest.next()?, rest.next()?);
    if fstype != "cgroup" || !options.split(',').any(|o| o == controller) {
      return None;
    }
    fields.split(' ').nth(4).map(PathBuf::from)
  })?;
  Some((mount, own))
}

/// Removes the empty `taskstream-<pid>` directories of hosts that are gone (a crash leaves
/// them; a normal exit's tasks remove their own, the base stays until swept).
fn sweep_stale(parent: &Path) {
  let Ok(entries) = fs::read_dir(parent) else {
    return;
  };
  for entry in entries.flatten() {
    let name = entry.file_name();
    let Some(pid) = name
      .to_str()
      .and_then(|n| n.strip_prefix("taskstream-"))
      .and_then(|p| p.parse::<i32>().ok())
    else {
      continue;
    };
    if pid as u32 == std::process::id() || pid_alive(pid) {
      continue;
    }
    if let Ok(tasks) = fs::read_dir(entry.path()) {
      for task in tasks.flatten() {
        if task.path().is_dir() {
          let _ = fs::remove_dir(task.path());
        }
      }
    }
    let _ = fs::remove_dir(entry.path());
  }
}

fn pid_alive(pid: i32) -> bool {
  // SAFETY: signal 0 only checks that the pid exists.
  unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}
