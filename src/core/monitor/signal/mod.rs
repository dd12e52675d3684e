//! Signal per token (API.md §6.7): batch windows, the importance lane (important lines held for
//! the next token) and digests of dropped lines, as pure pieces the native pipeline drives with
//! its own clock.
//!
//! * [`config`]: the validated options ([`SignalConfig`]).
//! * [`lane`]: per line, accepted, held or dropped, and into which window ([`SignalLane`],
//!   [`Out`]).
//! * [`digest`]: what was dropped since the previous notification ([`DropDigest`]) and the
//!   digest line.
//! * [`context`]: the lines around an important line that travel with it.
//! * [`template`]: line templates (numbers, ids and hashes collapsed), for context and digests.
//! * [`text`]: the summary, result and display texts of a batch notification.

pub mod config;
pub mod context;
pub mod digest;
pub mod lane;
pub mod template;
pub mod text;

#[cfg(test)]
mod tests;

pub use config::{DigestSetting, SignalConfig, SignalConfigError, SignalOptions, SignalSettings};
pub use digest::{digest_display_line, digest_line, result_with_digest, DigestNote, DropDigest};
pub use lane::{LineText, Mark, Out, SignalLane};
pub use text::{
  batch_display_text, batch_meta_lines, batch_result, batch_summary, important_lines, shown_lines,
};
