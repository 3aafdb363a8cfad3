#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser that takes bytes from users
# (cargo fuzz / libFuzzer, targets in fuzz/fuzz_targets/):
#   ts           .ts parser and UCR connector         seeds: tests/data/**/*.ts
#   tsf          .tsf parser and Monash connector     seeds: tests/data/**/*.tsf
#   arrow        Arrow connector, IPC file/stream and Parquet
#                                                     seeds: fuzz/seeds/arrow/, tests/data/inputs/*.parquet
#   page_header  thrift page-header decoder and page walk
#                                                     seeds: golden Parquet files from byte 4
#   manifest     manifest.json of the golden version, then verify + read all
#                                                     seeds: golden manifests
#   version      one file of the golden version (first byte picks it), then verify + read all
#                                                     seeds: every golden file
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 600)] [TARGET...]
# Targets run one after the other (never two fuzzers at once), under nice -n 19,
# with libFuzzer's -rss_limit_mb=2048 -malloc_limit_mb=2048: an out-of-memory
# is a finding like a crash. Each run goes on past findings (-fork=1 with
# -ignore_crashes/-ignore_ooms/-ignore_timeouts) and leaves them in
# fuzz/artifacts/<target>/; the grown corpus is in fuzz/corpus/<target>/ (not
# committed; only the seeds above are). Prints per target: seconds,
# executions, exec/s and the paths of findings.
#
# Needs: cargo install cargo-fuzz (0.13). cargo fuzz passes nightly-only rustc
# flags (-Zsanitizer=address, -Cpasses=sancov-module ...); on a stable
# toolchain RUSTC_BOOTSTRAP=1 lets rustc accept them (set below). The fuzz
# crate is its own workspace and builds into fuzz/target, never the main target
# directory (CARGO_TARGET_DIR is ignored here on purpose).
#
# FUZZ_QUICK=1 builds without optimizations and without a sanitizer
# (cargo fuzz build --dev -s none): the instrumented build of arrow and parquet
# takes minutes instead of an hour on a loaded 2-core machine, the fuzzer runs
# slower, and the memory limit holds by RSS only (without a sanitizer libFuzzer
# cannot hook malloc; an allocation the system refuses still aborts and is
# reported as a crash). Overflow checks and debug assertions are on either way.
#
# FUZZ_NO_BUILD=1 runs the binaries already built (e.g. while the sources
# change under a long instrumented build).
#
# Reproduce a finding: fuzz/target/x86_64-unknown-linux-gnu/<release|debug>/<target> <artifact>
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(ts tsf arrow page_header manifest version)
fi

export RUSTC_BOOTSTRAP=1
unset CARGO_TARGET_DIR
FUZZ_TARGET_DIR=$ROOT/fuzz/target
if [ "${FUZZ_QUICK:-0}" = 1 ]; then
    BUILD_ARGS=(--dev -s none)
    BIN_DIR=$FUZZ_TARGET_DIR/x86_64-unknown-linux-gnu/debug
else
    BUILD_ARGS=()
    BIN_DIR=$FUZZ_TARGET_DIR/x86_64-unknown-linux-gnu/release
fi

command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install cargo-fuzz" >&2; exit 2; }

if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
    echo "building fuzz targets ${BUILD_ARGS[*]:-(release, address sanitizer, debug assertions)}" >&2
    for t in "${TARGETS[@]}"; do
        nice -n 19 cargo fuzz build "${BUILD_ARGS[@]}" --target-dir "$FUZZ_TARGET_DIR" "$t" >&2
    done
fi

# seed corpus: the first byte of ts/tsf/page_header/version inputs is a mode
# byte (see each target's doc comment)
seed() { # seed TARGET NAME MODE_BYTE_OCTAL|'' FILE [SKIP_BYTES]
    local dir=$ROOT/fuzz/corpus/$1 out
    out=$dir/seed-$2
    mkdir -p "$dir"
    { [ -n "$3" ] && printf "\\$3"; tail -c +"$((${5:-0} + 1))" "$4"; } > "$out"
}
small() { find "$@" -type f -size -64k 2>/dev/null | LC_ALL=C sort; }
prepare() {
    case $1 in
    ts)
        for f in $(small tests/data -name '*.ts'); do seed ts "$(basename "$f")" 000 "$f"; done
        # the windows-1252 input with mode 4 (encoding cp1252)
        seed ts cp1252-UnitTest_cp1252_TRAIN.ts 004 tests/data/inputs/UnitTest_cp1252_TRAIN.ts
        ;;
    tsf) for f in $(small tests/data -name '*.tsf'); do seed tsf "$(basename "$f")" 000 "$f"; done ;;
    arrow)
        for f in $(small fuzz/seeds/arrow tests/data/inputs -name '*.parquet' -o -name '*.arrow' -o -name '*.arrows'); do
            seed arrow "$(basename "$f")" '' "$f"
        done
        ;;
    page_header)
        for f in $(small golden/golden -name '*.parquet'); do
            seed page_header "$(echo "${f#golden/golden/}" | tr / _)" 001 "$f" 4
        done
        ;;
    manifest)
        seed manifest golden.json '' golden/golden/1.0.0/manifest.json
        seed manifest earlier-golden.json '' tests/data/earlier/golden/1.0.0/manifest.json
        ;;
    version)
        # the same order as golden_files() in fuzz/src/lib.rs: byte-wise by path
        local i=0 rel
        for rel in $(cd golden/golden/1.0.0 && find . -type f | sed 's|^\./||' | LC_ALL=C sort); do
            seed version "$(echo "$rel" | tr / _)" "$(printf '%03o' "$i")" "golden/golden/1.0.0/$rel"
            i=$((i + 1))
        done
        ;;
    esac
}

summary=()
for t in "${TARGETS[@]}"; do
    prepare "$t"
    artifacts=$ROOT/fuzz/artifacts/$t
    mkdir -p "$artifacts"
    log=$ROOT/fuzz/artifacts/$t.log
    echo "fuzzing $t for ${SECONDS_PER_TARGET}s (log: $log)" >&2
    start=$(date +%s)
    # libFuzzer's exit code is non-zero when it found something; the summary says what
    nice -n 19 "$BIN_DIR/$t" "$ROOT/fuzz/corpus/$t" \
        -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=20 \
        -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
        -detect_leaks=0 -artifact_prefix="$artifacts/" -print_final_stats=1 > "$log" 2>&1 || true
    elapsed=$(($(date +%s) - start))
    # fork mode prints "#N: cov: ... exec/s: ..." lines; the last one counts all runs
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    execs=${execs:-0}
    findings=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | LC_ALL=C sort)
    summary+=("$(printf '%-12s %6ss %12s execs %8s exec/s %3s findings' "$t" "$elapsed" "$execs" \
        "$((execs / (elapsed > 0 ? elapsed : 1)))" "$(printf '%s' "$findings" | grep -c . || true)")")
    for f in $findings; do summary+=("    ${f#"$ROOT"/}"); done
done

echo
printf '%s\n' "${summary[@]}"
