//! Carriage-return redraws as a person reads them (API.md §6.5 "Lines still
//! flow"): a terminal program that redraws a line with `\r` (a progress bar, a
//! spinner) shows only its last frame, so a terminal task's lines and output
//! file keep only that frame. The rule is the output tail's
//! (`normalize_carriage_returns`, CONTRACT.md §2.14): within a line, the last
//! non-empty `\r`-separated frame; `\r\n` (a terminal's `ONLCR` line end) is a
//! line end.
//!
//! [`FrameCollapser`] applies it to text that arrives in pieces cut anywhere:
//! it passes text on at once and tells its consumer to forget the current line
//! when a later frame starts, so nothing is held but a trailing `\r` whose
//! meaning the next piece decides.

/// What the consumer of a [`FrameCollapser`] must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramePiece<'a> {
  /// Append this text (it may contain line ends).
  Text(&'a str),
  /// Forget the current line's text so far: a new frame of it starts.
  ResetLine,
}

/// The streaming `\r` rule; one per stream.
#[derive(Debug, Default)]
pub struct FrameCollapser {
  /// The last piece ended with `\r`: the next character decides.
  pending_cr: bool,
}

impl FrameCollapser {
  /// Feeds one piece of text; `out` gets what to do, in order.
  pub fn push<'a>(&mut self, text: &'a str, out: &mut impl FnMut(FramePiece<'a>)) {
    let mut rest = text;
    if self.pending_cr && !rest.is_empty() {
      self.pending_cr = false;
      self.after_cr(rest, out);
    }
    while let Some(cr) = rest.find('\r') {
      if cr > 0 {
        out(FramePiece::Text(&rest[..cr]));
      }
      rest = &rest[cr + 1..];
      if rest.is_empty() {
        self.pending_cr = true;
        return;
      }
      self.after_cr(rest, out);
    }
    if !rest.is_empty() {
      out(FramePiece::Text(rest));
    }
  }

  /// What a `\r` means, given the text that follows it (not empty): a line
  /// end before `\n`, another `\r` or the end; otherwise a new frame, unless
  /// the frame is empty (`\r` then `\n`), which the rule skips.
  fn after_cr<'a>(&mut self, next: &'a str, out: &mut impl FnMut(FramePiece<'a>)) {
    match next.as_bytes()[0] {
      b'\n' | b'\r' => {}
      _ => out(FramePiece::ResetLine),
    }
  }

  /// The end of the stream: a held `\r` ends nothing more.
  pub fn finish(&mut self) {
    self.pending_cr = false;
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Applies the pieces to lines, as a consumer does.
  fn collapse(pieces: &[&str]) -> String {
    let mut collapser = FrameCollapser::default();
    let mut done = String::new();
    let mut line = String::new();
    for piece in pieces {
      collapser.push(piece, &mut |p| match p {
        FramePiece::Text(text) => {
          for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
              done.push_str(&line);
              done.push('\n');
              line.clear();
            }
            line.push_str(part);
          }
        }
        FramePiece::ResetLine => line.clear(),
      });
    }
    collapser.finish();
    done + &line
  }

  /// The tail's rule on a whole text.
  fn reference(text: &str) -> String {
    text
      .replace("\r\n", "\n")
      .split('\n')
      .map(|line| line.rsplit('\r').find(|f| !f.is_empty()).unwrap_or(""))
      .collect::<Vec<_>>()
      .join("\n")
  }

  #[test]
  fn keeps_the_last_frame_of_each_line() {
    assert_eq!(
      collapse(&["progress 10%\rprogress 20%\rdone\r\n"]),
      "done\n"
    );
    assert_eq!(collapse(&["a\r\nb\r\n"]), "a\nb\n");
    assert_eq!(collapse(&["abc\r\rdef"]), "def");
    assert_eq!(collapse(&["abc\r"]), "abc");
    assert_eq!(collapse(&["\rabc\r\n"]), "abc\n");
  }

  #[test]
  fn any_cut_gives_the_rule_of_the_whole_text() {
    let texts = [
      "progress 10%\rprogress 20%\r\nnext\r\n",
      "a\r\r\nb\rc\r\r\rd\n\r\re",
      "\r\r\n\n\rx",
      "spinner |\rspinner /\rspinner -\rok\r\n$ ",
    ];
    for text in texts {
      let want = reference(text);
      for cut in 0..=text.len() {
        assert_eq!(
          collapse(&[&text[..cut], &text[cut..]]),
          want,
          "{text:?} cut at {cut}"
        );
      }
      let bytes: Vec<String> = text.chars().map(String::from).collect();
      let pieces: Vec<&str> = bytes.iter().map(String::as_str).collect();
      assert_eq!(collapse(&pieces), want, "{text:?} char by char");
    }
  }
}
