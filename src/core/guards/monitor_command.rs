//! Monitor command normalisation and background-operator rejection (CONTRACT.md §2.11,
//! vectors §3.6).

use super::background::{
  has_non_final_top_level_background_operator, strip_trailing_background_amp,
};
use super::substitution::detect_command_substitution;
use super::unquote::remove_quotes;
use super::whitespace::trim;
use super::wrapper::{parse_wrapper, Wrapper};

/// The three views of a monitor command (CONTRACT.md §2.11 `normalizeMonitorCommand`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizedMonitorCommand {
  /// The inner script without a trailing bare `&`: what the command does.
  pub analysis_command: String,
  /// Env words, inner script and argv suffix joined by spaces: what permissions and the
  /// substitution check look at.
  pub safety_command: String,
  /// The command to run: env and wrapper words as given, the re-quoted script, the suffix.
  pub spawn_command: String,
  /// Whether a trailing bare `&` was removed from the script or the suffix.
  pub stripped_trailing_amp: bool,
}

/// `normalizeMonitorCommand(command)` (CONTRACT.md §2.11, §3.6): parse an optional env prefix and
/// shell wrapper, strip one bare trailing `&` from the script and one from the argv suffix.
#[must_use]
pub fn normalize_monitor_command(command: &str) -> NormalizedMonitorCommand {
  let trimmed = trim(command);
  let normalized = match parse_wrapper(trimmed) {
    Some(wrapper) => normalize_wrapped(&wrapper),
    None => normalize_plain(trimmed),
  };
  if normalized.stripped_trailing_amp {
    tracing::debug!(
      "Stripped trailing & from monitor command — monitor lifecycle handles backgrounding"
    );
  }
  normalized
}

/// A command without a recognised wrapper: all three views are the command without its `&`.
fn normalize_plain(trimmed: &str) -> NormalizedMonitorCommand {
  let analysis = strip_trailing_background_amp(trimmed);
  NormalizedMonitorCommand {
    stripped_trailing_amp: analysis != trimmed,
    safety_command: analysis.clone(),
    spawn_command: analysis.clone(),
    analysis_command: analysis,
  }
}

/// A wrapped command: the `&` is stripped inside the script and in the suffix separately.
fn normalize_wrapped(wrapper: &Wrapper<'_>) -> NormalizedMonitorCommand {
  let analysis = strip_trailing_background_amp(wrapper.script);
  let raw_suffix = trim(wrapper.suffix);
  let suffix = strip_trailing_background_amp(raw_suffix);
  let script = match wrapper.script_quote {
    Some(quote) => format!("{quote}{analysis}{quote}"),
    None => analysis.clone(),
  };
  let safety_command = join_non_empty(
    wrapper
      .env_tokens
      .iter()
      .copied()
      .chain([analysis.as_str(), suffix.as_str()]),
  );
  let wrapper_words = wrapper.wrapper_tokens.join(" ");
  let spawn_command = join_non_empty([wrapper_words.as_str(), &script, &suffix]);
  NormalizedMonitorCommand {
    stripped_trailing_amp: analysis != wrapper.script || suffix != raw_suffix,
    safety_command,
    spawn_command,
    analysis_command: analysis,
  }
}

/// The non-empty parts joined by single spaces.
fn join_non_empty<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
  parts
    .into_iter()
    .filter(|part| !part.is_empty())
    .collect::<Vec<_>>()
    .join(" ")
}

/// `hasUnsafeMonitorBackgroundOperator(command)` (CONTRACT.md §2.11, §3.6): whether the inner
/// script or the argv suffix of the (optionally wrapped) command has a non-final top-level `&`.
/// The script is checked both as written and as the wrapper shell receives it after quote
/// removal, so `bash -c tail\ x\ \&\ y` is caught too. Not comment-aware:
/// `tail -f app.log & # watch` is rejected (CONTRACT.md §5).
#[must_use]
pub fn has_unsafe_monitor_background_operator(command: &str) -> bool {
  let trimmed = trim(command);
  match parse_wrapper(trimmed) {
    Some(wrapper) => {
      has_non_final_top_level_background_operator(wrapper.script)
        || has_non_final_top_level_background_operator(wrapper.suffix)
        || has_non_final_top_level_background_operator(&remove_quotes(wrapper.script_token))
    }
    None => has_non_final_top_level_background_operator(trimmed),
  }
}

/// Check 6 of `validateMonitorParams` (CONTRACT.md §2.11): a live command or process
/// substitution in the safety command, in the command as the outer shell parses it (a
/// substitution inside a double-quoted wrapper script runs there), or in the wrapper script as
/// the wrapper shell receives it after quote removal (`bash -c "tail \$(x)"`).
pub(super) fn has_monitor_command_substitution(command: &str, safety_command: &str) -> bool {
  detect_command_substitution(safety_command)
    || detect_command_substitution(command)
    || parse_wrapper(trim(command))
      .is_some_and(|wrapper| detect_command_substitution(&remove_quotes(wrapper.script_token)))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::guards::test_support::{expect_eq, input_str, run_table};
  use serde_json::Value;

  fn expected_normalized(expected: &Value) -> Result<NormalizedMonitorCommand, String> {
    let field = |name: &str| {
      expected[name]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("expected.{name} is not a string"))
    };
    Ok(NormalizedMonitorCommand {
      analysis_command: field("analysisCommand")?,
      safety_command: field("safetyCommand")?,
      spawn_command: field("spawnCommand")?,
      stripped_trailing_amp: expected["strippedTrailingAmp"]
        .as_bool()
        .ok_or("expected.strippedTrailingAmp is not a bool")?,
    })
  }

  #[test]
  fn normalize_monitor_command_vectors() {
    run_table("normalizeMonitorCommand", |case| {
      let want = expected_normalized(&case["expected"])?;
      expect_eq(normalize_monitor_command(input_str(case)?), want)
    });
  }

  #[test]
  fn has_unsafe_monitor_background_operator_vectors() {
    run_table("hasUnsafeMonitorBackgroundOperator", |case| {
      let want = case["expected"].as_bool().ok_or("expected is not a bool")?;
      expect_eq(
        has_unsafe_monitor_background_operator(input_str(case)?),
        want,
      )
    });
  }

  #[test]
  fn normalize_edge_cases() {
    let n = normalize_monitor_command("FOO=1 bash -c '' x &");
    assert_eq!(n.analysis_command, "");
    assert_eq!(n.safety_command, "FOO=1 x");
    assert_eq!(n.spawn_command, "FOO=1 bash -c '' x");
    assert!(n.stripped_trailing_amp);

    let n = normalize_monitor_command("  cmd /c tail x &  ");
    assert_eq!(n.analysis_command, "tail");
    assert_eq!(n.safety_command, "tail x");
    assert_eq!(n.spawn_command, "cmd /c tail x");
    assert!(n.stripped_trailing_amp);

    let n = normalize_monitor_command("bash -c \"tail -f 'a b' &\"");
    assert_eq!(n.spawn_command, "bash -c \"tail -f 'a b'\"");
    assert_eq!(n.analysis_command, "tail -f 'a b'");
  }

  #[test]
  fn unsafe_background_edge_cases() {
    let cases = [
      ("FOO=1 bash -c 'a & b'", true),
      ("bash -c 'a' b & c", true),
      ("bash -c 'a' b &", false),
      ("bash -c 'a &' &", false),
      ("bash -c 'a && b' || c", false),
      ("  ", false),
      ("bash -c tail\\ x\\ \\&\\ y", true),
      ("bash -c $'tail x & y'", true),
    ];
    for (input, want) in cases {
      assert_eq!(
        has_unsafe_monitor_background_operator(input),
        want,
        "{input:?}"
      );
    }
  }

  #[test]
  fn substitution_hidden_from_the_safety_command() {
    let cases = [
      ("bash -c \"echo '$(id)'\"", true),
      ("bash -c \"tail \\$(x)\"", true),
      ("bash -c tail\\ \\$\\(x\\)", true),
      ("bash -c $'tail \\044(x)'", true),
      ("bash -c 'tail $(x)'", true),
      ("FOO=$(id) bash -c 'tail x'", true),
      ("bash -c 'tail x' $(id)", true),
      ("bash -c 'tail \\$(x)'", false),
      ("bash -c \"tail '\\$(x)'\"", false),
      ("tail -f '$(literal)'", false),
    ];
    for (command, want) in cases {
      let safety = normalize_monitor_command(command).safety_command;
      assert_eq!(
        has_monitor_command_substitution(command, &safety),
        want,
        "{command:?}"
      );
    }
  }
}
