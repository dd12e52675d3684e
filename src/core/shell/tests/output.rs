//! The output-file writer with real files (CONTRACT.md §2.15 step 8, §4
//! items 1, 2, 8, 9 and 24).

use std::fs;
use std::path::{Path, PathBuf};

use crate::shell::test_support::TempDir;
use crate::shell::*;

const BINARY_STDERR: &str =
  "[taskstream: binary output detected on stderr; further output from this stream is not written]";

fn writer(dir: &TempDir, max_output_bytes: u64) -> (OutputWriter, PathBuf) {
  let path = dir.path().join("shell-x.output");
  (
    OutputWriter::create(&path, max_output_bytes).expect("open output file"),
    path,
  )
}

fn read(path: &Path) -> String {
  fs::read_to_string(path).expect("read output file")
}

#[test]
fn output_is_visible_while_the_command_runs() {
  let dir = TempDir::new("visible");
  let (mut w, path) = writer(&dir, DEFAULT_MAX_OUTPUT_BYTES);
  w.write(Stream::Stdout, b"line one\n");
  assert_eq!(read(&path), "line one\n");
  w.write(Stream::Stderr, b"err\n");
  assert_eq!(read(&path), "line one\nerr\n");
}

#[test]
fn ansi_and_utf8_split_across_reads_come_out_whole() {
  let dir = TempDir::new("split");
  let (mut w, path) = writer(&dir, DEFAULT_MAX_OUTPUT_BYTES);
  let hello = "你好\n".as_bytes();
  w.write(Stream::Stdout, b"a\x1b[3");
  w.write(Stream::Stderr, &hello[..2]);
  w.write(Stream::Stdout, b"1mred\x1b[0m\n");
  w.write(Stream::Stderr, &hello[2..]);
  w.finish();
  assert_eq!(read(&path), "ared\n你好\n");
  let c = w.counters();
  assert_eq!((c.bytes_read, c.bytes_written), (21, 12));
  assert_eq!((c.bytes_not_written, c.binary_detected), (0, false));
}

#[test]
fn finish_turns_an_incomplete_sequence_into_one_replacement() {
  let dir = TempDir::new("finish");
  let (mut w, path) = writer(&dir, DEFAULT_MAX_OUTPUT_BYTES);
  w.write(Stream::Stdout, b"end \xE2");
  w.finish();
  assert_eq!(read(&path), "end \u{FFFD}");
  w.write(Stream::Stdout, b"late");
  assert_eq!(w.counters().bytes_not_written, 4);
}

#[test]
fn an_unterminated_osc_at_the_end_is_written_as_strip_ansi_resolves_it() {
  // `printf '\033]0;'; seq 1 100` (CONTRACT.md §3.17): the OSC is held while a
  // terminator may still come, and released as unterminated at the end, so
  // the file holds `stripAnsi` of the whole output, not nothing.
  let mut output = String::from("\x1b]0;");
  for n in 1..=100 {
    output.push_str(&format!("{n}\n"));
  }
  let expected = crate::text::strip_ansi(&output);
  // `ESC ] 0 ; 1` goes as a short CSI-style match (the last digit is its final).
  assert!(expected.starts_with("\n2\n3\n") && expected.ends_with("\n100\n"));
  for cut in [0, 1, 3, 4, 50, output.len()] {
    let dir = TempDir::new("osc-end");
    let (mut w, path) = writer(&dir, DEFAULT_MAX_OUTPUT_BYTES);
    w.write(Stream::Stdout, &output.as_bytes()[..cut]);
    w.write(Stream::Stdout, &output.as_bytes()[cut..]);
    w.finish();
    assert_eq!(read(&path), expected, "cut at {cut}");
  }
}

#[test]
fn binary_on_stderr_stops_only_stderr() {
  let dir = TempDir::new("binary");
  let (mut w, path) = writer(&dir, DEFAULT_MAX_OUTPUT_BYTES);
  w.write(Stream::Stdout, b"text1\n");
  w.write(Stream::Stderr, b"err");
  w.write(Stream::Stderr, b"bin\x00ary");
  w.write(Stream::Stdout, b"text2\n");
  w.write(Stream::Stderr, b"more\n\x00");
  w.finish();
  assert_eq!(read(&path), format!("text1\nerr\n{BINARY_STDERR}\ntext2\n"));
  let c = w.counters();
  assert!(c.binary_detected);
  assert_eq!((c.bytes_written, c.bytes_not_written), (15, 13));
  assert_eq!(c.bytes_read, 28);
}

#[test]
fn a_nul_anywhere_in_the_first_4096_bytes_is_binary() {
  let dir = TempDir::new("sniff");
  let (mut w, path) = writer(&dir, DEFAULT_MAX_OUTPUT_BYTES);
  w.write(Stream::Stdout, &[b'a'; 600]);
  let mut late_nul = vec![b'b'; 3000];
  late_nul[2900] = 0;
  w.write(Stream::Stdout, &late_nul);
  w.finish();
  let expected = format!(
    "{}\n{}\n",
    "a".repeat(600),
    BINARY_STDERR.replace("stderr", "stdout")
  );
  assert_eq!(read(&path), expected);
  assert_eq!(w.counters().bytes_not_written, 3000);
}

#[test]
fn a_nul_after_the_first_4096_bytes_is_text() {
  let dir = TempDir::new("sniff-late");
  let (mut w, path) = writer(&dir, DEFAULT_MAX_OUTPUT_BYTES);
  w.write(Stream::Stdout, &[b'a'; MAX_SNIFF_SIZE]);
  w.write(Stream::Stdout, b"\x00z\n");
  w.write(Stream::Stderr, b"\x00");
  w.finish();
  assert_eq!(
    read(&path),
    format!("{}\0z\n{BINARY_STDERR}\n", "a".repeat(4096))
  );
  let c = w.counters();
  assert!(c.binary_detected, "stderr's own window");
  assert_eq!((c.bytes_written, c.bytes_not_written), (4099, 1));
}

#[test]
fn cap_cuts_at_a_char_boundary_then_marks_once() {
  let dir = TempDir::new("cap");
  let (mut w, path) = writer(&dir, 5);
  w.write(Stream::Stdout, "abcd€xyz".as_bytes());
  w.write(Stream::Stderr, b"more\n");
  w.finish();
  assert_eq!(
    read(&path),
    "abcd\n[taskstream: output limit of 5 bytes reached; further output is counted but not written]\n"
  );
  let c = w.counters();
  assert_eq!(
    (c.bytes_read, c.bytes_written, c.bytes_not_written),
    (15, 4, 11)
  );
}

#[test]
fn output_exactly_at_the_cap_is_kept_whole() {
  let dir = TempDir::new("cap-exact");
  let (mut w, path) = writer(&dir, 6);
  w.write(Stream::Stdout, b"12345\n");
  w.finish();
  assert_eq!(read(&path), "12345\n");
  assert_eq!(w.counters().bytes_not_written, 0);
}

#[cfg(target_os = "linux")]
#[test]
fn a_write_error_is_recorded_and_writing_stops() {
  let mut w = OutputWriter::create(Path::new("/dev/full"), DEFAULT_MAX_OUTPUT_BYTES).unwrap();
  w.write(Stream::Stdout, b"hello\n");
  w.write(Stream::Stderr, b"world\n");
  w.finish();
  let c = w.counters();
  let error = c.write_error.expect("write error recorded");
  assert!(error.contains("No space left on device"), "{error}");
  assert_eq!((c.bytes_written, c.bytes_not_written), (0, 12));
}

/// A 64 KiB tmpfs mounted on a fresh directory (we run as root), unmounted
/// on drop.
#[cfg(target_os = "linux")]
struct TinyTmpfs(TempDir);

#[cfg(target_os = "linux")]
impl TinyTmpfs {
  fn mount(label: &str) -> Self {
    let dir = TempDir::new(label);
    let status = std::process::Command::new("mount")
      .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
      .arg(dir.path())
      .status()
      .expect("run mount");
    assert!(status.success(), "mount a 64 KiB tmpfs: {status}");
    Self(dir)
  }
}

#[cfg(target_os = "linux")]
impl Drop for TinyTmpfs {
  fn drop(&mut self) {
    let _ = std::process::Command::new("umount")
      .arg(self.0.path())
      .status();
  }
}

#[cfg(target_os = "linux")]
#[test]
fn bytes_that_reached_a_filling_disk_count_as_written() {
  let disk = TinyTmpfs::mount("enospc");
  let path = disk.0.path().join("shell-x.output");
  let mut w = OutputWriter::create(&path, DEFAULT_MAX_OUTPUT_BYTES).unwrap();
  w.write(Stream::Stdout, &[b'x'; 100_000]);
  w.write(Stream::Stdout, b"more\n");
  w.finish();
  let c = w.counters();
  let error = c.write_error.expect("write error recorded");
  assert!(error.contains("No space left on device"), "{error}");
  let on_disk = fs::metadata(&path).unwrap().len();
  assert!(on_disk > 0);
  assert_eq!(c.bytes_written, on_disk);
  assert_eq!(c.bytes_written + c.bytes_not_written, c.bytes_read);
}

/// The error `OutputWriter::create` gives for `path`.
fn open_error(path: &Path) -> String {
  match OutputWriter::create(path, 100) {
    Ok(_) => panic!("{} opened", path.display()),
    Err(error) => error.to_string(),
  }
}

#[test]
fn an_unopenable_file_is_an_error_naming_the_path() {
  let dir = TempDir::new("unopenable");
  let path = dir.path().join("missing/x.output");
  // The OS's own text for a missing directory (Windows: "Path not found. (os error 3)").
  let missing = if cfg!(unix) {
    "No such file or directory (os error 2)".to_owned()
  } else {
    fs::File::open(&path).unwrap_err().to_string()
  };
  assert_eq!(
    open_error(&path),
    format!("Cannot open output file {}: {missing}", path.display())
  );
}

#[cfg(unix)]
#[test]
fn a_directory_or_fifo_at_the_path_is_refused_without_blocking() {
  use std::os::unix::fs::OpenOptionsExt;
  let dir = TempDir::new("not-a-file");
  let sub = dir.path().join("sub.output");
  fs::create_dir(&sub).unwrap();
  assert!(open_error(&sub).ends_with(": Is a directory (os error 21)"));

  let fifo = dir.path().join("fifo.output");
  nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
  let no_reader = open_error(&fifo);
  assert!(
    no_reader.ends_with(": No such device or address (os error 6)"),
    "{no_reader}"
  );
  let _reader = fs::OpenOptions::new()
    .read(true)
    .custom_flags(libc::O_NONBLOCK)
    .open(&fifo)
    .unwrap();
  assert_eq!(
    open_error(&fifo),
    format!(
      "Cannot open output file {}: not a regular file",
      fifo.display()
    )
  );
}

#[cfg(unix)]
#[test]
fn output_file_is_private_truncated_and_never_a_symlink_target() {
  use std::os::unix::fs::{symlink, PermissionsExt};
  let dir = TempDir::new("private");
  let path = dir.file("shell-x.output", b"stale content");
  fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
  let mut w = OutputWriter::create(&path, 100).unwrap();
  w.write(Stream::Stdout, b"new\n");
  w.finish();
  assert_eq!(read(&path), "new\n");
  assert_eq!(
    fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
    0o600
  );

  let secret = dir.file("secret", b"keep");
  let link = dir.path().join("link.output");
  symlink(&secret, &link).unwrap();
  assert!(open_error(&link).ends_with(": Too many levels of symbolic links (os error 40)"));
  assert_eq!(read(&secret), "keep");
}

/// A restart's next run (API.md §6.8): the file keeps the old run's output, the marker follows
/// on a line of its own (a partial last line is ended first), and the counters and the cap go
/// on from the old run's.
#[test]
fn a_resumed_file_keeps_its_output_and_goes_on_after_the_marker() {
  let dir = TempDir::new("resume");
  let (mut first, path) = writer(&dir, 20);
  first.write(Stream::Stdout, b"run 1\npartial");
  first.finish();
  let before = first.counters();
  assert_eq!(before.bytes_written, 13);

  let resume = Resume::at(before.clone(), 0.0);
  assert_eq!(
    resume.marker,
    "[taskstream: restarted at 1970-01-01T00:00:00.000Z]"
  );
  let mut second = OutputWriter::resume(&path, 20, &resume.before, &resume.marker).unwrap();
  second.write(Stream::Stdout, b"run 2\nrun 2 again\n");
  second.finish();
  assert_eq!(
    read(&path),
    "run 1\npartial\n[taskstream: restarted at 1970-01-01T00:00:00.000Z]\nrun 2\nr\n\
     [taskstream: output limit of 20 bytes reached; further output is counted but not written]\n"
  );
  let after = second.counters();
  assert_eq!(after.bytes_read, before.bytes_read + 18);
  assert_eq!(after.bytes_written, 20);
  assert_eq!(after.bytes_not_written, 11);
}

#[test]
fn a_file_resumed_at_its_cap_writes_the_marker_and_counts_the_rest() {
  let dir = TempDir::new("resume-full");
  let (mut first, path) = writer(&dir, 4);
  first.write(Stream::Stdout, b"abcdef\n");
  first.finish();
  let before = first.counters();
  let mut second = OutputWriter::resume(&path, 4, &before, "[m]").unwrap();
  second.write(Stream::Stdout, b"more\n");
  second.finish();
  let text = read(&path);
  assert!(text.ends_with("abcd\n[taskstream: output limit of 4 bytes reached; further output is counted but not written]\n[m]\n"), "{text}");
  assert_eq!(second.counters().bytes_written, 4);
  assert_eq!(
    second.counters().bytes_not_written,
    before.bytes_not_written + 5
  );
}

#[test]
fn a_missing_file_is_created_on_resume() {
  let dir = TempDir::new("resume-missing");
  let path = dir.path().join("shell-gone.output");
  let mut w = OutputWriter::resume(&path, 100, &OutputCounters::default(), "[m]").unwrap();
  w.write(Stream::Stdout, b"x\n");
  w.finish();
  assert_eq!(read(&path), "[m]\nx\n");
}
