//! The validated §6.7 options of one monitor (`batchMs`, `maxBatchLines`, `important`, `digest`).

use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// `batchMs`: 10..10_000 ms.
pub const BATCH_MS_MIN: u64 = 10;
pub const BATCH_MS_MAX: u64 = 10_000;
/// `maxBatchLines`: 1..1000, default 20.
pub const MAX_BATCH_LINES_MIN: u32 = 1;
pub const MAX_BATCH_LINES_MAX: u32 = 1000;
pub const DEFAULT_MAX_BATCH_LINES: u32 = 20;
/// `contextBefore`, `contextAfter`: 0..100 lines.
pub const CONTEXT_LINES_MAX: u32 = 100;
/// `sampleLines`: 0..1000.
pub const SAMPLE_LINES_MAX: u32 = 1000;

/// The recommended setting for agent CLIs (API.md §6.7 "The recommended setting"), exported to
/// JavaScript as `RECOMMENDED_SIGNAL`; its values are justified in docs/performance.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recommended {
  pub important: &'static str,
  pub batch_ms: u32,
  pub sample_lines: u32,
  pub context_before: u32,
  pub context_after: u32,
  /// `digest: 'templates'`.
  pub digest: &'static str,
}

pub const RECOMMENDED: Recommended = Recommended {
  important: "(?i)error|fail|exception|panic|listening|ready",
  batch_ms: 1000,
  sample_lines: 1,
  context_before: 8,
  context_after: 8,
  digest: "templates",
};

impl Recommended {
  /// As [`SignalOptions`].
  pub fn options(&self) -> SignalOptions<'static> {
    SignalOptions {
      batch_ms: Some(f64::from(self.batch_ms)),
      max_batch_lines: None,
      important: Some(self.important),
      digest: true,
      digest_templates: self.digest == "templates",
      context_before: Some(f64::from(self.context_before)),
      context_after: Some(f64::from(self.context_after)),
      sample_lines: Some(f64::from(self.sample_lines)),
    }
  }
}

/// The options as JavaScript gives them: numbers are the JS numbers unchecked (type checks,
/// `TypeError` for a non-number, stay with the binding), `None` when the option is absent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SignalOptions<'a> {
  pub batch_ms: Option<f64>,
  pub max_batch_lines: Option<f64>,
  pub important: Option<&'a str>,
  pub digest: bool,
  /// `digest: 'templates'` (implies `digest`).
  pub digest_templates: bool,
  pub context_before: Option<f64>,
  pub context_after: Option<f64>,
  pub sample_lines: Option<f64>,
}

/// `digest` as JavaScript gives it: `false`, `true` or `'templates'`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "DigestValue", into = "DigestValue")]
pub enum DigestSetting {
  #[default]
  Off,
  On,
  Templates,
}

/// [`DigestSetting`] as its JSON value (a persisted task's record).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum DigestValue {
  Flag(bool),
  Mode(String),
}

impl From<DigestValue> for DigestSetting {
  fn from(value: DigestValue) -> Self {
    match value {
      DigestValue::Flag(true) => Self::On,
      DigestValue::Mode(mode) if mode == "templates" => Self::Templates,
      _ => Self::Off,
    }
  }
}

impl From<DigestSetting> for DigestValue {
  fn from(setting: DigestSetting) -> Self {
    match setting {
      DigestSetting::Off => Self::Flag(false),
      DigestSetting::On => Self::Flag(true),
      DigestSetting::Templates => Self::Mode("templates".to_owned()),
    }
  }
}

/// The §6.7 options as JavaScript gave them, owned: what the binding parses and what a persisted
/// monitor's record keeps (docs/persistence.md "Records"), so that a later host builds the same
/// [`SignalConfig`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SignalSettings {
  pub batch_ms: Option<f64>,
  pub max_batch_lines: Option<f64>,
  pub important: Option<String>,
  pub digest: DigestSetting,
  pub sample_lines: Option<f64>,
  pub context_before: Option<f64>,
  pub context_after: Option<f64>,
}

impl SignalSettings {
  /// As [`SignalOptions`], for [`SignalConfig::new`].
  pub fn options(&self) -> SignalOptions<'_> {
    SignalOptions {
      batch_ms: self.batch_ms,
      max_batch_lines: self.max_batch_lines,
      important: self.important.as_deref(),
      digest: self.digest != DigestSetting::Off,
      digest_templates: self.digest == DigestSetting::Templates,
      context_before: self.context_before,
      context_after: self.context_after,
      sample_lines: self.sample_lines,
    }
  }
}

/// One monitor's signal settings, validated. [`Default`] is "all off": the lane then behaves as
/// the TypeScript `throttledEmit` (one token per line, no batches, no digest).
#[derive(Debug, Clone)]
pub struct SignalConfig {
  /// Accepted lines leave in windows of this many ms; `None`: one notification per line.
  pub batch_ms: Option<u64>,
  /// A window closes when it holds this many lines. Kept (validated) even without `batch_ms`,
  /// where it has no effect.
  pub max_batch_lines: u32,
  /// Lines matching it (tested on the sanitised line) are held for the next token instead of
  /// being dropped.
  pub important: Option<Regex>,
  /// Say what the throttle dropped in the next notification.
  pub digest: bool,
  /// `digest: 'templates'`: the digest groups the dropped lines by template.
  pub digest_templates: bool,
  /// Lines before an important line that travel with it (`contextBefore`; needs `important`
  /// and `sampleLines`).
  pub context_before: u32,
  /// Lines after an important line that travel with it (`contextAfter`).
  pub context_after: u32,
  /// With `batchMs`: a window carries at most this many ordinary lines (`sampleLines`);
  /// `None`: as many as `maxBatchLines` allows.
  pub sample_lines: Option<u32>,
}

impl Default for SignalConfig {
  fn default() -> Self {
    Self {
      batch_ms: None,
      max_batch_lines: DEFAULT_MAX_BATCH_LINES,
      important: None,
      digest: false,
      digest_templates: false,
      context_before: 0,
      context_after: 0,
      sample_lines: None,
    }
  }
}

impl SignalConfig {
  /// Validates the options: a number out of range (or not an integer, or not finite) is a
  /// [`SignalConfigError::OutOfRange`] naming the field; an `important` the `regex` crate
  /// rejects is a [`SignalConfigError::InvalidRegex`] carrying its message verbatim; an option
  /// that needs another one that is absent (`contextBefore`/`contextAfter` without `important`,
  /// `sampleLines` without `batchMs`, context without `sampleLines`) is a
  /// [`SignalConfigError::Needs`]. Checked in the order `batchMs`, `maxBatchLines`, `important`,
  /// `sampleLines`, `contextBefore`, `contextAfter`.
  /// The regex is compiled here, once per monitor.
  pub fn new(options: SignalOptions<'_>) -> Result<Self, SignalConfigError> {
    let batch_ms = options
      .batch_ms
      .map(|n| integer_in("batchMs", n, BATCH_MS_MIN, BATCH_MS_MAX))
      .transpose()?;
    let max_batch_lines = options
      .max_batch_lines
      .map(|n| {
        integer_in(
          "maxBatchLines",
          n,
          u64::from(MAX_BATCH_LINES_MIN),
          u64::from(MAX_BATCH_LINES_MAX),
        )
      })
      .transpose()?
      .map_or(DEFAULT_MAX_BATCH_LINES, |n| n as u32);
    let important = options
      .important
      .map(|pattern| {
        Regex::new(pattern).map_err(|error| SignalConfigError::InvalidRegex {
          field: "important",
          message: error.to_string(),
        })
      })
      .transpose()?;
    let sample_lines = options
      .sample_lines
      .map(|n| integer_in("sampleLines", n, 0, u64::from(SAMPLE_LINES_MAX)))
      .transpose()?
      .map(|n| n as u32);
    if sample_lines.is_some() && batch_ms.is_none() {
      return Err(SignalConfigError::Needs {
        field: "sampleLines",
        needs: "batchMs",
      });
    }
    let context = |field: &'static str, n: Option<f64>| -> Result<u32, SignalConfigError> {
      let Some(n) = n else { return Ok(0) };
      let lines = integer_in(field, n, 0, u64::from(CONTEXT_LINES_MAX))? as u32;
      if lines > 0 && important.is_none() {
        return Err(SignalConfigError::Needs {
          field,
          needs: "important",
        });
      }
      if lines > 0 && sample_lines.is_none() {
        return Err(SignalConfigError::Needs {
          field,
          needs: "sampleLines",
        });
      }
      Ok(lines)
    };
    let context_before = context("contextBefore", options.context_before)?;
    let context_after = context("contextAfter", options.context_after)?;
    Ok(Self {
      batch_ms,
      max_batch_lines,
      important,
      digest: options.digest || options.digest_templates,
      digest_templates: options.digest_templates,
      context_before,
      context_after,
      sample_lines,
    })
  }

  /// True when every option is off: the texts and counts are the TypeScript registry's.
  pub fn is_default(&self) -> bool {
    self.batch_ms.is_none() && self.important.is_none() && !self.digest
  }

  /// Whether lines travel with important lines as context.
  pub fn has_context(&self) -> bool {
    self.context_before > 0 || self.context_after > 0
  }
}

fn integer_in(field: &'static str, n: f64, min: u64, max: u64) -> Result<u64, SignalConfigError> {
  if n.is_finite() && n.fract() == 0.0 && n >= min as f64 && n <= max as f64 {
    Ok(n as u64)
  } else {
    Err(SignalConfigError::OutOfRange {
      field,
      min,
      max,
      received: n,
    })
  }
}

/// Why [`SignalConfig::new`] refused the options. `field` is the option's name
/// (`batchMs`, `maxBatchLines`, `important`).
#[derive(Debug, Clone, PartialEq)]
pub enum SignalConfigError {
  /// A `RangeError` in JavaScript.
  OutOfRange {
    field: &'static str,
    min: u64,
    max: u64,
    received: f64,
  },
  /// A `SyntaxError` in JavaScript; `message` is the `regex` crate's, verbatim.
  InvalidRegex {
    field: &'static str,
    message: String,
  },
  /// A `TypeError` in JavaScript: `field` has no meaning without `needs`.
  Needs {
    field: &'static str,
    needs: &'static str,
  },
}

impl SignalConfigError {
  pub fn field(&self) -> &'static str {
    match self {
      Self::OutOfRange { field, .. }
      | Self::InvalidRegex { field, .. }
      | Self::Needs { field, .. } => field,
    }
  }

  /// The JavaScript error class to throw: `RangeError` or `SyntaxError`.
  pub fn js_class(&self) -> &'static str {
    match self {
      Self::OutOfRange { .. } => "RangeError",
      Self::InvalidRegex { .. } => "SyntaxError",
      Self::Needs { .. } => "TypeError",
    }
  }
}

impl fmt::Display for SignalConfigError {
  /// The range message is the binding's (`args::integer_in_range`) for `options.<field>`.
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match self {
      Self::OutOfRange {
        field,
        min,
        max,
        received,
      } => write!(
        f,
        "The value of \"options.{field}\" is out of range. It must be an integer >= {min} && <= {max}. Received {}",
        js_number(*received)
      ),
      Self::InvalidRegex { field, message } => write!(
        f,
        "Invalid regular expression in \"options.{field}\": {message}"
      ),
      Self::Needs { field, needs } => write!(
        f,
        "The \"options.{field}\" option needs \"options.{needs}\", which is not set"
      ),
    }
  }
}

impl std::error::Error for SignalConfigError {}

/// A number as JavaScript's `String(n)` writes the ones a caller is likely to pass.
fn js_number(n: f64) -> String {
  if n.is_nan() {
    "NaN".to_owned()
  } else if n.is_infinite() {
    if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
  } else if n.fract() == 0.0 && n.abs() < 1e21 {
    format!("{}", n as i128)
  } else {
    format!("{n}")
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn opts() -> SignalOptions<'static> {
    SignalOptions::default()
  }

  #[test]
  fn defaults_are_all_off() {
    let c = SignalConfig::new(opts()).unwrap();
    assert!(c.is_default());
    assert_eq!(c.batch_ms, None);
    assert_eq!(c.max_batch_lines, 20);
    assert!(c.important.is_none());
    assert!(!c.digest);
    assert!(SignalConfig::default().is_default());
  }

  #[test]
  fn ranges_are_inclusive() {
    for ms in [10.0, 200.0, 10_000.0] {
      let c = SignalConfig::new(SignalOptions {
        batch_ms: Some(ms),
        ..opts()
      })
      .unwrap();
      assert_eq!(c.batch_ms, Some(ms as u64));
      assert!(!c.is_default());
    }
    for lines in [1.0, 1000.0] {
      let c = SignalConfig::new(SignalOptions {
        max_batch_lines: Some(lines),
        ..opts()
      })
      .unwrap();
      assert_eq!(c.max_batch_lines, lines as u32);
    }
    assert!(!SignalConfig::new(SignalOptions {
      digest: true,
      ..opts()
    })
    .unwrap()
    .is_default());
  }

  #[test]
  fn out_of_range_names_the_field_and_never_clamps() {
    for bad in [9.0, 10_001.0, 0.0, -1.0, 200.5, f64::NAN, f64::INFINITY] {
      let e = SignalConfig::new(SignalOptions {
        batch_ms: Some(bad),
        ..opts()
      })
      .unwrap_err();
      assert_eq!(e.field(), "batchMs");
      assert_eq!(e.js_class(), "RangeError");
    }
    for bad in [0.0, 1001.0, 1.5] {
      let e = SignalConfig::new(SignalOptions {
        max_batch_lines: Some(bad),
        ..opts()
      })
      .unwrap_err();
      assert_eq!(e.field(), "maxBatchLines");
    }
    let e = SignalConfig::new(SignalOptions {
      batch_ms: Some(5.0),
      ..opts()
    })
    .unwrap_err();
    assert_eq!(
      e.to_string(),
      "The value of \"options.batchMs\" is out of range. It must be an integer >= 10 && <= 10000. Received 5"
    );
    let e = SignalConfig::new(SignalOptions {
      max_batch_lines: Some(f64::NEG_INFINITY),
      ..opts()
    })
    .unwrap_err();
    assert_eq!(
      e.to_string(),
      "The value of \"options.maxBatchLines\" is out of range. It must be an integer >= 1 && <= 1000. Received -Infinity"
    );
    let e = SignalConfig::new(SignalOptions {
      max_batch_lines: Some(2.5),
      ..opts()
    })
    .unwrap_err();
    assert!(e.to_string().ends_with("Received 2.5"), "{e}");
  }

  #[test]
  fn fields_are_checked_in_order() {
    let e = SignalConfig::new(SignalOptions {
      batch_ms: Some(1.0),
      max_batch_lines: Some(0.0),
      important: Some("("),
      digest: true,
      ..opts()
    })
    .unwrap_err();
    assert_eq!(e.field(), "batchMs");
    let e = SignalConfig::new(SignalOptions {
      max_batch_lines: Some(0.0),
      important: Some("("),
      ..opts()
    })
    .unwrap_err();
    assert_eq!(e.field(), "maxBatchLines");
  }

  #[test]
  fn a_bad_regex_carries_the_parser_message_verbatim() {
    let bad = String::from("error|(unclosed");
    let e = SignalConfig::new(SignalOptions {
      important: Some(&bad),
      ..opts()
    })
    .unwrap_err();
    let parser = Regex::new(&bad).unwrap_err().to_string();
    assert_eq!(
      e,
      SignalConfigError::InvalidRegex {
        field: "important",
        message: parser.clone(),
      }
    );
    assert_eq!(e.js_class(), "SyntaxError");
    assert!(parser.contains("unclosed group"), "{parser}");
    assert_eq!(
      e.to_string(),
      format!("Invalid regular expression in \"options.important\": {parser}")
    );
  }

  #[test]
  fn the_recommended_setting_is_valid() {
    let c = SignalConfig::new(RECOMMENDED.options()).unwrap();
    assert_eq!(c.batch_ms, Some(1000));
    assert_eq!(c.sample_lines, Some(1));
    assert!(c.has_context() && c.digest_templates);
  }

  /// The README's recommended setting must compile with the crate's `regex` features.
  #[test]
  fn the_recommended_pattern_compiles() {
    let c = SignalConfig::new(SignalOptions {
      important: Some("(?i)error|fail|exception|panic|listening|ready"),
      ..opts()
    })
    .unwrap();
    let re = c.important.unwrap();
    assert!(re.is_match("Build FAILED"));
    assert!(re.is_match("Server listening on :3000"));
    assert!(!re.is_match("compiled 3 modules"));
    // Case-folding beyond ASCII too.
    assert!(re.is_match("ERROR: ünïcode"));
  }

  #[test]
  fn context_samples_and_templates_are_checked() {
    let e = SignalConfig::new(SignalOptions {
      important: Some("error"),
      context_before: Some(3.0),
      ..opts()
    })
    .unwrap_err();
    assert_eq!((e.field(), e.js_class()), ("contextBefore", "TypeError"));
    assert!(e.to_string().contains("\"options.sampleLines\""), "{e}");
    let c = SignalConfig::new(SignalOptions {
      important: Some("error"),
      context_before: Some(3.0),
      context_after: Some(100.0),
      batch_ms: Some(200.0),
      sample_lines: Some(0.0),
      digest_templates: true,
      ..opts()
    })
    .unwrap();
    assert_eq!((c.context_before, c.context_after), (3, 100));
    assert_eq!(c.sample_lines, Some(0));
    assert!(c.digest && c.digest_templates && c.has_context());
    let e = SignalConfig::new(SignalOptions {
      important: Some("error"),
      batch_ms: Some(200.0),
      sample_lines: Some(1.0),
      context_after: Some(101.0),
      ..opts()
    })
    .unwrap_err();
    assert_eq!((e.field(), e.js_class()), ("contextAfter", "RangeError"));
    let e = SignalConfig::new(SignalOptions {
      context_before: Some(2.0),
      ..opts()
    })
    .unwrap_err();
    assert_eq!((e.field(), e.js_class()), ("contextBefore", "TypeError"));
    assert_eq!(
      e.to_string(),
      "The \"options.contextBefore\" option needs \"options.important\", which is not set"
    );
    // Zero context needs nothing.
    assert!(!SignalConfig::new(SignalOptions {
      context_before: Some(0.0),
      ..opts()
    })
    .unwrap()
    .has_context());
    let e = SignalConfig::new(SignalOptions {
      sample_lines: Some(1.0),
      ..opts()
    })
    .unwrap_err();
    assert_eq!((e.field(), e.js_class()), ("sampleLines", "TypeError"));
    let e = SignalConfig::new(SignalOptions {
      batch_ms: Some(200.0),
      sample_lines: Some(1.5),
      ..opts()
    })
    .unwrap_err();
    assert_eq!(e.field(), "sampleLines");
  }
}
