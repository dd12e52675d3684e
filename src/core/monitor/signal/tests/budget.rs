//! The budget options (§6.7): `sampleLines`, `contextBefore`/`contextAfter`, `digest:
//! 'templates'`, with an injected clock.

use super::*;

fn budget(samples: u32, before: u32, after: u32, templates: bool) -> SignalConfig {
  budget_batch(1000, samples, before, after, templates)
}

fn budget_batch(
  batch_ms: u32,
  samples: u32,
  before: u32,
  after: u32,
  templates: bool,
) -> SignalConfig {
  SignalConfig::new(SignalOptions {
    batch_ms: Some(f64::from(batch_ms)),
    important: Some("(?i)error|fail|panic"),
    digest: true,
    digest_templates: templates,
    sample_lines: Some(f64::from(samples)),
    context_before: Some(f64::from(before)),
    context_after: Some(f64::from(after)),
    ..Default::default()
  })
  .unwrap()
}

/// A notification's lines with their marks, and its digest.
type Batch = (Vec<(String, Mark)>, Option<DigestNote>);

/// Each notification as a [`Batch`].
fn batches(run: &mut Run) -> Vec<Batch> {
  run
    .outs
    .drain(..)
    .map(|out| match out {
      Out::Batch {
        lines,
        marks,
        digest,
      } => (lines.into_iter().zip(marks).collect(), digest),
      Out::Line { .. } => panic!("batches only"),
    })
    .collect()
}

fn info(n: u32) -> String {
  format!("INFO  GET /api/items/{n} 200 3ms user={}", n % 17)
}

#[test]
fn a_window_samples_ordinary_lines_and_only_a_full_bucket_opens_one() {
  let mut run = Run::new(budget(1, 0, 0, true), THROTTLE);
  for n in 0..50 {
    run.offer(&info(n), 0);
  }
  // One window, one sample; the rest is dropped.
  assert_eq!(run.lane.events_left(), 9_999);
  run.poll(1000);
  let sent = batches(&mut run);
  assert_eq!(sent.len(), 1);
  assert_eq!(sent[0].0, [(info(0), Mark::Ordinary)]);
  assert_eq!(run.dropped, 49);
  // The bucket holds 4 of 5 until the refill at 1000: no ordinary window before it.
  run.offer(&info(50), 999);
  run.poll(1999);
  let digest = batches(&mut run);
  assert!(digest.is_empty());
  run.offer(&info(51), 1000);
  run.poll(2000);
  let sent = batches(&mut run);
  assert_eq!(sent.len(), 1);
  assert_eq!(sent[0].0, [(info(51), Mark::Ordinary)]);
  // The digest groups what was dropped since the previous notification by template.
  let note = sent[0].1.clone().unwrap();
  assert_eq!(note.count, 1);
  assert_eq!(
    digest_line(&note),
    format!("[1 line not shown: {}]", info(50))
  );
}

#[test]
fn context_after_an_important_line_travels_with_it_until_the_stream_repeats() {
  let mut run = Run::new(budget(0, 0, 5, true), THROTTLE);
  for n in 0..10 {
    run.offer(&info(n), 0);
  }
  run.offer_all(
    &[
      "FAIL src/sum.test.ts > sum > adds",
      "AssertionError: expected 4 to be 3",
      "Expected: 3",
      "Received: 4",
      "at src/sum.test.ts:5:17",
    ],
    10,
  );
  run.offer(&info(10), 10);
  run.offer("a line after the stream resumed", 10);
  run.poll(1010);
  let sent = batches(&mut run);
  assert_eq!(sent.len(), 1);
  let marks: Vec<Mark> = sent[0].0.iter().map(|(_, m)| *m).collect();
  assert_eq!(
    marks,
    [
      Mark::Important,
      Mark::Important,
      Mark::Context,
      Mark::Context,
      Mark::Context
    ]
  );
  assert_eq!(sent[0].0[4].0, "at src/sum.test.ts:5:17");
  // The ordinary lines went to the digest, grouped; the INFO line ended the context.
  let note = sent[0].1.clone().unwrap();
  assert_eq!(note.count, 12);
  assert_eq!(
    digest_line(&note),
    "[12 lines not shown: 11\u{d7} INFO  GET /api/items/# # # user=#; 1\u{d7} a line after the stream resumed]"
  );
  assert_eq!(run.dropped, 12);
  run.flush_all();
  assert!(batches(&mut run).is_empty());
  assert_eq!(run.lane.take_digest(), None);
}

#[test]
fn context_before_takes_the_frames_not_the_ordinary_stream() {
  let mut run = Run::new(budget(0, 6, 0, false), THROTTLE);
  for n in 0..10 {
    run.offer(&info(n), 0);
  }
  run.offer_all(
    &[
      "Traceback (most recent call last):",
      "File \"app.py\", line 9, in <module>",
      "main()",
      "File \"app.py\", line 5, in main",
      "raise ValueError(\"bad port\")",
      "ValueError: bad port",
    ],
    5,
  );
  run.poll(1005);
  let sent = batches(&mut run);
  assert_eq!(sent.len(), 1);
  let lines: Vec<&str> = sent[0].0.iter().map(|(l, _)| l.as_str()).collect();
  assert_eq!(
    lines,
    [
      "Traceback (most recent call last):",
      "File \"app.py\", line 9, in <module>",
      "main()",
      "File \"app.py\", line 5, in main",
      "raise ValueError(\"bad port\")",
      "ValueError: bad port",
    ]
  );
  // `raise ValueError(…)` matches the pattern itself.
  let marks: Vec<Mark> = sent[0].0.iter().map(|(_, m)| *m).collect();
  assert_eq!(
    marks,
    [
      Mark::Context,
      Mark::Context,
      Mark::Context,
      Mark::Context,
      Mark::Important,
      Mark::Important
    ]
  );
  // The INFO lines were parked, then dropped: counted once each.
  assert_eq!(run.dropped, 10);
  assert_eq!(sent[0].1.as_ref().unwrap().count, 10);
}

#[test]
fn a_blank_line_ends_context() {
  let mut run = Run::new(budget(0, 4, 4, false), THROTTLE);
  run.offer_all(&["unrelated", "also unrelated"], 0);
  run.lane.blank();
  run.offer_all(&["panic: boom", "goroutine 1 [running]:"], 0);
  run.lane.blank();
  run.offer("after the blank", 0);
  run.poll(1000);
  let sent = batches(&mut run);
  let lines: Vec<&str> = sent[0].0.iter().map(|(l, _)| l.as_str()).collect();
  assert_eq!(lines, ["panic: boom", "goroutine 1 [running]:"]);
  // The line after the blank is parked until the end.
  assert_eq!(run.dropped, 2);
  run.flush_all();
  assert_eq!(run.lane.take_dropped() + run.dropped, 3);
}

#[test]
fn held_lines_keep_their_context_and_leave_at_the_refill() {
  let mut run = Run::new(budget_batch(200, 0, 2, 2, false), burst(1));
  run.offer("error one", 0);
  run.poll(200);
  assert_eq!(batches(&mut run).len(), 1);
  // The bucket is empty until 1000: held with its context on both sides.
  for n in 0..5 {
    run.offer(&info(n), 300);
  }
  run.offer_all(
    &["cause: disk full", "error two", "at write (fs.rs:10)"],
    300,
  );
  run.offer(&info(5), 300);
  assert_eq!(run.lane.held(), 3);
  assert_eq!(run.lane.deadline(), Some(1000));
  // At the refill they leave at once (held more than batchMs ago).
  run.poll(1000);
  let sent = batches(&mut run);
  let lines: Vec<&str> = sent[0].0.iter().map(|(l, _)| l.as_str()).collect();
  assert_eq!(
    lines,
    ["cause: disk full", "error two", "at write (fs.rs:10)"],
    "the after-context ended at the repeating INFO line"
  );
  assert_eq!(
    run.dropped, 5,
    "INFO 0-4: pushed out of the parked lines, or not context"
  );
  run.flush_all();
  assert_eq!(run.dropped + run.lane.take_dropped(), 6);
}

#[test]
fn max_events_bounds_context_too() {
  let mut run = Run::with_events(budget(0, 3, 3, false), THROTTLE, 2);
  run.offer_all(&["a", "b", "error", "c", "d"], 0);
  run.flush_all();
  let sent = batches(&mut run);
  let lines: Vec<&str> = sent[0].0.iter().map(|(l, _)| l.as_str()).collect();
  assert_eq!(lines, ["a", "b"], "cut at maxEvents");
  assert_eq!(run.lane.events_left(), 0);
}
