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


# The targets are built as cargo-fuzz 0.13 builds them (`cargo fuzz build`: its src/project.rs),
# with cargo itself, so no machine has to compile cargo-fuzz first (about two minutes of both
# cores in a fresh CI run): libFuzzer comes with the libfuzzer-sys crate. The flags are
# nightly-only (-Zsanitizer); the stable toolchain accepts them with RUSTC_BOOTSTRAP.
export RUSTC_BOOTSTRAP=1
host="$(limit "rustc -vV" 60 -- rustc -vV | sed -n 's/^host: //p')"

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=()
  while IFS= read -r target; do
    targets+=("$target")
  done < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -vx 'taskstream-fuzz')
fi

echo "== building ${#targets[@]} fuzz targets (address sanitizer, debug assertions)"
build_started=$SECONDS
# cargo-fuzz's defaults: coverage and comparison tracing, `--cfg fuzzing`, AddressSanitizer,
# stack-depth tracing on Linux, debug assertions, the release profile with line tables. One
# change: opt-level 1 with 16 codegen units where cargo-fuzz has opt-level 3 with one. For runs
# of seconds to minutes the build is most of the cost (about 12 CPU minutes at opt-level 3
# with one unit, most of CI's fuzzing step); FUZZ_FULL_OPT=1 builds as cargo-fuzz does, for
# long runs where executions per second matter more.
fuzz_flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
fuzz_flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
fuzz_flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
fuzz_flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Zsanitizer=address"
case "$host" in *-linux-*) fuzz_flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth" ;; esac
fuzz_flags+=" -Cdebug-assertions"
# libFuzzer itself (C++, compiled by libfuzzer-sys's build script at the profile's opt-level, with
# debug info) follows the same rule: at -O1 without debug info its build takes 47 CPU-s instead of
# 94 (measured here, one job each); its own symbols are not what a crash report needs.
libfuzzer_profile=()
if [ "${FUZZ_FULL_OPT:-0}" = 1 ]; then
  fuzz_flags+=" -Ccodegen-units=1"
else
  fuzz_flags+=" -Copt-level=1 -Ccodegen-units=16"
  libfuzzer_profile=(--config 'profile.release.package.libfuzzer-sys.opt-level=1'
    --config 'profile.release.package.libfuzzer-sys.debug=false')
fi
# The same flags, target and profile for the build of the targets and for the harness's tests:
# one build of the dependencies serves both.
cargo_with() {
  local verb="$1"
  shift
  fuzz_cargo=(env "RUSTFLAGS=$fuzz_flags ${RUSTFLAGS:-}" cargo "$verb" --manifest-path fuzz/Cargo.toml
    --target "$host" --release --config 'profile.release.debug="line-tables-only"'
    ${libfuzzer_profile[@]+"${libfuzzer_profile[@]}"} "$@")
}
cargo_with build --bins
limit "fuzz build" 1500 -- "${fuzz_cargo[@]}"
echo "== built in $((SECONDS - build_started)) s"

# The harness's own helpers (fuzz/src/lib.rs) have unit tests: a wrong helper fails a target
# for a reason that is not the core's. Built as the targets are (instrumented, libFuzzer linked),
# so only the harness itself is compiled once more.
echo "== fuzz harness unit tests"
cargo_with test --quiet --lib
limit "fuzz harness unit tests" 600 -- "${fuzz_cargo[@]}"

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
    echo "  reproduce: $bin_dir/$target $artifacts/<file>"
    failed+=("$target")
  fi
done

rm -rf "$scratch/tmp"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "== fuzzing FAILED: ${failed[*]}"
  exit 1
fi
echo "== fuzzing passed: ${targets[*]}"
