//! Writing a background shell's output file (CONTRACT.md §2.15 steps 4 and
//! 8, §4 items 1, 2, 8, 9 and 24): a per-stream binary sniff, per-stream
//! streaming UTF-8 decoding and ANSI stripping, then the capped file.

use std::io;
use std::path::Path;

use super::capped_file::CappedFile;
pub use crate::task::Stream;
use crate::text::{is_binary, CleanTextStream, FrameCollapser, FramePiece};

/// `MAX_SNIFF_SIZE` (CONTRACT.md §1.6): the first 4096 bytes of each stream
/// are checked for binary output.
pub const MAX_SNIFF_SIZE: usize = 4096;
/// The default `maxOutputBytes`: 1 GiB (CONTRACT.md §2.15 step 1).
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1 << 30;

/// Makes sure a shell's `outputDir` exists and this process may create files in it; the error
/// names the directory and the OS error.
pub fn check_output_dir(dir: &str) -> Result<(), String> {
  std::fs::create_dir_all(dir)
    .map_err(|e| format!("The \"outputDir\" directory {dir} cannot be created: {e}"))?;
  #[cfg(unix)]
  nix::unistd::access(
    dir,
    nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
  )
  .map_err(|e| format!("The \"outputDir\" directory {dir} is not writable: {e}"))?;
  Ok(())
}

/// The byte counts behind `BackgroundShellResult` (CONTRACT.md §2.15).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputCounters {
  /// Raw bytes read from both pipes.
  pub bytes_read: u64,
  /// Bytes of output written to the file, marker lines excluded.
  pub bytes_written: u64,
  /// Bytes counted but not written: past the cap, after binary was detected
  /// on their stream, or after a write error.
  pub bytes_not_written: u64,
  pub binary_detected: bool,
  /// The message of the write error that stopped writing.
  pub write_error: Option<String>,
}

/// One stream's text state: its sniff progress and its streaming decoders.
#[derive(Default)]
struct StreamText {
  /// Bytes of this stream sniffed so far (at most [`MAX_SNIFF_SIZE`]).
  sniffed: usize,
  binary: bool,
  text: CleanTextStream,
}

impl StreamText {
  /// `isBinary(window, 4096)` on this stream's first 4096 bytes, after each
  /// read. Earlier reads held no NUL, so checking the part of this read that
  /// falls inside the window gives the same answer. True when this read is
  /// the detecting one.
  fn detects_binary(&mut self, bytes: &[u8]) -> bool {
    let window = bytes.len().min(MAX_SNIFF_SIZE - self.sniffed);
    self.sniffed += window;
    self.binary = is_binary(bytes, window);
    self.binary
  }

  /// One read decoded and stripped; split sequences wait for the next read.
  fn text<'a>(&'a mut self, bytes: &'a [u8]) -> &'a str {
    self.text.push(bytes)
  }

  /// The end of the stream: an incomplete UTF-8 sequence becomes U+FFFD and
  /// a held escape sequence is resolved as `stripAnsi` resolves text's end.
  fn finish(&mut self) -> &str {
    self.text.finish()
  }
}

/// Where the next run of a restarted shell takes up its output file (API.md §6.8 restart).
#[derive(Clone, Debug)]
pub struct Resume {
  /// The counters the run before ended with: the file's counters go on from them.
  pub before: OutputCounters,
  /// The marker line written between the two runs' output.
  pub marker: String,
}

impl Resume {
  /// The marker of a restart at `now_ms` (milliseconds since the epoch):
  /// `[taskstream: restarted at <ISO 8601 time>]`.
  pub fn at(before: OutputCounters, now_ms: f64) -> Self {
    let when = super::iso_time::iso_8601(now_ms).unwrap_or_else(|| format!("{now_ms} ms"));
    Self {
      before,
      marker: format!("[taskstream: restarted at {when}]"),
    }
  }
}

/// Turns the reads of a shell's stdout and stderr, in arrival order, into its
/// output file. Not thread-safe by itself: the runner serialises reads.
pub struct OutputWriter {
  file: CappedFile,
  streams: [StreamText; 2],
  bytes_read: u64,
  binary_detected: bool,
  /// Terminal output ([`Self::set_frames`]).
  frames: Option<Frames>,
}

/// A terminal shell's output as a person reads it: each line's last `\r`
/// frame. The current line is held until it ends (or grows past
/// [`Frames::HOLD_LIMIT`]), so a later frame can still replace it.
#[derive(Default)]
struct Frames {
  collapser: FrameCollapser,
  line: String,
}

impl Frames {
  /// A held line longer than this is written as it is (no later frame can
  /// replace the part written).
  const HOLD_LIMIT: usize = 64 * 1024;

  /// Text of a read, through the frame rule; returns what is final.
  fn push(&mut self, text: &str) -> String {
    let mut out = String::new();
    let line = &mut self.line;
    self.collapser.push(text, &mut |piece| match piece {
      FramePiece::Text(text) => {
        let mut rest = text;
        while let Some(newline) = rest.find('\n') {
          out.push_str(line);
          line.clear();
          out.push_str(&rest[..=newline]);
          rest = &rest[newline + 1..];
        }
        line.push_str(rest);
        if line.len() > Self::HOLD_LIMIT {
          out.push_str(line);
          line.clear();
        }
      }
      FramePiece::ResetLine => line.clear(),
    });
    out
  }

  fn finish(&mut self) -> String {
    self.collapser.finish();
    std::mem::take(&mut self.line)
  }
}

impl OutputWriter {
  /// Opens `path` truncated, mode `0600`, not through a symlink, and only as
  /// a regular file, never blocking on a FIFO. An error reads
  /// `Cannot open output file <path>: <OS error>`. `max_output_bytes` is the
  /// cap on output written.
  pub fn create(path: &Path, max_output_bytes: u64) -> io::Result<Self> {
    Ok(Self {
      file: CappedFile::open(path, max_output_bytes)?,
      streams: Default::default(),
      bytes_read: 0,
      binary_detected: false,
      frames: None,
    })
  }

  /// Opens `path` for the next run of a restarted shell (API.md §6.8 restart): what the file
  /// holds stays, `marker` follows on a line of its own, and the counters and the cap go on from
  /// `before`, the run that ended.
  pub fn resume(
    path: &Path,
    max_output_bytes: u64,
    before: &OutputCounters,
    marker: &str,
  ) -> io::Result<Self> {
    Ok(Self {
      file: CappedFile::resume(
        path,
        max_output_bytes,
        before.bytes_written,
        before.bytes_not_written,
        marker,
      )?,
      streams: Default::default(),
      bytes_read: before.bytes_read,
      binary_detected: false,
      frames: None,
    })
  }

  /// Terminal output (API.md §6.5): `\r` redraws keep their last frame and
  /// `\r\n` ends a line; a partial line reaches the file when it ends (or at
  /// the end of the task).
  pub fn set_frames(&mut self) {
    self.frames = Some(Frames::default());
  }

  /// Processes one read of `stream`, writing at once what is final.
  pub fn write(&mut self, stream: Stream, bytes: &[u8]) {
    self.write_tapped(stream, bytes, None);
  }

  /// [`Self::write`], also showing `tap` the cleaned text of the read (for
  /// waits that match lines); text past the cap is still decoded for it.
  pub fn write_tapped(&mut self, stream: Stream, bytes: &[u8], tap: Option<&mut dyn FnMut(&str)>) {
    self.bytes_read += bytes.len() as u64;
    let state = &mut self.streams[stream as usize];
    if state.binary {
      self.file.skip(bytes.len());
    } else if state.detects_binary(bytes) {
      // Text before the detecting read stays; this read and later ones do not.
      self.binary_detected = true;
      self.file.append(state.finish());
      self.file.skip(bytes.len());
      self.file.marker(&format!(
        "[taskstream: binary output detected on {}; further output from this stream is not written]",
        stream_name(stream)
      ));
    } else if self.file.accepts() {
      let text = state.text(bytes);
      if let Some(tap) = tap {
        tap(text);
      }
      match self.frames.as_mut() {
        Some(frames) => self.file.append(&frames.push(text)),
        None => self.file.append(text),
      }
    } else {
      if let Some(tap) = tap {
        tap(state.text(bytes));
      }
      self.file.skip(bytes.len());
    }
  }

  /// Flushes both streams' decoders (text streams only), then closes the
  /// file. Later writes are counted, not written.
  pub fn finish(&mut self) {
    for state in self.streams.iter_mut().filter(|s| !s.binary) {
      let text = state.finish();
      match self.frames.as_mut() {
        Some(frames) => {
          let mut rest = frames.push(text);
          rest.push_str(&frames.finish());
          self.file.append(&rest);
        }
        None => self.file.append(text),
      }
    }
    self.file.close();
  }

  /// `maxOutputBytes`.
  pub fn max_bytes(&self) -> u64 {
    self.file.limit()
  }

  /// Whether the output reached `maxOutputBytes`.
  pub fn cap_reached(&self) -> bool {
    self.file.limit_reached()
  }

  pub fn counters(&self) -> OutputCounters {
    OutputCounters {
      bytes_read: self.bytes_read,
      bytes_written: self.file.written(),
      bytes_not_written: self.file.not_written(),
      binary_detected: self.binary_detected,
      write_error: self.file.error().map(str::to_owned),
    }
  }
}

fn stream_name(stream: Stream) -> &'static str {
  match stream {
    Stream::Stdout => "stdout",
    Stream::Stderr => "stderr",
  }
}
