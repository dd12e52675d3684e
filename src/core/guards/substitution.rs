//! Command and process substitution detection (CONTRACT.md §2.11 `detectCommandSubstitution`).

use super::scan::{Class, Scanner};

/// `detectCommandSubstitution(command)` (CONTRACT.md §2.11): whether bash would run a command
/// or process substitution. Live constructs: `$(` and a backtick unquoted or inside double
/// quotes; `<(` and `>(` unquoted. Nothing is live inside single quotes, and a backslash outside
/// them escapes the next character. `$((…))` counts (conservative). Same rules on every platform.
#[must_use]
pub fn detect_command_substitution(command: &str) -> bool {
  Scanner::new(command).any(|(_, _, class)| class == Class::SubstitutionStart)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn follows_bash_quoting() {
    let cases = [
      ("tail -f $(ls)", true),
      ("tail -f \"$(ls)\"", true),
      ("tail -f '$(ls)'", false),
      ("tail -f \\$(ls)", false),
      ("tail -f \"\\$(ls)\"", false),
      ("echo `id`", true),
      ("echo \"`id`\"", true),
      ("echo '`id`'", false),
      ("echo \\`id\\`", false),
      ("diff <(a) b", true),
      ("tee >(a)", true),
      ("echo \"<(a) >(b)\"", false),
      ("echo $((1 + 2))", true),
      ("echo $ (a) < (b)", false),
      ("FOO=\"$(id)\" tail -f log", true),
      ("FOO=`id` tail -f log", true),
      ("echo 'a'$(b)", true),
      ("echo 'a\\'$(b)", true),
      ("echo \"a\\\"$(b)\"", true),
      ("", false),
      ("日本$(x)", true),
      ("echo $'\\'' $(id)", true),
      ("echo $'$(id)'", false),
      ("echo \"$'\" $(id)", true),
    ];
    for (input, want) in cases {
      assert_eq!(detect_command_substitution(input), want, "{input:?}");
    }
  }
}
