//! A terminal's size, and the error of a terminal spawn where there are none: what the spawn
//! takes for terminal mode (API.md §6.5). A leaf of `process`, re-exported by `terminal`.

/// The error text of a terminal spawn where terminals are not implemented.
pub const UNSUPPORTED_MESSAGE: &str =
  "taskstream: terminal mode is not implemented on this platform";

/// A terminal's size in character cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TerminalSize {
  pub cols: u16,
  pub rows: u16,
}

impl TerminalSize {
  /// 120 columns, 40 rows (API.md §6.5).
  pub const DEFAULT: TerminalSize = TerminalSize {
    cols: 120,
    rows: 40,
  };
  /// The largest size accepted: the screen keeps every cell in memory.
  pub const MAX_COLS: u16 = 1000;
  pub const MAX_ROWS: u16 = 1000;

  /// A size within `1..=MAX_COLS` × `1..=MAX_ROWS`, else `None` (the
  /// binding turns that into a `RangeError` naming the field).
  pub fn new(cols: u32, rows: u32) -> Option<TerminalSize> {
    let cols = u16::try_from(cols)
      .ok()
      .filter(|c| (1..=Self::MAX_COLS).contains(c))?;
    let rows = u16::try_from(rows)
      .ok()
      .filter(|r| (1..=Self::MAX_ROWS).contains(r))?;
    Some(TerminalSize { cols, rows })
  }

  /// `InvalidInput` for a size without a column or a row (a `TerminalSize` made by hand;
  /// [`TerminalSize::new`] never gives one): what a spawn or resize refuses.
  pub fn check_not_empty(self) -> std::io::Result<()> {
    if self.cols == 0 || self.rows == 0 {
      let message = "a terminal needs at least one column and one row";
      return Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        message,
      ));
    }
    Ok(())
  }
}

impl Default for TerminalSize {
  fn default() -> Self {
    Self::DEFAULT
  }
}
