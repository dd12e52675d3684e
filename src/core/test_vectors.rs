//! Loads `spec/vectors.json` (CONTRACT.md §3 as data) for table-driven tests.
//! The same file is loaded by the vitest suite, so no vector is typed twice.

use serde_json::Value;

const VECTORS_JSON: &str = include_str!(concat!(
  env!("CARGO_MANIFEST_DIR"),
  "/../../spec/vectors.json"
));

/// Every case listed under `name` (a function name in vectors.json).
/// Panics when the name is missing, so a renamed key cannot silently test nothing.
pub fn cases(name: &str) -> Vec<Value> {
  let all: Value = serde_json::from_str(VECTORS_JSON).expect("spec/vectors.json is valid JSON");
  let list = all
    .get(name)
    .unwrap_or_else(|| panic!("vectors.json has no key {name}"))
    .as_array()
    .unwrap_or_else(|| panic!("vectors.json key {name} is not a list"))
    .clone();
  assert!(!list.is_empty(), "vectors.json key {name} has no cases");
  list
}

/// A short label for a failing case.
pub fn describe(case: &Value) -> String {
  let mut s = case["input"].to_string();
  if s.len() > 120 {
    let mut cut = 120;
    while !s.is_char_boundary(cut) {
      cut -= 1;
    }
    s.truncate(cut);
    s.push('…');
  }
  format!("input {s} (src {})", case["src"])
}
