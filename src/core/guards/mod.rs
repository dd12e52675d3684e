//! Shell-command guards (CONTRACT.md §1.5, §2.11, §2.16; vectors §3.1–3.6, §3.15).
//!
//! Pure functions over command strings: the foreground sleep guard, trailing-comment and
//! background-`&` handling, shell-wrapper stripping, monitor command normalisation, command
//! substitution detection and monitor parameter validation with directory containment.
//!
//! Every parser here is a single left-to-right pass over the input sharing one quoting scanner
//! (`scan`), with constant state per character and no recursion, so any input (1 MiB of `$(`
//! included) is handled in linear time without panicking.

mod background;
mod comment;
mod containment;
mod monitor_command;
mod scan;
mod sleep;
mod substitution;
mod token;
mod unquote;
mod validate;
mod whitespace;
mod wrapper;

#[cfg(test)]
mod robustness;
#[cfg(test)]
mod test_support;

pub use background::{
  has_non_final_top_level_background_operator, has_top_level_trailing_background_operator,
  strip_trailing_background_amp,
};
pub use comment::{split_trailing_shell_comment, trim_trailing_shell_comment, SplitComment};
pub use containment::is_path_within;
pub use monitor_command::{
  has_unsafe_monitor_background_operator, normalize_monitor_command, NormalizedMonitorCommand,
};
pub use sleep::{blocked_sleep_message, detect_blocked_sleep_pattern};
pub use substitution::detect_command_substitution;
pub use validate::{
  validate_monitor_params, MonitorParams, NumberParam, StringParam, ValidationContext,
};
pub use wrapper::strip_shell_wrapper;
