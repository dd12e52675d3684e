//! The strings `CreateProcessW` takes: the command line and the environment
//! block. Pure (no Windows API), so `cargo test` checks them on every
//! platform.
//!
//! A Windows program gets one command line and splits it itself; almost all
//! use the Microsoft C runtime's rules (`CommandLineToArgvW`), which
//! [`append_quoted`] encodes exactly as Rust's std does for `Command::arg`.
//! `cmd.exe` is the exception: it takes everything after `/c` as one
//! command text. For it, the arguments after `/c` are passed verbatim (std's
//! `raw_arg`, Node's `windowsVerbatimArguments`) inside one pair of quotes,
//! which `/s` tells `cmd` to strip: `"C:\…\cmd.exe" /d /s /c "<command>"`
//! runs `<command>` exactly as written, quotes, `&` and `%` included, as
//! Node's `spawn(…, { shell: true })` does.

#![cfg_attr(not(windows), allow(dead_code))]

use std::ffi::OsStr;
use std::io;
use std::path::Path;

/// The error for a NUL inside something that becomes a C string.
fn nul_error(what: &str) -> io::Error {
  io::Error::new(
    io::ErrorKind::InvalidInput,
    format!("nul byte found in the {what}"),
  )
}

/// Whether `program` is `cmd.exe` (by file name, case-insensitively; `cmd`
/// without an extension too).
/// Both separators count, so the pure code reads Windows paths the same on
/// every platform.
pub fn is_cmd(program: &Path) -> bool {
  program.to_str().is_some_and(|path| {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    name.eq_ignore_ascii_case("cmd.exe") || name.eq_ignore_ascii_case("cmd")
  })
}

/// Appends `arg` so that `CommandLineToArgvW` gives it back unchanged: quoted
/// when empty or holding a space or tab; a run of backslashes doubled before
/// a quote (and before the closing quote), each quote escaped.
pub fn append_quoted(line: &mut String, arg: &str) {
  let quote = arg.is_empty() || arg.contains([' ', '\t']);
  if quote {
    line.push('"');
  }
  let mut backslashes = 0usize;
  for c in arg.chars() {
    if c == '\\' {
      backslashes += 1;
    } else {
      if c == '"' {
        // n backslashes before a quote become 2n + 1.
        line.extend(std::iter::repeat_n('\\', backslashes + 1));
      }
      backslashes = 0;
    }
    line.push(c);
  }
  if quote {
    // n backslashes before the closing quote become 2n.
    line.extend(std::iter::repeat_n('\\', backslashes));
    line.push('"');
  }
}

/// The command line for `program` with `args`. The program is always quoted
/// (it may not contain a quote). For `cmd.exe`, what follows the first `/c`
/// (or `/k`) is verbatim, joined by spaces and wrapped in one pair of quotes
/// (see the module documentation); every other argument is quoted by
/// [`append_quoted`].
pub fn command_line(program: &Path, args: &[String]) -> io::Result<String> {
  let program_text = program.to_str().ok_or_else(|| {
    io::Error::new(
      io::ErrorKind::InvalidInput,
      "the program path is not valid Unicode",
    )
  })?;
  if program_text.contains('"') {
    return Err(io::Error::new(
      io::ErrorKind::InvalidInput,
      "the program path contains a quote",
    ));
  }
  if program_text.contains('\0') {
    return Err(nul_error("program path"));
  }
  if args.iter().any(|a| a.contains('\0')) {
    return Err(nul_error("arguments"));
  }
  let mut line =
    String::with_capacity(program_text.len() + 3 + args.iter().map(|a| a.len() + 3).sum::<usize>());
  line.push('"');
  line.push_str(program_text);
  line.push('"');
  let verbatim_from = is_cmd(program)
    .then(|| {
      args
        .iter()
        .position(|a| a.eq_ignore_ascii_case("/c") || a.eq_ignore_ascii_case("/k"))
    })
    .flatten()
    .map_or(args.len(), |flag| flag + 1);
  for arg in &args[..verbatim_from] {
    line.push(' ');
    append_quoted(&mut line, arg);
  }
  if verbatim_from < args.len() {
    line.push_str(" \"");
    line.push_str(&args[verbatim_from..].join(" "));
    line.push('"');
  }
  Ok(line)
}

/// The `CREATE_UNICODE_ENVIRONMENT` block: `name=value\0` entries sorted by
/// upper-cased name (as Windows keeps its own), the last entry of a name
/// (compared case-insensitively) winning, then one more `\0`. Names must be
/// non-empty and hold no `=` past their first character (Windows' hidden
/// `=C:` entries start with one); nothing may hold a NUL.
pub fn environment_block<N: AsRef<OsStr>, V: AsRef<OsStr>>(env: &[(N, V)]) -> io::Result<Vec<u16>> {
  let mut entries: Vec<(String, &OsStr, &OsStr)> = Vec::with_capacity(env.len());
  for (name, value) in env {
    let (name, value) = (name.as_ref(), value.as_ref());
    let text = name.to_string_lossy();
    let first = text.chars().next().map_or(0, char::len_utf8);
    if text.is_empty() || text[first..].contains('=') {
      return Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("invalid environment variable name {text:?}"),
      ));
    }
    if text.contains('\0') || value.to_string_lossy().contains('\0') {
      return Err(nul_error("environment"));
    }
    let key = text.to_uppercase();
    entries.retain(|(existing, _, _)| *existing != key);
    entries.push((key, name, value));
  }
  entries.sort_by(|a, b| a.0.cmp(&b.0));
  let mut block = Vec::new();
  for (_, name, value) in entries {
    block.extend(encode_wide(name));
    block.push(u16::from(b'='));
    block.extend(encode_wide(value));
    block.push(0);
  }
  if block.is_empty() {
    block.push(0);
  }
  block.push(0);
  Ok(block)
}

/// UTF-16 of an `OsStr` (its own units on Windows; through UTF-8 elsewhere,
/// for the tests).
fn encode_wide(text: &OsStr) -> Vec<u16> {
  #[cfg(windows)]
  {
    std::os::windows::ffi::OsStrExt::encode_wide(text).collect()
  }
  #[cfg(not(windows))]
  {
    text.to_string_lossy().encode_utf16().collect()
  }
}

/// `text` as a NUL-terminated UTF-16 string; `what` names it in the error
/// for an inner NUL.
pub fn wide_nul(text: &OsStr, what: &str) -> io::Result<Vec<u16>> {
  let mut wide = encode_wide(text);
  if wide.contains(&0) {
    return Err(nul_error(what));
  }
  wide.push(0);
  Ok(wide)
}

#[cfg(test)]
mod tests {
  use super::*;

  /// `CommandLineToArgvW`'s rules (for arguments after the program), to
  /// check that quoting round-trips.
  fn split(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
      while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
        chars.next();
      }
      if chars.peek().is_none() {
        return args;
      }
      let (mut arg, mut quoted) = (String::new(), false);
      while let Some(&c) = chars.peek() {
        if !quoted && (c == ' ' || c == '\t') {
          break;
        }
        chars.next();
        match c {
          '\\' => {
            let mut n = 1;
            while chars.peek() == Some(&'\\') {
              chars.next();
              n += 1;
            }
            if chars.peek() == Some(&'"') {
              arg.extend(std::iter::repeat_n('\\', n / 2));
              if n % 2 == 1 {
                chars.next();
                arg.push('"');
              }
            } else {
              arg.extend(std::iter::repeat_n('\\', n));
            }
          }
          '"' => {
            if quoted && chars.peek() == Some(&'"') {
              chars.next();
              arg.push('"');
            } else {
              quoted = !quoted;
            }
          }
          c => arg.push(c),
        }
      }
      args.push(arg);
    }
  }

  #[test]
  fn windows_arguments_round_trip_through_argv_rules() {
    let args: Vec<String> = [
      "plain",
      "",
      "two words",
      "tab\there",
      r#"say "hi""#,
      r"C:\dir\",
      r"C:\dir with space\",
      r#"a\\"b"#,
      r"\\server\share",
      "日本 語",
      r#"\""#,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let line = command_line(Path::new(r"C:\tools\prog.exe"), &args).unwrap();
    let rest = line.strip_prefix(r#""C:\tools\prog.exe" "#).unwrap();
    assert_eq!(split(rest), args);
  }

  #[test]
  fn windows_cmd_gets_its_command_verbatim_in_one_pair_of_quotes() {
    let args: Vec<String> = [
      "/d",
      "/s",
      "/c",
      r#"echo "a b" & dir "C:\x y\" | findstr %PATH%"#,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let line = command_line(Path::new(r"C:\Windows\System32\cmd.exe"), &args).unwrap();
    assert_eq!(
      line,
      r#""C:\Windows\System32\cmd.exe" /d /s /c "echo "a b" & dir "C:\x y\" | findstr %PATH%""#
    );
    // By file name only, in any case; `/C` counts too.
    let upper = command_line(Path::new(r"D:\X\CMD.EXE"), &["/C".into(), "x  y".into()]).unwrap();
    assert_eq!(upper, r#""D:\X\CMD.EXE" /C "x  y""#);
    // Other programs named like cmd are quoted normally.
    let other = command_line(Path::new(r"C:\cmdx.exe"), &["/c".into(), "x y".into()]).unwrap();
    assert_eq!(other, r#""C:\cmdx.exe" /c "x y""#);
  }

  #[test]
  fn windows_command_line_refuses_nul_and_quoted_programs() {
    let bad = command_line(Path::new(r"C:\a.exe"), &["x\0y".into()]).unwrap_err();
    assert_eq!(bad.kind(), io::ErrorKind::InvalidInput);
    let quoted = command_line(Path::new("C:\\\"a\".exe"), &[]).unwrap_err();
    assert_eq!(quoted.kind(), io::ErrorKind::InvalidInput);
  }

  #[test]
  fn windows_environment_block_is_sorted_deduplicated_and_double_terminated() {
    let env = [
      ("b", "2"),
      ("Path", "x"),
      ("A", "1"),
      ("PATH", "y"),
      ("=C:", "C:\\"),
    ];
    let block = environment_block(&env).unwrap();
    let text = String::from_utf16(&block).unwrap();
    assert_eq!(text, "=C:=C:\\\0A=1\0b=2\0PATH=y\0\0");
    let empty: [(&str, &str); 0] = [];
    assert_eq!(environment_block(&empty).unwrap(), [0, 0]);
    for bad in [("", "x"), ("A=B", "x"), ("A", "x\0")] {
      assert_eq!(
        environment_block(&[bad]).unwrap_err().kind(),
        io::ErrorKind::InvalidInput,
        "{bad:?}"
      );
    }
  }
}
