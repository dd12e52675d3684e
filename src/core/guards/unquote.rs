//! Bash quote removal for one word: the script argument exactly as a wrapper shell receives it
//! (CONTRACT.md §2.11: substitutions and `&` hidden in a wrapper script must be caught).
//!
//! `normalizeMonitorCommand` only strips one pair of symmetric outer quotes from the script, so
//! `bash -c "tail \$(x)"`, `bash -c tail\ x\ \&\ y` or `bash -c $'\044(x)'` would reach the inner
//! shell as a substitution or a background `&` the checks never saw. The guards therefore also
//! check the script after full quote removal.

use std::iter::Peekable;
use std::str::Chars;

/// The word `word` after bash quote removal: unquoted `\x` becomes `x`, `'…'` its literal
/// content, `"…"` its content with `\$`, `` \` ``, `\"`, `\\` and `\<newline>` unescaped, and
/// `$'…'` its ANSI-C-decoded content. Single pass, linear in the input.
pub(super) fn remove_quotes(word: &str) -> String {
  let mut out = String::with_capacity(word.len());
  let mut chars = word.chars().peekable();
  while let Some(ch) = chars.next() {
    match ch {
      '\\' => match chars.next() {
        Some('\n') => {}
        Some(escaped) => out.push(escaped),
        None => out.push('\\'),
      },
      '\'' => out.extend(chars.by_ref().take_while(|&c| c != '\'')),
      '"' => remove_double_quotes(&mut chars, &mut out),
      '$' if chars.peek() == Some(&'\'') => {
        chars.next();
        decode_ansi_c(&mut chars, &mut out);
      }
      other => out.push(other),
    }
  }
  out
}

/// The rest of a `"…"` string, up to and including the closing quote.
fn remove_double_quotes(chars: &mut Peekable<Chars<'_>>, out: &mut String) {
  while let Some(ch) = chars.next() {
    match ch {
      '"' => return,
      '\\' => match chars.peek() {
        Some('\n') => {
          chars.next();
        }
        Some(&next @ ('$' | '`' | '"' | '\\')) => {
          chars.next();
          out.push(next);
        }
        _ => out.push('\\'),
      },
      other => out.push(other),
    }
  }
}

/// The rest of a `$'…'` string, up to and including the closing quote, with bash's ANSI-C
/// escapes decoded.
fn decode_ansi_c(chars: &mut Peekable<Chars<'_>>, out: &mut String) {
  while let Some(ch) = chars.next() {
    match ch {
      '\'' => return,
      '\\' => decode_ansi_c_escape(chars, out),
      other => out.push(other),
    }
  }
}

/// One ANSI-C escape, the backslash already consumed. An unknown escape, or `\x`, `\u`, `\U`
/// without digits, stays as written.
fn decode_ansi_c_escape(chars: &mut Peekable<Chars<'_>>, out: &mut String) {
  let Some(kind) = chars.next() else {
    out.push('\\');
    return;
  };
  let hex_digits = match kind {
    'x' => 2,
    'u' => 4,
    'U' => 8,
    _ => 0,
  };
  let decoded = if let Some(simple) = simple_ansi_c_escape(kind) {
    Some(simple)
  } else if let Some(octal) = kind.to_digit(8) {
    take_digits(chars, 8, 2, Some(octal)).and_then(|v| char::from_u32(v & 0xff))
  } else if let (true, Some(value)) = (hex_digits > 0, take_digits(chars, 16, hex_digits, None)) {
    char::from_u32(value)
  } else if kind == 'c' {
    chars
      .next()
      .and_then(|c| char::from_u32(u32::from(c) & 0x1f))
  } else {
    out.push('\\');
    Some(kind)
  };
  out.extend(decoded);
}

/// The single-character ANSI-C escapes (`\n`, `\t`, `\'`, …).
fn simple_ansi_c_escape(kind: char) -> Option<char> {
  Some(match kind {
    'a' => '\u{7}',
    'b' => '\u{8}',
    'e' | 'E' => '\u{1b}',
    'f' => '\u{c}',
    'n' => '\n',
    'r' => '\r',
    't' => '\t',
    'v' => '\u{b}',
    '\\' | '\'' | '"' | '?' => kind,
    _ => return None,
  })
}

/// `value` (the digits already read, if any) extended by up to `max` more digits of `radix` from
/// `chars`; `None` when there is no digit at all.
fn take_digits(
  chars: &mut Peekable<Chars<'_>>,
  radix: u32,
  max: usize,
  mut value: Option<u32>,
) -> Option<u32> {
  for _ in 0..max {
    let Some(digit) = chars.peek().and_then(|c| c.to_digit(radix)) else {
      break;
    };
    chars.next();
    value = Some(value.unwrap_or(0) * radix + digit);
  }
  value
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn removes_quotes_like_bash() {
    let cases = [
      ("plain", "plain"),
      ("'a \\ \"b\" $(c)'", "a \\ \"b\" $(c)"),
      ("\"tail \\$(x) \\a \\\" \\\\\"", "tail $(x) \\a \" \\"),
      ("tail\\ x\\ \\&\\ y", "tail x & y"),
      ("a\\\nb", "ab"),
      ("\"a\\\nb\"", "ab"),
      ("'a'\"b\"c", "abc"),
      ("$'\\044(id)'", "$(id)"),
      ("$'\\x24\\x28id)'", "$(id)"),
      ("$'\\u0060id\\U00000060'", "`id`"),
      ("$'\\101\\0\\7'", "A\u{0}\u{7}"),
      ("$'\\'\\n\\t\\q'", "'\n\t\\q"),
      ("$'\\ca'", "\u{1}"),
      ("$'\\x'", "\\x"),
      ("$'\\uD800'", ""),
      ("trailing\\", "trailing\\"),
      ("'open", "open"),
      ("\"open", "open"),
      ("$'open\\", "open\\"),
      ("日本\\語", "日本語"),
    ];
    for (word, want) in cases {
      assert_eq!(remove_quotes(word), want, "{word:?}");
    }
  }
}
