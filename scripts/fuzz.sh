#!/usr/bin/env bash
# Coverage-guided fuzzing of taskstream's pure core: builds every target of fuzz/
# once, then runs each for a fixed time. Exits non-zero if any target crashes, panics, hangs
# (-timeout) or runs out of memory (-rss_limit_mb).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 20 s, every target)
#
# Environment: FUZZ_TIMEOUT (s per input, default 10), FUZZ_RSS_MB (default 2048),
# FUZZ_MAX_LEN (bytes per input, default 4096), FUZZ_JOBS (parallel libFuzzer jobs per
# target, default 1).
#
# The committed seeds in fuzz/corpus/<target>/ are only read: what a run discovers goes to
# fuzz/scratch/corpus/<target>/ (ignored by git, kept between local runs so longer fuzzing
# resumes where it stopped), crash inputs to fuzz/artifacts/<target>/, logs to
# fuzz/scratch/logs/. The git tree stays clean.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
# Every command below runs through scripts/lib/run.mjs: a time limit, and on a timeout its whole
# process tree is killed and the step named (exit 124).
limit() {
  node scripts/lib/run.mjs "$@"
}
seconds="${1:-20}"
shift || true
timeout_s="${FUZZ_TIMEOUT:-10}"
rss_mb="${FUZZ_RSS_MB:-2048}"
max_len="${FUZZ_MAX_LEN:-4096}"
jobs="${FUZZ_JOBS:-1}"

if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
fi

if ! limit "cargo fuzz --version" 120 -- cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
  echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION"
  limit "cargo install cargo-fuzz" 1200 -- cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

# cargo-fuzz passes nightly-only flags (-Zsanitizer, -Cpasses=sancov-module); the stable
# toolchain accepts them with RUSTC_BOOTSTRAP.
export RUSTC_BOOTSTRAP=1
host="$(limit "rustc -vV" 60 -- rustc -vV | sed -n 's/^host: //p')"

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=()
  while IFS= read -r target; do
    targets+=("$target")
  done < <(limit "cargo fuzz list" 120 -- cargo fuzz list | grep -v '^== ')
fi

# The harness's own helpers (fuzz/src/lib.rs) have unit tests: a wrong helper fails a target
# for a reason that is not the core's.
echo "== fuzz harness unit tests"
# Built into the main crate's target/ (unless CARGO_TARGET_DIR says otherwise): the dependencies
# are the ones `cargo test` of the main crate built (65 of 100 s of CPU saved after npm test).
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" \
  limit "fuzz harness unit tests" 900 -- cargo test --quiet --manifest-path fuzz/Cargo.toml --lib

echo "== building ${#targets[@]} fuzz targets (address sanitizer, debug assertions)"
build_started=$SECONDS
limit "cargo fuzz build" 1500 -- cargo fuzz build
echo "== built in $((SECONDS - build_started)) s"

bin_dir="fuzz/target/$host/release"
scratch="fuzz/scratch"
mkdir -p "$scratch/logs" "$scratch/tmp"
# The targets' scratch files (a temp workspace, the tail target's file) go here too.
export TMPDIR="$PWD/$scratch/tmp"

failed=()
for target in "${targets[@]}"; do
  seeds="fuzz/corpus/$target"
  corpus="$scratch/corpus/$target"
  artifacts="fuzz/artifacts/$target"
  log="$scratch/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$seeds"
  echo "== fuzz $target: ${seconds} s"
  started=$SECONDS
  status=0
  parallel=()
  if [ "$jobs" -gt 1 ]; then
    parallel=(-jobs="$jobs" -workers="$jobs")
  fi
  # New inputs go to the first corpus dir; the seed dir is only read.
  # libFuzzer stops itself after -max_total_time; the limit only catches a hang of its own.
  limit "fuzz $target" "$((seconds + timeout_s + 120))" -- "$bin_dir/$target" \
    -max_total_time="$seconds" \
    -timeout="$timeout_s" \
    -rss_limit_mb="$rss_mb" \
    -max_len="$max_len" \
    ${parallel[@]+"${parallel[@]}"} \
    -artifact_prefix="$artifacts/" \
    -print_final_stats=1 \
    "$corpus" "$seeds" >"$log" 2>&1 || status=$?
  if [ "$jobs" -gt 1 ]; then
    cat fuzz-*.log >>"$log" 2>/dev/null || true
    rm -f fuzz-*.log
  fi
  elapsed=$((SECONDS - started))
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | awk '{s += $1} END {print s + 0}')"
  cov="$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)"
  units="$(find "$corpus" -type f | wc -l | tr -d ' ')"
  if [ "$status" -eq 0 ]; then
    echo "fuzz $target: ok, ${runs} runs in ${elapsed} s, coverage ${cov:-?}, ${units} new corpus inputs"
  else
    echo "---- $log (last 60 lines)"
    tail -n 60 "$log"
    echo "fuzz $target: FAILED (libFuzzer exit $status) after ${elapsed} s; input(s) in $artifacts/"
    echo "  reproduce: RUSTC_BOOTSTRAP=1 cargo fuzz run $target $artifacts/<file>"
    failed+=("$target")
  fi
done

rm -rf "$scratch/tmp"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "== fuzzing FAILED: ${failed[*]}"
  exit 1
fi
echo "== fuzzing passed: ${targets[*]}"
