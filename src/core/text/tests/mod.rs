//! Tests across the text folder: the streaming decoder and stripper against
//! their one-shot forms (`stream.rs`), and `readTaskOutput` (`read_output.rs`).

mod read_output;
mod stream;
