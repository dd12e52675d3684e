//! XML escaping for the notification envelope (CONTRACT.md §1.7, §3.8).

/// `escapeXml` (CONTRACT.md §1.7): `&`, `<`, `>`, `"` and `'` become `&amp;`, `&lt;`, `&gt;`,
/// `&quot;` and `&apos;`. One pass, so an `&` produced by an entity is never escaped twice.
pub fn escape_xml(text: &str) -> String {
  let mut out = String::with_capacity(text.len());
  for c in text.chars() {
    match c {
      '&' => out.push_str("&amp;"),
      '<' => out.push_str("&lt;"),
      '>' => out.push_str("&gt;"),
      '"' => out.push_str("&quot;"),
      '\'' => out.push_str("&apos;"),
      _ => out.push(c),
    }
  }
  out
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::text::test_support::assert_string_vectors;

  #[test]
  fn escape_xml_vectors() {
    assert_string_vectors("escapeXml", escape_xml);
  }

  #[test]
  fn keeps_non_ascii() {
    assert_eq!(escape_xml("你<😀>"), "你&lt;😀&gt;");
  }
}
