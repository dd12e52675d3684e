//! The foreground sleep guard (CONTRACT.md §2.16, vectors §3.1).

use super::comment::{split_trailing_shell_comment, SplitComment};
use super::whitespace::{is_js_whitespace, trim, trim_start};
use super::wrapper::strip_shell_wrapper;

/// `INTENTIONAL_SLEEP_COMMENT_PREFIX` (CONTRACT.md §1.5), case-sensitive.
const INTENTIONAL_SLEEP_COMMENT_PREFIX: &str = "intentional-sleep:";
/// `MAX_INTENTIONAL_SLEEP_SECONDS` (CONTRACT.md §1.5).
const MAX_INTENTIONAL_SLEEP_SECONDS: f64 = 600.0;
/// `MIN_INTENTIONAL_SLEEP_REASON_LENGTH` (CONTRACT.md §1.5), in UTF-16 units like the
/// TypeScript `reason.length`.
const MIN_INTENTIONAL_SLEEP_REASON_LENGTH: usize = 8;
/// A foreground sleep is blocked when it lasts at least this long (CONTRACT.md §1.5).
const BLOCKED_SLEEP_THRESHOLD_SECONDS: f64 = 2.0;

/// The guidance sentence that ends a blocked-sleep message (CONTRACT.md §2.16, `G`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guidance {
  /// R1: the intentional-sleep reason is too short.
  ReasonTooShort,
  /// R2: an intentional sleep over 10 minutes.
  TooLong,
  /// S: a standalone sleep without a valid escape hatch.
  Standalone,
  /// F: a sleep followed by other commands.
  FollowedBy,
}

impl Guidance {
  fn text(self) -> &'static str {
    match self {
      Guidance::ReasonTooShort => {
        "The intentional-sleep comment was recognized, but the reason is too short; explain why the delay is needed after `intentional-sleep:`."
      }
      Guidance::TooLong => {
        "The intentional-sleep comment was recognized, but foreground sleeps over 10 minutes are not allowed; use is_background: true or Monitor for longer waits."
      }
      Guidance::Standalone => {
        "If you genuinely need a standalone delay (rate limiting, deliberate pacing), add a trailing comment like `# intentional-sleep: wait for MCP rate limit reset` (up to 10 minutes)."
      }
      Guidance::FollowedBy => {
        "Split into two calls: first `sleep N # intentional-sleep: <reason>` (standalone), then the follow-up command."
      }
    }
  }
}

/// `detectBlockedSleepPatternDetails`: why a command is blocked.
struct BlockedSleep {
  description: String,
  guidance: Guidance,
}

/// `parseSleepDurationToSeconds(token)` (§2.16 step 4): a numeric prefix of digits with at most
/// one dot and at least one digit, then a unit `''`/`s`, `ms`, `m`, `h` or `d` (any case).
fn parse_sleep_duration_to_seconds(token: &str) -> Option<f64> {
  let mut seen_dot = false;
  let number_len = token
    .bytes()
    .take_while(|&b| match b {
      b'0'..=b'9' => true,
      b'.' if !seen_dot => {
        seen_dot = true;
        true
      }
      _ => false,
    })
    .count();
  let (number, unit) = token.split_at(number_len);
  if !number.bytes().any(|b| b.is_ascii_digit()) {
    return None;
  }
  let value = number.parse::<f64>().ok().filter(|v| v.is_finite())?;
  match unit.to_lowercase().as_str() {
    "" | "s" => Some(value),
    "ms" => Some(value / 1000.0),
    "m" => Some(value * 60.0),
    "h" => Some(value * 60.0 * 60.0),
    "d" => Some(value * 60.0 * 60.0 * 24.0),
    _ => None,
  }
}

/// `getSleepSequentialSeparator(suffix)` (§2.16 step 5): the commands after the sleep, or `None`
/// when the sleep is piped, backgrounded or followed by another word. Whitespace other than
/// `\n` is skipped first, as the TypeScript version did.
fn sequential_tail(suffix: &str) -> Option<&str> {
  let rest = suffix.trim_start_matches(|c| c != '\n' && is_js_whitespace(c));
  if rest.is_empty() {
    Some(rest)
  } else if rest.starts_with("&&") || rest.starts_with("||") {
    Some(&rest[2..])
  } else if rest.starts_with([';', '\n']) {
    Some(&rest[1..])
  } else {
    None
  }
}

/// The escape hatch of §2.16 step 7 for a standalone sleep of `secs` seconds: `None` when the
/// comment allows it, otherwise the guidance to block with.
fn standalone_guidance(comment: Option<&str>, secs: f64) -> Option<Guidance> {
  let Some(reason) = comment.and_then(|c| trim(c).strip_prefix(INTENTIONAL_SLEEP_COMMENT_PREFIX))
  else {
    return Some(Guidance::Standalone);
  };
  let reason = trim(reason);
  if reason.encode_utf16().count() < MIN_INTENTIONAL_SLEEP_REASON_LENGTH {
    return Some(Guidance::ReasonTooShort);
  }
  if secs > MAX_INTENTIONAL_SLEEP_SECONDS {
    return Some(Guidance::TooLong);
  }
  tracing::debug!(duration_seconds = secs, reason, "intentional sleep allowed");
  None
}

/// The algorithm of CONTRACT.md §2.16, steps 0–8.
fn detect_blocked_sleep(command: &str) -> Option<BlockedSleep> {
  let unwrapped = strip_shell_wrapper(command);
  let SplitComment { command, comment } = split_trailing_shell_comment(&unwrapped, true);
  let after_sleep = trim(&command).strip_prefix("sleep")?;
  if !after_sleep.starts_with(is_js_whitespace) {
    return None;
  }
  let rest = trim_start(after_sleep);
  let token_len = rest
    .find(|c| is_js_whitespace(c) || matches!(c, ';' | '&' | '|'))
    .unwrap_or(rest.len());
  let (token, after_token) = rest.split_at(token_len);
  let secs = parse_sleep_duration_to_seconds(token)?;
  if secs < BLOCKED_SLEEP_THRESHOLD_SECONDS {
    return None;
  }
  let tail = trim(sequential_tail(after_token)?);
  let (description, guidance) = if tail.is_empty() {
    let guidance = standalone_guidance(comment.as_deref(), secs)?;
    (format!("standalone sleep {token}"), guidance)
  } else {
    (
      format!("sleep {token} followed by: {tail}"),
      Guidance::FollowedBy,
    )
  };
  Some(BlockedSleep {
    description,
    guidance,
  })
}

/// `detectBlockedSleepPattern(command)` (CONTRACT.md §2.16, §3.1): `None` when the command is
/// allowed, otherwise the description (`standalone sleep 5`, `sleep 5 followed by: ls`), exactly
/// as the TypeScript function returned it. One shell wrapper is stripped first.
#[must_use]
pub fn detect_blocked_sleep_pattern(command: &str) -> Option<String> {
  detect_blocked_sleep(command).map(|blocked| blocked.description)
}

/// `blockedSleepMessage(command)` (CONTRACT.md §2.16, §3.1): `None` when the command is allowed,
/// otherwise the whole guidance message the shell tool shows.
#[must_use]
pub fn blocked_sleep_message(command: &str) -> Option<String> {
  detect_blocked_sleep(command).map(|blocked| {
    format!(
      "Blocked: {}. Run blocking commands in the background with is_background: true. For streaming events (watching logs, polling APIs), use the Monitor tool. {}",
      blocked.description,
      blocked.guidance.text()
    )
  })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::guards::test_support::{expect_eq, input_str, run_table};

  #[test]
  fn detect_blocked_sleep_pattern_vectors() {
    run_table("detectBlockedSleepPattern", |case| {
      let want = case["expected"].as_str();
      expect_eq(
        detect_blocked_sleep_pattern(input_str(case)?).as_deref(),
        want,
      )
    });
  }

  #[test]
  fn blocked_sleep_message_vectors() {
    run_table("blockedSleepMessage", |case| {
      let want = case["expected"].as_str();
      expect_eq(blocked_sleep_message(input_str(case)?).as_deref(), want)
    });
  }

  #[test]
  fn parses_durations() {
    let cases = [
      ("5", Some(5.0)),
      ("2.", Some(2.0)),
      (".5", Some(0.5)),
      ("2000ms", Some(2.0)),
      ("2000MS", Some(2.0)),
      ("1.5h", Some(5400.0)),
      ("1d", Some(86400.0)),
      ("1.2.3", None),
      (".", None),
      ("", None),
      ("5x", None),
      ("-5", None),
      ("1e3", None),
      ("5\u{212a}", None),
    ];
    for (token, want) in cases {
      assert_eq!(parse_sleep_duration_to_seconds(token), want, "{token:?}");
    }
    let huge = "9".repeat(400);
    assert_eq!(parse_sleep_duration_to_seconds(&huge), None);
  }

  #[test]
  fn sleep_edge_cases() {
    let cases = [
      ("sleep\t5", Some("standalone sleep 5")),
      ("sleep\n5", Some("standalone sleep 5")),
      ("sleep 5\r\nls", Some("sleep 5 followed by: ls")),
      ("sleep 5 ;; ls", Some("sleep 5 followed by: ; ls")),
      ("sleep 5&", None),
      ("sleep 5\u{3000}&& ls", Some("sleep 5 followed by: ls")),
      ("FOO=1 bash -lc 'sleep 3'", Some("standalone sleep 3")),
      ("sleep 5 # intentional-sleep: 日本語日本語日本", None),
      (
        "sleep 5 # intentional-sleep: 😀😀😀",
        Some("standalone sleep 5"),
      ),
      ("sleep 5 # intentional-sleep: 😀😀😀😀", None),
    ];
    for (input, want) in cases {
      assert_eq!(
        detect_blocked_sleep_pattern(input).as_deref(),
        want,
        "{input:?}"
      );
    }
  }
}
