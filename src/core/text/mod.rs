//! Text utilities (CONTRACT.md §1.7, §2.14, §2.18, §3.7–3.9, §3.13, §3.14, §3.16–3.18, §4
//! items 1–3). Pure Rust; the napi glue and the monitor pipeline use these re-exports.

mod ansi;
mod binary;
mod byte_set;
mod bytes;
mod clean_stream;
mod controls;
mod csi_bytes;
mod fast;
mod frames;
mod length;
mod line_buffer;
mod line_splitter;
mod node_style;
mod output_file;
mod output_text;
mod paths;
mod plain;
mod prefix_finder;
mod read_output;
mod tail;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
mod utf16;
mod utf8;
mod whitespace;
mod xml;

pub use ansi::{strip_ansi, AnsiStreamStripper, MAX_HELD_SEQUENCE_CHARS};
pub use binary::{is_binary, DEFAULT_BINARY_SAMPLE_SIZE};
pub use byte_set::ByteSet;
#[cfg(target_arch = "x86_64")]
pub use bytes::has_avx2;
pub use bytes::{find_either, find_line_end_or_not_plain, plain_masks, plain_masks_of, PlainMasks};
pub use clean_stream::CleanTextStream;
pub use controls::{
  sanitize_monitor_line, sanitize_monitor_line_keeps, strip_display_control_chars,
  strip_terminal_control_sequences, truncate_notification_label, STRUCTURAL_ENVELOPE_TAGS,
};
pub use fast::{
  carry_add, count_lines, incomplete_utf8_tail, scan_discarded, Discarded, LineCount, Source,
};
pub use frames::{FrameCollapser, FramePiece};
pub use length::{truncate_code_points, truncate_utf16, utf16_len};
pub use line_buffer::{LineBuffer, DEFAULT_LINE_BUFFER_MAX_CODE_POINTS, LINE_TRUNCATION_MARKER};
pub use line_splitter::{LineSplitter, PARTIAL_LINE_CAP_UNITS};
pub use node_style::{js_number, property_path, quoted};
pub use paths::{get_monitor_output_path, sanitize_filename_component, status_file_path_for};
pub use plain::{
  first_and_last, plain_line_texts, plain_line_texts_rev, plain_lines_counted, PlainImportant,
};
pub use read_output::{
  read_task_output, Grep, OutputRead, DEFAULT_READ_OUTPUT_MAX_BYTES, MAX_READ_OUTPUT_MAX_BYTES,
  MIN_READ_OUTPUT_MAX_BYTES,
};
pub use tail::{
  clean_output_tail, clean_output_text, read_task_output_tail, OutputTail,
  MAX_TASK_OUTPUT_TAIL_BYTES,
};
pub use utf16::push_utf16;
pub use utf8::Utf8StreamDecoder;
pub use whitespace::{ecma_trim, ecma_trim_end, ecma_trim_start, is_ecma_whitespace};
pub use xml::escape_xml;
