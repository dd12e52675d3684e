//! How Node's own errors show a received value, for the messages of the API's argument
//! checks (CONTRACT.md §4): numbers as JavaScript prints them, strings quoted and escaped, and the
//! path of a property.

/// A number as JavaScript prints it in a message (`NaN`, `Infinity`, `-Infinity`, `42`).
pub fn js_number(n: f64) -> String {
  if n.is_nan() {
    "NaN".to_owned()
  } else if n.is_infinite() {
    if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
  } else {
    format!("{n}")
  }
}

/// A received string for a message, in Node's `'…'` style: control characters
/// escaped (`\x00`), at most 60 characters shown.
pub fn quoted(s: &str) -> String {
  const SHOWN: usize = 60;
  let mut out = String::from("'");
  for (i, c) in s.chars().enumerate() {
    if i == SHOWN {
      out.push_str("'...");
      return out;
    }
    match c {
      '\'' => out.push_str("\\'"),
      '\\' => out.push_str("\\\\"),
      '\n' => out.push_str("\\n"),
      '\t' => out.push_str("\\t"),
      '\r' => out.push_str("\\r"),
      c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02X}", c as u32)),
      c => out.push(c),
    }
  }
  out.push('\'');
  out
}

/// `base.key` for an identifier key, `base["key"]` (JSON-quoted) otherwise.
pub fn property_path(base: &str, key: &str) -> String {
  let mut chars = key.chars();
  let identifier = chars
    .next()
    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
  if identifier {
    format!("{base}.{key}")
  } else {
    let quoted = serde_json::to_string(key).unwrap_or_else(|_| format!("{key:?}"));
    format!("{base}[{quoted}]")
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn property_paths_quote_what_is_not_an_identifier() {
    assert_eq!(property_path("options.env", "PATH"), "options.env.PATH");
    assert_eq!(property_path("options.env", "_a$1"), "options.env._a$1");
    assert_eq!(property_path("options.env", "A=B"), "options.env[\"A=B\"]");
    assert_eq!(property_path("options.env", ""), "options.env[\"\"]");
    assert_eq!(property_path("options.env", "1A"), "options.env[\"1A\"]");
    assert_eq!(
      property_path("options.env", "A\0B"),
      "options.env[\"A\\u0000B\"]"
    );
  }

  #[test]
  fn received_strings_and_numbers_print_as_node_does() {
    assert_eq!(quoted("a\0b"), "'a\\x00b'");
    assert_eq!(quoted("it's\n"), "'it\\'s\\n'");
    assert_eq!(quoted(&"x".repeat(61)), format!("'{}'...", "x".repeat(60)));
    assert_eq!(js_number(f64::NAN), "NaN");
    assert_eq!(js_number(f64::NEG_INFINITY), "-Infinity");
    assert_eq!(js_number(1.5), "1.5");
    assert_eq!(js_number(8.64e15), "8640000000000000");
  }
}
