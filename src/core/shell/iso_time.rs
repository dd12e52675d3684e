//! JavaScript's `new Date(ms).toISOString()` for the status sidecar
//! (CONTRACT.md §2.14), without a date library.

/// The largest time value a JavaScript `Date` holds (ECMA-262 TimeClip).
const MAX_TIME_MS: f64 = 8.64e15;
const MS_PER_DAY: i64 = 86_400_000;

/// `new Date(ms).toISOString()`: `YYYY-MM-DDTHH:mm:ss.sssZ`, with a signed
/// six-digit year outside 0000–9999. The time is truncated towards zero to
/// whole milliseconds, as TimeClip does. `None` where JavaScript throws a
/// `RangeError` (NaN, infinities, beyond ±8.64e15).
pub(super) fn iso_8601(ms: f64) -> Option<String> {
  if !ms.is_finite() || ms.abs() > MAX_TIME_MS {
    return None;
  }
  let ms = ms.trunc() as i64;
  let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
  let in_day = ms.rem_euclid(MS_PER_DAY);
  let (hours, minutes) = (in_day / 3_600_000, in_day / 60_000 % 60);
  let (seconds, millis) = (in_day / 1000 % 60, in_day % 1000);
  Some(format!(
    "{}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z",
    year_text(year)
  ))
}

fn year_text(year: i64) -> String {
  match year {
    0..=9999 => format!("{year:04}"),
    _ if year < 0 => format!("-{:06}", -year),
    _ => format!("+{year:06}"),
  }
}

/// (year, month 1–12, day 1–31) of a day count since 1970-01-01 in the
/// proleptic Gregorian calendar (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
  let z = days + 719_468;
  let era = z.div_euclid(146_097);
  let day_of_era = z.rem_euclid(146_097);
  let year_of_era =
    (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
  let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  let shifted_month = (5 * day_of_year + 2) / 153;
  let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
  let month = if shifted_month < 10 {
    shifted_month + 3
  } else {
    shifted_month - 9
  };
  let year = year_of_era + era * 400 + i64::from(month <= 2);
  (year, month, day)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn matches_javascript_to_iso_string() {
    // Expected values printed by Node's `new Date(t).toISOString()`.
    let cases: [(f64, &str); 12] = [
      (0.0, "1970-01-01T00:00:00.000Z"),
      (1_700_000_000_123.0, "2023-11-14T22:13:20.123Z"),
      (-1.0, "1969-12-31T23:59:59.999Z"),
      (951_782_400_000.0, "2000-02-29T00:00:00.000Z"),
      (8.64e15, "+275760-09-13T00:00:00.000Z"),
      (-8.64e15, "-271821-04-20T00:00:00.000Z"),
      (-62_167_219_200_000.0, "0000-01-01T00:00:00.000Z"),
      (-62_167_219_200_001.0, "-000001-12-31T23:59:59.999Z"),
      (253_402_300_800_000.0, "+010000-01-01T00:00:00.000Z"),
      (1.9, "1970-01-01T00:00:00.001Z"),
      (-1.5, "1969-12-31T23:59:59.999Z"),
      (1_000_000_000_000.999, "2001-09-09T01:46:40.000Z"),
    ];
    for (ms, expected) in cases {
      assert_eq!(iso_8601(ms).as_deref(), Some(expected), "{ms}");
    }
  }

  #[test]
  fn invalid_times_have_no_iso_form() {
    for ms in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 8.64e15 + 1.0] {
      assert_eq!(iso_8601(ms), None, "{ms}");
    }
  }
}
