//! The pure half of the macOS process table (`proc_darwin_parse.rs`), run on
//! every Unix: `proc_bsdinfo` → `ProcStat`, and `KERN_PROCARGS2` buffers.

use super::super::proc_darwin_parse::{proc_stat, procargs2_env, procargs2_tags, BsdInfo, SZOMB};
use super::super::proc_table::ProcStat;

fn info(pid: u32, status: u32) -> BsdInfo {
  BsdInfo {
    pid,
    ppid: 1,
    pgid: pid,
    status,
    start_tvsec: 1_700_000_000,
    start_tvusec: 123_456,
  }
}

#[test]
fn bsdinfo_becomes_a_proc_stat() {
  let running = BsdInfo {
    ppid: 4000,
    pgid: 4001,
    ..info(4242, 2)
  };
  assert_eq!(
    proc_stat(4242, &running),
    Some(ProcStat {
      pid: 4242,
      ppid: 4000,
      pgid: 4001,
      start_time: 1_700_000_000_123_456,
      zombie: false,
    })
  );
  // SIDL (being forked), SSLEEP and SSTOP are alive; only SZOMB is a zombie.
  for status in [1, 3, 4] {
    assert!(!proc_stat(7, &info(7, status)).unwrap().zombie);
  }
  assert!(proc_stat(7, &info(7, SZOMB)).unwrap().zombie);
}

#[test]
fn bsdinfo_for_another_pid_is_refused() {
  assert_eq!(proc_stat(7, &info(8, 2)), None);
}

#[test]
fn start_times_order_by_microsecond_and_never_overflow() {
  let at = |sec, usec| {
    let info = BsdInfo {
      start_tvsec: sec,
      start_tvusec: usec,
      ..info(9, 2)
    };
    proc_stat(9, &info).unwrap().start_time
  };
  assert!(at(100, 999_999) < at(101, 0));
  assert!(at(100, 1) < at(100, 2));
  // A bogus microsecond count stays within its second.
  assert_eq!(at(100, 5_000_000), at(100, 999_999));
  assert_eq!(at(u64::MAX, 5), u64::MAX);
}

/// A `KERN_PROCARGS2` buffer as the kernel lays it out: argc, the exec path,
/// `padding` NULs, the arguments, the environment, then trailing NULs.
fn procargs(path: &str, padding: usize, args: &[&str], env: &[&str]) -> Vec<u8> {
  let mut buf = (args.len() as i32).to_ne_bytes().to_vec();
  buf.extend(path.as_bytes());
  buf.push(0);
  buf.extend(std::iter::repeat_n(0, padding));
  for s in args.iter().chain(env) {
    buf.extend(s.as_bytes());
    buf.push(0);
  }
  buf.extend([0; 8]);
  buf
}

#[test]
fn procargs2_env_skips_path_padding_and_arguments() {
  let buf = procargs(
    "/bin/sleep",
    5,
    &["sleep", "TASKSTREAM_TASK_ID=in-argv", "30"],
    &["PATH=/usr/bin", "TASKSTREAM_TASK_ID=abc", "TERM=dumb"],
  );
  let env: Vec<&[u8]> = procargs2_env(&buf);
  assert_eq!(
    env,
    [
      &b"PATH=/usr/bin"[..],
      b"TASKSTREAM_TASK_ID=abc",
      b"TERM=dumb"
    ]
  );
  // The argument that looks like a tag is not the environment.
  assert_eq!(procargs2_tags(&buf), ["abc"]);
}

#[test]
fn procargs2_finds_every_tag_and_only_exact_names() {
  let buf = procargs(
    "/bin/sh",
    0,
    &["sh"],
    &[
      "TASKSTREAM_TASK_ID=outer",
      "TASKSTREAM_TASK_IDX=no",
      "XTASKSTREAM_TASK_ID=no",
      "TASKSTREAM_TASK_ID",
      "TASKSTREAM_TASK_ID=inner",
    ],
  );
  assert_eq!(procargs2_tags(&buf), ["outer", "inner"]);
}

#[test]
fn procargs2_env_ends_at_the_first_empty_string() {
  // After the environment the kernel leaves NULs and its own strings.
  let mut buf = procargs("/bin/sh", 3, &["sh", "-c", "x"], &["A=1"]);
  buf.extend(b"TASKSTREAM_TASK_ID=apple-string\0");
  assert_eq!(procargs2_env(&buf), [&b"A=1"[..]]);
  assert!(procargs2_tags(&buf).is_empty());
  // No environment at all (another user's process can show only argv).
  let bare = procargs("/bin/sh", 2, &["sh"], &[]);
  assert!(procargs2_env(&bare).is_empty());
}

#[test]
fn procargs2_with_no_arguments() {
  let buf = procargs("/usr/libexec/x", 4, &[], &["TASKSTREAM_TASK_ID=t"]);
  assert_eq!(procargs2_tags(&buf), ["t"]);
}

#[test]
fn procargs2_drops_a_truncated_last_string() {
  let mut buf = (1i32).to_ne_bytes().to_vec();
  buf.extend(b"/bin/sh\0\0\0sh\0TASKSTREAM_TASK_ID=whole\0TASKSTREAM_TASK_ID=cut");
  assert_eq!(procargs2_tags(&buf), ["whole"]);
}

#[test]
fn malformed_procargs2_buffers_have_no_environment() {
  let with_argc = |argc: i32, rest: &[u8]| {
    let mut buf = argc.to_ne_bytes().to_vec();
    buf.extend(rest);
    buf
  };
  let cases: Vec<Vec<u8>> = vec![
    Vec::new(),
    vec![1, 0],
    // A negative argc.
    with_argc(-1, b"/bin/sh\0\0sh\0TASKSTREAM_TASK_ID=t\0"),
    // The exec path never ends.
    with_argc(0, b"/bin/sh"),
    // Nothing after the path.
    with_argc(0, b"/bin/sh\0\0\0\0"),
    // Fewer arguments than argc: the environment is not there.
    with_argc(3, b"/bin/sh\0\0sh\0TASKSTREAM_TASK_ID=t\0"),
    // A huge argc.
    with_argc(i32::MAX, b"/bin/sh\0\0sh\0TASKSTREAM_TASK_ID=t\0"),
  ];
  for buf in cases {
    assert!(procargs2_env(&buf).is_empty(), "{buf:?}");
    assert!(procargs2_tags(&buf).is_empty(), "{buf:?}");
  }
}

#[test]
fn procargs2_tags_that_are_not_utf8_are_skipped() {
  let mut buf = (1i32).to_ne_bytes().to_vec();
  buf.extend(b"/bin/sh\0\0sh\0TASKSTREAM_TASK_ID=\xff\xfe\0TASKSTREAM_TASK_ID=ok\0\0");
  assert_eq!(procargs2_tags(&buf), ["ok"]);
}
