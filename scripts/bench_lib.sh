# Sourced by the benchmark scripts (scripts/bench_*.sh, dedup.sh): their shared helpers.
#
# timed OUT COMMAND...: runs COMMAND and writes "<wall time, s> <peak RSS, KiB>"
# to OUT: the wall time to 0.1 ms (bash's EPOCHREALTIME, GNU time's own ~2 ms
# start included; its %e has 10 ms steps, 8% of a 0.13 s write), the RSS from
# GNU time. EPOCHREALTIME carries the locale's decimal mark: read with a dot.
timed() {
  local out=$1; shift
  local t0=${EPOCHREALTIME/,/.} status=0
  /usr/bin/time -f "%M" -o "$out.rss" "$@" || status=$?
  local t1=${EPOCHREALTIME/,/.}
  printf '%s %s\n' "$(python3 -c "print(round($t1 - $t0, 4))")" "$(tail -n1 "$out.rss")" >"$out"
  return "$status"
}

# written_back: writes every dirty page back (sync) before a timed run: a
# commit's fsync would otherwise also wait for those of an input just
# generated or of an earlier run's output (ext4 commits its journal for all).
written_back() { sync; }

# best_of LABEL COMMAND...: runs COMMAND $runs times, its stdout discarded, and
# prints "LABEL <best wall time, s> <peak RSS of the last run, KiB>" (timed).
# Before each run it calls the caller's `before_run LABEL` when one is defined
# (e.g. to remove the previous run's output) and exports BENCH_RUN (1..$runs),
# which a command can use to write each run to a root of its own.
# Needs $runs and $work (a scratch directory) set by the caller.
best_of() {
  local label=$1; shift
  local best=999999 kb=0 s i
  for i in $(seq "$runs"); do
    if declare -F before_run >/dev/null; then before_run "$label"; fi
    BENCH_RUN=$i timed "$work/t" "$@" >/dev/null
    read -r s kb < "$work/t"
    best=$(python3 -c "print(min($best, $s))")
  done
  echo "$label $best $kb"
}

# every_hundredth_sample PY VERSION_DIR OUT: writes to OUT 1% of the version's
# sample ids (at least one), spread evenly through the sorted ids, one a line,
# and prints "N samples; K picked" (the edit benchmarks remove them).
every_hundredth_sample() {
  "$1" - "$2" "$3" <<'PY'
import sys, pyarrow.parquet as pq
version, out = sys.argv[1:]
ids = sorted(pq.read_table(f"{version}/samples.parquet").column("sample_id").to_pylist())
k = max(1, round(len(ids) / 100))
step = len(ids) // k
open(out, "w").write("\n".join(ids[step // 2::step][:k]) + "\n")
print(f"{len(ids)} samples; {k} picked")
PY
}
