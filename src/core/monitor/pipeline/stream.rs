//! One stream's state (decoder, stripper, splitter, frames) and its read loop: the fast
//! paths straight from the raw bytes where they apply, the exact path elsewhere.

use crate::text::plain_lines_counted;
use crate::text::{
  count_lines, find_either, find_line_end_or_not_plain, incomplete_utf8_tail, scan_discarded,
  CleanTextStream, FrameCollapser, FramePiece, LineCount, Source, MAX_HELD_SEQUENCE_CHARS,
};
use crate::text::{LineSplitter, PARTIAL_LINE_CAP_UNITS};

use super::admission::{Counting, Decide};

#[derive(Default)]
pub(super) struct StreamState {
  pub(super) text: CleanTextStream,
  pub(super) splitter: LineSplitter,
  /// Terminal output: `\r` redraws keep their last frame ([`LinePipeline::set_frames`]).
  pub(super) frames: FrameCollapser,
}

impl StreamState {
  /// Text of a read through the frame rule into the splitter.
  pub(super) fn push_frames(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
    let splitter = &mut self.splitter;
    self.frames.push(text, &mut |piece| match piece {
      FramePiece::Text(text) => splitter.push_text(text, emit),
      FramePiece::ResetLine => splitter.reset_line(),
    });
  }
}

/// Bytes an exact piece of a read starts with while the decoder or the
/// stripper holds something: usually enough to finish a split char or escape
/// sequence, after which the fast paths resume.
const RESYNC_BYTES: usize = 64;

impl StreamState {
  /// One read, through the fast paths where they apply and the exact path
  /// elsewhere; `decide` gets the exact path's lines and the counted ones.
  /// With [`Counting::All`], no line of the read can be accepted (the
  /// throttle has no token and the read's time is fixed), so lines are only
  /// counted. With [`Counting::Plain`] (a lane with `important` or `digest`),
  /// only runs of plain lines are counted, up to the first line that may be
  /// important ([`crate::text::PlainImportant`]); that line and every line that is not
  /// plain take the exact path, and `decide` says after each whether counting
  /// goes on.
  ///
  /// The read is cut into pieces. Where the decoder and the stripper hold
  /// nothing, the rest of an over-long line is skipped up to its end
  /// ([`scan_discarded`]) and, when counting, lines are counted
  /// ([`count_lines`]), both straight from the raw bytes, without building
  /// text. Everything else takes the exact path, in pieces that change nothing:
  /// the decoder is streaming; the stripper gives the same output for any cut
  /// as long as no piece but the last makes it give up on a held sequence
  /// (each keeps [`CleanTextStream::held_chars`] plus its length within
  /// [`MAX_HELD_SEQUENCE_CHARS`]), and the fast paths end only where it holds
  /// nothing; the splitter caps the partial line only at the end of the read.
  pub(super) fn feed(&mut self, bytes: &[u8], decide: &mut impl Decide) {
    // The fast paths never see a char the decoder would hold for the next read.
    let scan_end = bytes.len() - incomplete_utf8_tail(bytes);
    // With `Counting::Plain`: `bytes[..plain_end]` ends a run of plain lines that starts at or
    // before `at` (so each line search looks at each byte once).
    let mut plain_end = 0;
    // The count of the run `plain_lines_counted` found, from where it started: when the whole
    // run may be counted, it is, without counting the lines again.
    let mut plain_count: Option<(usize, LineCount)> = None;
    let mut at = 0;
    while at < bytes.len() {
      let counting = decide.counting();
      if self.text.is_idle() && at < scan_end {
        let scannable = &bytes[at..scan_end];
        if self.splitter.is_discarding() {
          let discarded = scan_discarded(scannable);
          self
            .splitter
            .add_discarded(discarded.text_bytes, discarded.line_ended);
          at += discarded.consumed;
          if discarded.consumed > 0 {
            continue;
          }
        } else if counting != Counting::Off && !self.splitter.mid_line() {
          let limit = match counting {
            Counting::Plain { tight } => {
              if plain_end <= at {
                let (len, count) = plain_lines_counted(scannable, tight);
                plain_end = at + len;
                plain_count = Some((at, count));
              }
              decide.countable(&bytes[at..plain_end])
            }
            _ => scannable.len(),
          };
          let (count, consumed) = match plain_count.take() {
            Some((start, count)) if start == at && at + limit == plain_end => (count, limit),
            _ => count_lines(&scannable[..limit], PARTIAL_LINE_CAP_UNITS, Source::Raw),
          };
          self.splitter.add_counted(count, &mut 0);
          decide.counted(count, &scannable[..consumed]);
          at += consumed;
          if consumed > 0 {
            continue;
          }
        }
      }
      let rest = &bytes[at..];
      let len = self.exact_piece_len(rest, counting != Counting::Off || decide.may_count_soon());
      let piece = &rest[..len];
      at += len;
      let mut emit = |line: &str| decide.line(line);
      if at == bytes.len()
        && len > PARTIAL_LINE_CAP_UNITS
        && self.text.is_idle()
        && !self.splitter.mid_line()
        && find_line_end_or_not_plain(piece).is_none()
      {
        // A plain partial line over the cap ends the read: cut at once.
        let text = std::str::from_utf8(piece).expect("ASCII is UTF-8");
        self.splitter.push_last_partial(text, &mut emit);
        break;
      }
      let text = self.text.push(piece);
      if counting == Counting::All {
        let mut dropped = 0;
        self
          .splitter
          .push_text_counting(text, &mut dropped, &mut emit);
        decide.counted(
          LineCount {
            non_blank: dropped,
            ..LineCount::default()
          },
          &[],
        );
      } else {
        self.splitter.push_text(text, &mut emit);
      }
    }
    self.splitter.end_read(&mut |line| decide.line(line));
  }

  /// How much of `rest` (the rest of a read) the exact path takes next: all of
  /// it when nothing faster applies to what follows; otherwise a piece that
  /// lets the stripper give up on no sequence the whole read would complete.
  fn exact_piece_len(&self, rest: &[u8], counting: bool) -> usize {
    let held = self.text.held_chars();
    let room = MAX_HELD_SEQUENCE_CHARS.saturating_sub(held);
    if room == 0 {
      return rest.len();
    }
    if held > 0 {
      // Finish the split char or sequence; a long held one (an OSC waiting
      // for its terminator) gets all the room there is.
      let piece = if held < RESYNC_BYTES {
        RESYNC_BYTES
      } else {
        room
      };
      return rest.len().min(piece).min(room);
    }
    if !counting && !self.splitter.is_discarding() {
      return rest.len();
    }
    // The line the fast paths could not take, or its first `room` bytes when
    // it is longer and an escape sequence could start in it.
    let line = find_either(rest, b'\n', b'\n').map_or(rest.len(), |newline| newline + 1);
    if line <= room || find_either(&rest[..line], ESC, C1_LEAD).is_none() {
      line
    } else {
      room
    }
  }
}

/// ESC, and the UTF-8 lead byte of U+009B (CSI): where escape sequences start.
const ESC: u8 = 0x1B;
const C1_LEAD: u8 = 0xC2;
