//! The lane's rules (§6.7) with an injected clock.

use super::*;
use crate::monitor::throttle::{ThrottleConfig, TokenBucket};
use crate::text::test_support::XorShift;

const THROTTLE: Option<ThrottleConfig> = Some(ThrottleConfig {
  burst: 5,
  refill_ms: 1000,
});

fn burst(burst: u32) -> Option<ThrottleConfig> {
  Some(ThrottleConfig {
    burst,
    refill_ms: 1000,
  })
}

fn config(
  batch_ms: Option<u64>,
  max_lines: u32,
  important: Option<&str>,
  digest: bool,
) -> SignalConfig {
  SignalConfig::new(SignalOptions {
    batch_ms: batch_ms.map(|n| n as f64),
    max_batch_lines: Some(f64::from(max_lines)),
    important,
    digest,
    ..Default::default()
  })
  .unwrap()
}

/// A lane and everything it sent.
struct Run {
  lane: SignalLane,
  outs: Vec<Out>,
  dropped: u64,
}

impl Run {
  fn new(config: SignalConfig, throttle: Option<ThrottleConfig>) -> Self {
    Self::with_events(config, throttle, 10_000)
  }

  fn with_events(config: SignalConfig, throttle: Option<ThrottleConfig>, max_events: u64) -> Self {
    Self {
      lane: SignalLane::new(config, throttle, max_events, 0),
      outs: Vec::new(),
      dropped: 0,
    }
  }

  fn offer(&mut self, line: &str, now: i64) {
    let outs = &mut self.outs;
    self
      .lane
      .offer(LineText::raw(line), now, &mut |out| outs.push(out));
    self.dropped += self.lane.take_dropped();
  }

  fn offer_all(&mut self, lines: &[&str], now: i64) {
    for line in lines {
      self.offer(line, now);
    }
  }

  fn poll(&mut self, now: i64) {
    let outs = &mut self.outs;
    self.lane.poll(now, &mut |out| outs.push(out));
  }

  fn flush_all(&mut self) {
    let outs = &mut self.outs;
    self.lane.flush_all(&mut |out| outs.push(out));
  }

  /// What was sent since the last call, as line lists (a `Line` as a list of one).
  fn sent(&mut self) -> Vec<Vec<String>> {
    self
      .outs
      .drain(..)
      .map(|out| match out {
        Out::Line { line, .. } => vec![line],
        Out::Batch { lines, .. } => lines,
      })
      .collect()
  }

  fn digests(&mut self) -> Vec<Option<DigestNote>> {
    self
      .outs
      .drain(..)
      .map(|out| match out {
        Out::Line { digest, .. } | Out::Batch { digest, .. } => digest,
      })
      .collect()
  }
}

fn lines(names: &[&str]) -> Vec<String> {
  names.iter().map(|s| s.to_string()).collect()
}

fn numbered(n: usize) -> Vec<String> {
  (0..n).map(|i| format!("l{i}")).collect()
}

fn refs(lines: &[String]) -> Vec<&str> {
  lines.iter().map(String::as_str).collect()
}

// ---- Without batchMs ----

/// The defaults are `throttledEmit`: one token per line, the rest dropped, every line its own
/// `Out::Line` without digest (random lines and times against a bare bucket).
#[test]
fn defaults_are_throttled_emit() {
  let mut rng = XorShift(0x00DE_F017);
  for throttle in [THROTTLE, burst(1), None] {
    let mut run = Run::new(SignalConfig::default(), throttle);
    let mut bucket = throttle.map(|c| TokenBucket::new(c, 0));
    let mut now = 0;
    let (mut expected, mut expected_dropped) = (Vec::new(), 0);
    for i in 0..2000 {
      now += [0, 0, 0, 10, 400, 1000, -300][rng.below(7)];
      let line = format!("line {i}");
      if bucket.as_mut().is_none_or(|b| b.try_take(now)) {
        expected.push(vec![line.clone()]);
      } else {
        expected_dropped += 1;
      }
      run.offer(&line, now);
    }
    assert!(run
      .outs
      .iter()
      .all(|o| matches!(o, Out::Line { digest: None, .. })));
    assert_eq!(run.sent(), expected);
    assert_eq!(run.dropped, expected_dropped);
    assert_eq!(run.lane.deadline(), None);
  }
}

#[test]
fn accepted_lines_are_sanitised() {
  let mut run = Run::new(SignalConfig::default(), None);
  run.offer("<result>x</result>\x01\x7f", 0);
  run
    .lane
    .offer(LineText::sanitised("already".to_owned()), 0, &mut |out| {
      run.outs.push(out)
    });
  assert_eq!(
    run.sent(),
    [
      lines(&["<\u{200B}result>x</\u{200B}result>\x7f"]),
      lines(&["already"])
    ]
  );
}

/// §6.7 important, unbatched: a matching line that finds a token goes out as any line; one
/// that finds the bucket empty is held, and the held lines leave together, as one batch, on
/// the token that refills (at 1000); a line that does not match is dropped.
#[test]
fn important_lines_are_held_for_the_next_token() {
  let mut run = Run::new(config(None, 20, Some("ERR"), false), THROTTLE);
  run.offer_all(&["a", "b", "c", "d", "ERR first"], 0);
  assert_eq!(run.sent().len(), 5, "the burst, the important line as any");
  run.offer("plain", 10);
  run.offer("ERR 1", 20);
  run.offer("plain", 30);
  run.offer("ERR 2", 500);
  assert!(run.outs.is_empty());
  assert_eq!(run.dropped, 2);
  assert_eq!(run.lane.held(), 2);
  assert_eq!(run.lane.deadline(), Some(1000), "the refill");
  run.poll(999);
  assert!(run.outs.is_empty());
  // The timer at the refill: no further line needed.
  run.poll(1000);
  assert_eq!(
    run.outs,
    [Out::Batch {
      lines: lines(&["ERR 1", "ERR 2"]),
      marks: vec![Mark::Important; 2],
      digest: None
    }]
  );
  run.outs.clear();
  assert_eq!(run.lane.deadline(), None);
  // The token went to them: the next line finds none.
  run.offer("plain", 1001);
  run.offer("ERR 3", 1002);
  assert!(run.outs.is_empty());
  assert_eq!(run.lane.deadline(), Some(2000));
}

/// A line that comes after the refill (the timer missed it): the held lines leave first, on
/// the token, and the line finds the bucket empty.
#[test]
fn held_lines_leave_before_a_later_line() {
  let mut run = Run::new(config(None, 20, Some("ERR"), true), burst(1));
  run.offer("a", 0);
  run.sent();
  run.offer("dropped", 1);
  run.offer("ERR x", 2);
  run.offer("ERR y", 1500);
  // 1500 is past the refill at 1000: ERR x leaves first (alone), then ERR y is held.
  assert_eq!(
    run.outs,
    [Out::Batch {
      lines: lines(&["ERR x"]),
      marks: vec![Mark::Important; 1],
      digest: Some(DigestNote {
        count: 1,
        first: "dropped".into(),
        last: "dropped".into(),
        templates: None,
      })
    }]
  );
  run.outs.clear();
  assert_eq!(run.lane.held(), 1);
  run.offer("later", 2000);
  assert_eq!(run.sent(), [lines(&["ERR y"])]);
  assert_eq!(run.dropped, 2, "`later` found the bucket spent on ERR y");
}

/// At most `maxBatchLines` are held; a matching line beyond that is dropped, counted and
/// named by the digest.
#[test]
fn at_most_max_batch_lines_are_held() {
  let mut run = Run::new(config(None, 3, Some("ERR"), true), burst(0));
  for i in 0..5 {
    run.offer(&format!("ERR {i}"), i);
  }
  assert_eq!(run.lane.held(), 3);
  assert_eq!(run.dropped, 2);
  assert_eq!(run.lane.deadline(), None, "a bucket of 0 never refills");
  run.flush_all();
  assert_eq!(
    run.outs,
    [Out::Batch {
      lines: lines(&["ERR 0", "ERR 1", "ERR 2"]),
      marks: vec![Mark::Important; 3],
      digest: Some(DigestNote {
        count: 2,
        first: "ERR 3".into(),
        last: "ERR 4".into(),
        templates: None,
      })
    }]
  );
  assert_eq!(run.lane.take_digest(), None);
}

/// Held lines count against `maxEvents`; the lane then ignores lines, and they still leave.
#[test]
fn held_lines_count_as_events() {
  let mut run = Run::with_events(config(None, 20, Some("ERR"), false), burst(1), 3);
  run.offer("a", 0);
  run.offer_all(&["ERR 1", "ERR 2", "ERR 3"], 10);
  assert_eq!(run.lane.events_left(), 0);
  assert_eq!(run.lane.held(), 2);
  assert_eq!(run.dropped, 0);
  run.poll(1000);
  assert_eq!(run.sent(), [lines(&["a"]), lines(&["ERR 1", "ERR 2"])]);
}

/// A stream whose bucket is always spent: as many notifications as the bare bucket sends,
/// however the important lines fall, and every important line gets through while the held
/// cap is not reached.
#[test]
fn held_lines_cost_no_extra_notification_on_a_spent_bucket() {
  let mut rng = XorShift(0x0001_D1E5);
  let mut flushed_with_held = 0;
  for batch in [None, Some(200)] {
    for round in 0..50 {
      let mut run = Run::new(config(batch, 20, Some("ERR"), false), THROTTLE);
      let mut bucket = TokenBucket::new(THROTTLE.unwrap(), 0);
      let (mut bare, mut important) = (0, 0);
      // 20 lines every 50 ms for 10 s: every refill finds a line waiting. Every other round
      // has one tick more, at the refill at 10 s.
      for tick in 0..200 + round % 2 {
        let now = tick * 50;
        run.poll(now);
        for k in 0..20 {
          let is_err = rng.below(80) == 0;
          important += usize::from(is_err);
          let line = if is_err {
            format!("ERR {tick}.{k}")
          } else {
            format!("line {tick}.{k}")
          };
          bare += usize::from(bucket.try_take(now));
          run.offer(&line, now);
        }
      }
      // Lines held after the last refill leave at the flush: the only notification the bare
      // bucket does not send (the next token would have found no line).
      let held_at_end = usize::from(run.lane.held() > 0);
      flushed_with_held += held_at_end;
      run.flush_all();
      let sent = run.sent();
      let delivered = sent.concat();
      let errors = delivered.iter().filter(|l| l.starts_with("ERR")).count();
      assert_eq!(errors, important, "{batch:?} round {round}");
      assert_eq!(sent.len(), bare + held_at_end, "{batch:?} round {round}");
      assert!(sent.iter().all(|n| n.len() <= 20));
    }
  }
  assert!((5..95).contains(&flushed_with_held), "{flushed_with_held}");
}

#[test]
fn an_important_line_spends_a_token_when_there_is_one() {
  let mut run = Run::new(config(None, 20, Some("ERR"), false), burst(1));
  run.offer("ERR first", 0);
  // The token went to the important line: a plain line now finds none.
  run.offer("plain", 0);
  assert_eq!(run.dropped, 1);
  run.offer("ERR second", 0);
  assert_eq!(run.sent(), [lines(&["ERR first"])]);
  assert_eq!(run.lane.held(), 1);
}

/// Matching runs on the sanitised line: control characters are gone, structural tags defanged.
#[test]
fn the_regex_sees_the_sanitised_line() {
  let mut run = Run::new(config(None, 20, Some("^ERROR$|<result>"), false), burst(0));
  run.offer("ERR\x01OR", 0);
  run.offer("<result>", 0);
  run.offer("\x1bERROR", 0);
  run.flush_all();
  assert_eq!(run.sent(), [lines(&["ERROR", "ERROR"])]);
  assert_eq!(run.dropped, 1);
}

// ---- With batchMs ----

#[test]
fn a_window_closes_when_batch_ms_passed() {
  let mut run = Run::new(config(Some(200), 20, None, false), None);
  run.offer("a", 0);
  run.offer("b", 50);
  run.offer("c", 199);
  assert_eq!(run.lane.deadline(), Some(200));
  run.poll(199);
  run.poll(-100); // an injected clock that went back closes nothing
  assert!(run.outs.is_empty());
  run.poll(200);
  assert_eq!(run.sent(), [lines(&["a", "b", "c"])]);
  assert_eq!(run.lane.deadline(), None);
  run.poll(10_000);
  assert!(run.outs.is_empty());
  run.offer("d", 250);
  assert_eq!(run.lane.deadline(), Some(450));
}

/// A missed timer: the line that comes at or after the deadline first closes the window, then
/// opens the next one.
#[test]
fn a_line_after_the_deadline_closes_the_window_first() {
  let mut run = Run::new(config(Some(200), 20, None, false), None);
  run.offer("a", 0);
  run.offer("b", 200);
  assert_eq!(run.sent(), [lines(&["a"])]);
  assert_eq!(run.lane.deadline(), Some(400));
  run.offer("c", 10_000);
  assert_eq!(run.sent(), [lines(&["b"])]);
  run.flush_all();
  assert_eq!(run.sent(), [lines(&["c"])]);
}

#[test]
fn a_window_closes_at_max_batch_lines_and_at_stop() {
  let mut run = Run::new(config(Some(200), 3, None, false), None);
  let all = numbered(7);
  run.offer_all(&refs(&all), 0);
  assert_eq!(run.sent(), [all[0..3].to_vec(), all[3..6].to_vec()]);
  assert_eq!(run.lane.deadline(), Some(200));
  run.flush_all();
  assert_eq!(run.sent(), [all[6..7].to_vec()]);
  run.flush_all();
  assert!(run.outs.is_empty(), "flush_all is idempotent");
  assert_eq!(run.lane.deadline(), None);
}

#[test]
fn max_batch_lines_one_makes_every_line_its_own_batch() {
  let mut run = Run::new(config(Some(200), 1, None, false), None);
  run.offer_all(&["a", "b"], 0);
  assert_eq!(run.sent(), [lines(&["a"]), lines(&["b"])]);
  assert_eq!(run.lane.deadline(), None);
}

/// `throttle: false` with `batchMs: 200`: Gemini's `stream_output`, every line delivered in
/// windows; an `important` pattern changes nothing.
#[test]
fn throttle_off_batches_everything() {
  let mut run = Run::new(config(Some(200), 20, Some("ERR"), true), None);
  let all = numbered(45);
  run.offer_all(&refs(&all), 0);
  run.offer("ERR", 100);
  run.poll(200);
  assert_eq!(
    run.sent(),
    [
      all[0..20].to_vec(),
      all[20..40].to_vec(),
      [&all[40..45], &["ERR".to_owned()][..]].concat()
    ]
  );
  assert_eq!(run.dropped, 0);
  assert_eq!(run.lane.take_digest(), None);
}

/// With batchMs a token is spent per window, not per line.
#[test]
fn one_token_per_window() {
  let mut run = Run::new(config(Some(200), 20, None, false), THROTTLE);
  let all = numbered(140);
  run.offer_all(&refs(&all[..100]), 0);
  let sent = run.sent();
  assert_eq!(sent.len(), 5, "five tokens, five full windows");
  assert_eq!(sent.concat(), all[..100].to_vec());
  // The sixth window opens on the empty bucket: dropped whole, 20 lines, then another.
  run.offer_all(&refs(&all[100..140]), 0);
  assert!(run.outs.is_empty());
  assert_eq!(run.dropped, 40);
  // One second later a token is back.
  run.offer("late", 1000);
  run.poll(1200);
  assert_eq!(run.sent(), [lines(&["late"])]);
}

/// A window opened on an empty bucket keeps dropping until it closes, even when a token
/// comes back meanwhile; the line after it gets the token.
#[test]
fn a_dropped_window_is_dropped_whole() {
  let mut run = Run::new(config(Some(2000), 20, None, false), burst(1));
  run.offer("a", 0);
  run.flush_all();
  assert_eq!(run.sent(), [lines(&["a"])]);
  run.offer("b", 10);
  assert_eq!(run.lane.deadline(), None, "no timer for a dropped window");
  run.offer("c", 1005); // the bucket refilled at 1000, but the window is dropped
  run.offer("d", 2009);
  assert_eq!(run.dropped, 3);
  run.offer("e", 2010); // the dropped window is due: e opens a new one, with the token
  assert_eq!(run.lane.deadline(), Some(4010));
  run.flush_all();
  assert_eq!(run.sent(), [lines(&["e"])]);
  assert_eq!(run.dropped, 3);
}

/// A dropped window that fills up closes like a delivered one: the next line tries a token.
#[test]
fn a_dropped_window_closes_at_max_batch_lines() {
  let mut run = Run::new(
    config(Some(1000), 2, None, false),
    Some(ThrottleConfig {
      burst: 1,
      refill_ms: 100,
    }),
  );
  run.offer_all(&["a", "b"], 0);
  assert_eq!(run.sent(), [lines(&["a", "b"])]);
  run.offer("c", 0);
  run.offer("d", 50);
  assert_eq!(run.dropped, 2);
  run.offer("e", 100);
  run.flush_all();
  assert_eq!(run.sent(), [lines(&["e"])]);
}

/// The flush at stop sends nothing for a dropped window.
#[test]
fn flushing_a_dropped_window_sends_nothing() {
  let mut run = Run::new(config(Some(200), 20, None, false), burst(0));
  run.offer_all(&["a", "b"], 0);
  run.flush_all();
  assert!(run.outs.is_empty());
  assert_eq!(run.dropped, 2);
}

/// §6.7 with batchMs: an important line that meets a dropped window is held; the refill's
/// token delivers a window that starts with the held lines, dated from the first of them, and
/// takes the lines that come until it closes.
#[test]
fn held_lines_open_a_window_at_the_refill() {
  let mut run = Run::new(config(Some(500), 20, Some("ERR"), false), burst(1));
  run.offer("a", 0);
  run.flush_all();
  run.sent();
  run.offer("b", 801);
  run.offer("c", 802);
  assert_eq!(run.dropped, 2);
  run.offer("ERR x", 803);
  run.offer("stack 1", 804); // joins the dropped window
  run.offer("ERR y", 805);
  assert_eq!(run.lane.held(), 2);
  assert_eq!(run.dropped, 3);
  assert_eq!(run.lane.deadline(), Some(1000));
  // The timer at the refill delivers the window, due 500 ms after ERR x was held.
  run.poll(1000);
  assert!(run.outs.is_empty());
  assert_eq!(run.lane.deadline(), Some(1303));
  run.offer("after 1", 1200);
  run.offer("ERR z", 1300); // joins the delivered window: no token spent
  run.poll(1302);
  assert!(run.outs.is_empty());
  run.poll(1303);
  assert_eq!(run.sent(), [lines(&["ERR x", "ERR y", "after 1", "ERR z"])]);
  assert_eq!(run.dropped, 3);
}

/// With batchMs, a line held `batchMs` or more before the refill leaves at the refill, at once:
/// it waits for the token or for the window, whichever is later, never for both.
#[test]
fn a_held_line_waits_for_the_refill_or_the_window_not_both() {
  let mut run = Run::new(config(Some(200), 20, Some("ERR"), false), burst(1));
  run.offer("a", 0);
  run.poll(200);
  run.sent();
  run.offer("ERR held", 300);
  run.offer("ERR too", 900);
  run.poll(1000);
  assert_eq!(run.sent(), [lines(&["ERR held", "ERR too"])]);
  assert_eq!(run.lane.deadline(), None);
}

/// With batchMs, a missed timer: the window the held lines open is dated at the refill, so a
/// line after it closed does not join it; the held lines still leave first.
#[test]
fn a_late_line_finds_the_held_window_closed() {
  let mut run = Run::new(config(Some(200), 20, Some("ERR"), false), burst(1));
  run.offer("a", 0);
  run.poll(200);
  run.sent();
  run.offer("ERR held", 300);
  run.offer("late", 1300); // the refill at 1000 opened a window that closed at 1200
  assert_eq!(run.sent(), [lines(&["ERR held"])]);
  assert_eq!(run.dropped, 1, "late found the bucket spent");
}

/// With batchMs, `maxBatchLines` held lines fill the window they open: it leaves at once.
#[test]
fn a_full_hold_leaves_as_a_full_window() {
  let mut run = Run::new(config(Some(200), 2, Some("ERR"), true), burst(1));
  run.offer_all(&["a", "b"], 0);
  run.sent();
  run.offer_all(&["ERR 1", "x", "ERR 2", "ERR 3"], 10);
  assert_eq!(run.lane.held(), 2);
  assert_eq!(run.dropped, 2);
  run.poll(1000);
  assert_eq!(
    run.outs,
    [Out::Batch {
      lines: lines(&["ERR 1", "ERR 2"]),
      marks: vec![Mark::Important; 2],
      digest: Some(DigestNote {
        count: 2,
        first: "x".into(),
        last: "ERR 3".into(),
        templates: None,
      })
    }]
  );
  assert_eq!(run.lane.deadline(), None);
}

/// Held lines leave at a flush (stop, or before a settled notification), before anything
/// else, without a token, and a dropped window still open ends with them.
#[test]
fn held_lines_are_flushed_whatever_the_bucket() {
  for batch in [None, Some(200)] {
    let mut run = Run::new(config(batch, 20, Some("ERR"), true), burst(1));
    run.offer("a", 0);
    run.flush_all();
    run.sent();
    run.offer("ERR 1", 10);
    run.offer("x", 20);
    run.offer("ERR 2", 30);
    run.flush_all();
    assert_eq!(
      run.outs,
      [Out::Batch {
        lines: lines(&["ERR 1", "ERR 2"]),
        marks: vec![Mark::Important; 2],
        digest: Some(DigestNote {
          count: 1,
          first: "x".into(),
          last: "x".into(),
          templates: None,
        })
      }],
      "{batch:?}"
    );
    run.outs.clear();
    assert_eq!(run.lane.held(), 0);
    assert_eq!(run.lane.deadline(), None);
    run.flush_all();
    assert!(run.outs.is_empty(), "idempotent");
    // The token that refills at 1000 is the bucket's again.
    run.offer("b", 1000);
    run.flush_all();
    assert_eq!(run.sent(), [lines(&["b"])], "{batch:?}");
  }
}

// ---- maxEvents ----

#[test]
fn max_events_cuts_the_window_and_then_lines_are_ignored() {
  let mut run = Run::with_events(config(Some(200), 20, None, false), None, 5);
  let all = numbered(8);
  run.offer_all(&refs(&all), 0);
  assert_eq!(run.sent(), [all[..5].to_vec()]);
  assert_eq!(run.lane.events_left(), 0);
  assert_eq!(run.lane.deadline(), None);
  run.flush_all();
  assert!(run.outs.is_empty());
  assert_eq!(run.dropped, 0);

  let mut run = Run::with_events(config(Some(200), 3, None, false), None, 5);
  run.offer_all(&refs(&all), 0);
  assert_eq!(run.sent(), [all[..3].to_vec(), all[3..5].to_vec()]);

  let mut run = Run::with_events(SignalConfig::default(), THROTTLE, 2);
  run.offer_all(&refs(&all), 0);
  assert_eq!(run.sent(), [all[..1].to_vec(), all[1..2].to_vec()]);
  assert_eq!(run.dropped, 0);
}

#[test]
fn dropped_lines_do_not_use_the_event_budget() {
  let mut run = Run::with_events(config(Some(200), 20, None, false), burst(1), 3);
  run.offer("a", 0);
  run.flush_all();
  run.offer_all(&["x", "y", "z", "w"], 10);
  run.offer_all(&["b", "c", "d"], 1000);
  assert_eq!(run.sent(), [lines(&["a"]), lines(&["b", "c"])]);
  assert_eq!(run.dropped, 4);
}

// ---- digest ----

#[test]
fn digest_unbatched_counts_first_last_and_resets() {
  let mut run = Run::new(config(None, 20, None, true), burst(2));
  run.offer_all(&["a", "b", "c", "d", "e"], 0);
  assert_eq!(run.digests(), [None, None]);
  run.offer("f", 1000);
  assert_eq!(
    run.digests(),
    [Some(DigestNote {
      count: 3,
      first: "c".into(),
      last: "e".into(),
      templates: None,
    })]
  );
  run.offer("g", 1000);
  assert_eq!(run.dropped, 4);
  // A settled or terminal notification takes the rest.
  assert_eq!(
    run.lane.take_digest(),
    Some(DigestNote {
      count: 1,
      first: "g".into(),
      last: "g".into(),
      templates: None,
    })
  );
  assert_eq!(run.lane.take_digest(), None);
  run.offer("h", 2000);
  assert_eq!(run.digests(), [None]);
}

#[test]
fn digest_batched_reports_dropped_windows_in_the_next_batch() {
  let mut run = Run::new(config(Some(200), 20, Some("ERR"), true), burst(1));
  run.offer("a", 0);
  run.poll(200);
  assert_eq!(run.digests(), [None]);
  run.offer_all(&["x \x01<result>", "y", "z"], 300); // a dropped window
  run.offer("ERR", 400); // held
  run.offer("after", 401); // joins the dropped window
                           // Held at 400, the line's window is due at 600: it leaves at the refill (1000), with the
                           // digest of the four dropped before.
  run.poll(1000);
  assert_eq!(
    run.outs,
    [Out::Batch {
      lines: lines(&["ERR"]),
      marks: vec![Mark::Important; 1],
      digest: Some(DigestNote {
        count: 4,
        first: "x <\u{200B}result>".into(),
        last: "after".into(),
        templates: None,
      })
    }]
  );
  assert_eq!(run.lane.take_digest(), None);
}

/// At stop: `flush_all` sends the open window with the digest of what came before it, and
/// the terminal notification's `take_digest` has only what came after.
#[test]
fn digest_order_at_stop() {
  let mut run = Run::new(config(Some(200), 20, None, true), burst(1));
  run.offer("a", 0);
  run.flush_all();
  run.digests();
  run.offer("dropped 1", 10);
  run.offer("dropped 2", 20);
  run.offer("b", 1100); // the dropped window was due at 210
  run.flush_all();
  assert_eq!(
    run.digests(),
    [Some(DigestNote {
      count: 2,
      first: "dropped 1".into(),
      last: "dropped 2".into(),
      templates: None,
    })]
  );
  run.offer("dropped 3", 1200);
  run.flush_all();
  assert!(run.outs.is_empty());
  assert_eq!(run.lane.take_digest().map(|d| d.count), Some(1));
}

#[test]
fn without_digest_nothing_is_recorded() {
  let mut run = Run::new(config(None, 20, None, false), burst(0));
  run.offer_all(&["a", "b"], 0);
  assert_eq!(run.dropped, 2);
  assert_eq!(run.lane.take_digest(), None);
}

// ---- the counting fast path ----

#[test]
fn counts_only_when_no_line_could_pass() {
  let lane = |config, throttle| SignalLane::new(config, throttle, 100, 0);
  assert!(!lane(SignalConfig::default(), THROTTLE).counts_only(0));
  assert!(lane(SignalConfig::default(), burst(0)).counts_only(0));
  assert!(!lane(SignalConfig::default(), None).counts_only(0));
  assert!(!lane(config(None, 20, Some("x"), false), burst(0)).counts_only(0));
  assert!(!lane(config(None, 20, None, true), burst(0)).counts_only(0));
  assert!(lane(config(Some(200), 20, None, false), burst(0)).counts_only(0));
  // A delivered window takes every line.
  let mut l = lane(config(Some(200), 20, None, false), burst(1));
  l.offer(LineText::raw("a"), 0, &mut |_| {});
  assert!(!l.counts_only(0));
  l.flush_all(&mut |_| {});
  assert!(l.counts_only(0));
  assert!(!l.counts_only(1000));
}

/// `count_dropped(n)` while `counts_only` holds decides as n `offer`s: same sends, same drops,
/// same windows and bucket afterwards (checked by what follows), with clocks going back too.
#[test]
fn count_dropped_matches_offering_each_line() {
  let mut rng = XorShift(0x00C0_47ED);
  let (mut counted_runs, mut windows_left_open) = (0, 0);
  for round in 0..400 {
    let batch = [None, Some(10), Some(200), Some(3000)][round % 4];
    let max = [1, 2, 3, 20][rng.below(4)];
    let throttle = Some(ThrottleConfig {
      burst: [0, 1, 2, 5][rng.below(4)],
      refill_ms: [10, 100, 1000][rng.below(3)],
    });
    let make = || Run::new(config(batch, max, None, false), throttle);
    let (mut exact, mut counted) = (make(), make());
    let mut now = 0;
    let mut line = 0;
    for _read in 0..40 {
      now += [0, 0, 1, 9, 10, 150, 200, 999, 1000, 4000, -50][rng.below(11)];
      exact.poll(now);
      counted.poll(now);
      let n = [1, 1, 2, 3, 5, 19, 20, 21, 64][rng.below(9)];
      if counted.lane.counts_only(now) {
        assert!(exact.lane.counts_only(now));
        counted.lane.count_dropped(n as u64, now);
        counted_runs += 1;
        windows_left_open += u32::from(batch.is_some() && !(n as u32).is_multiple_of(max));
        counted.dropped += counted.lane.take_dropped();
        for _ in 0..n {
          exact.offer(&format!("l{line}"), now);
          line += 1;
        }
      } else {
        for _ in 0..n {
          let text = format!("l{line}");
          exact.offer(&text, now);
          counted.offer(&text, now);
          line += 1;
        }
      }
      assert_eq!(exact.outs, counted.outs, "round {round}, at {now}");
      assert_eq!(exact.dropped, counted.dropped, "round {round}, at {now}");
      assert_eq!(exact.lane.deadline(), counted.lane.deadline());
    }
    exact.flush_all();
    counted.flush_all();
    assert_eq!(exact.outs, counted.outs, "round {round}, flushed");
  }
  assert!(counted_runs > 2000, "{counted_runs} counted runs");
  assert!(windows_left_open > 500, "{windows_left_open}");
}

mod budget;
