#!/usr/bin/env bash
# cpu-scaling.sh — issue 36's measurements on a machine with many cores (the device machine:
# 16 x86-64 cores, CMake and a C compiler, no Node, no emscripten, no network; see
# /work/.library/device/README.md). Not run by the tests.
#
# Two steps:
#   bash tools/device/cpu-scaling.sh prepare
#       here, where emscripten and Node are: builds dist/ (the wasm engine) and
#       build-wasm/tools/oxinfer.js (the wasm CLI), and packs this machine's Node binary into
#       tmp/device-carry/ (ignored by git); prints the device call to make.
#   device run, from the repo root, carrying dist, build-wasm/tools and tmp/device-carry:
#       bash tools/device/cpu-scaling.sh run
#       builds the native CLI, makes the bench-preset (Q4_K + Q6_K embedding, Q8_0) and
#       E2B-shaped (Q4_K + Q6_K) models with our generator, then at THREADS (default 2 4 8 16):
#       wasm decode through the public API in Node with the wasm read ceiling at that count
#       (tools/device/cpu-scaling-node.mjs), `oxinfer run --bench --profile` natively and in
#       wasm (the wasm CLI under Node) with a 4-token speculative verify, and last the
#       speculative copy task (tools/bench/decoding.mjs --only spec) at 8 threads. Everything
#       lands in $OUT (summary.tsv: one line per figure, with the CPU model and core count).
#
# The machine's device time is short (one call of at most 10 minutes): stages run in the
# order of the issue's targets (E2B first) and each is skipped once BUDGET_S (default 540 s
# from the start) would be overrun. THREADS, REPS (default 2), N_GEN (default 64) override;
# MODELS_ONLY (a grep -E pattern on the model names) runs a subset, SPEC=0 skips the copy task.
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
CARRY=tmp/device-carry

prepare() {
  set -e
  NODE_PATH=${NODE_PATH:-/usr/share/nodejs} make -f Makefile.emscripten -j2
  NODE_PATH=${NODE_PATH:-/usr/share/nodejs} make -f Makefile.emscripten -j2 tools
  mkdir -p "$CARRY"
  xz -T2 -6 -c "$(command -v node)" >"$CARRY/node.xz"
  du -sh dist build-wasm/tools "$CARRY"
  cat <<'EOF'
device call (one, at most 600 s; the tree and the carried paths must stay under 64 MiB):
  run(command="bash tools/device/cpu-scaling.sh run", timeout_s=600,
      carry=["dist", "build-wasm/tools", "tmp/device-carry"])
EOF
}

[ "${1:-}" = prepare ] && {
  prepare
  exit
}
[ "${1:-}" = run ] || {
  echo "usage: bash tools/device/cpu-scaling.sh prepare|run" >&2
  exit 2
}

OUT=${OUT:-$ROOT/tmp/cpu-scaling-out}
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-540}
THREADS=${THREADS:-2 4 8 16}
REPS=${REPS:-2}
N_GEN=${N_GEN:-64}
MODELS=/tmp/oxinfer-cpu-scaling
mkdir -p "$MODELS"
START=$(date +%s)
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
SUM=$OUT/summary.tsv
say() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$OUT/log.txt"; }

# the machine, beside every figure
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
CORES=$(nproc)
{
  echo "cpu: $CPU"
  echo "cores: $CORES"
  lscpu 2>/dev/null | grep -E 'Socket|NUMA|L3|MHz' || true
  free -g | head -2
  git log -1 --format='commit %h %s' 2>/dev/null || true
} >"$OUT/machine.txt"
printf 'what\tmodel\tthreads\tcpu\tcores\tprefill_tok_s\tdecode_tok_s\tdecode_share_of_wasm_ceiling\textra\n' >"$SUM"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$CPU" "$CORES" "$4" "$5" "$6" "$7" >>"$SUM"; }

# Node: the carried binary
NODE=$(command -v node || true)
if [ -z "$NODE" ] && [ -f "$CARRY/node.xz" ]; then
  xz -dc "$CARRY/node.xz" >/tmp/node && chmod +x /tmp/node && NODE=/tmp/node
fi
[ -n "$NODE" ] && say "node $($NODE --version)" || say "no Node: the wasm stages are skipped"

# the native CLI (OX_CLI: one already built)
CLI=${OX_CLI:-}
if [ -z "$CLI" ]; then
  say "native build"
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release >"$OUT/build.txt" 2>&1 &&
    cmake --build build-dev --target oxinfer -j"$CORES" >>"$OUT/build.txt" 2>&1 || {
    say "native build failed (build.txt)"
    exit 1
  }
  CLI=$ROOT/build-dev/oxinfer
fi

synth() { # name preset type [embd-type]
  local f=$MODELS/$1.gguf
  [ -f "$f" ] && return 0
  say "synth $1"
  "$CLI" synth --preset "$2" --type "$3" ${4:+--embd-type "$4"} -o "$f.part" >>"$OUT/build.txt" 2>&1 && mv "$f.part" "$f"
}

# wasm in Node through the API, with the ceiling (one process per configuration)
node_api() { # model
  [ -n "$NODE" ] || return 0
  for t in $THREADS; do
    [ "$(left)" -gt 60 ] || {
      say "skip node $1 $t: budget"
      continue
    }
    say "node API $1, $t threads"
    j=$(timeout $(($(left) - 20)) "$NODE" tools/device/cpu-scaling-node.mjs "$MODELS/$1.gguf" "$t" "$REPS" "$N_GEN" 2>>"$OUT/log.txt")
    [ -n "$j" ] || continue
    echo "$j" >>"$OUT/node.jsonl"
    row "wasm Node API" "$1" "$t" \
      "$(echo "$j" | "$NODE" -e 'const j=JSON.parse(require("fs").readFileSync(0));console.log(j.prefill_tps.toFixed(1))')" \
      "$(echo "$j" | "$NODE" -e 'const j=JSON.parse(require("fs").readFileSync(0));console.log(j.decode_tps.toFixed(2))')" \
      "$(echo "$j" | "$NODE" -e 'const j=JSON.parse(require("fs").readFileSync(0));console.log(j.decode_share==null?"":(100*j.decode_share).toFixed(1)+" %")')" \
      "ceiling $(echo "$j" | "$NODE" -e 'const j=JSON.parse(require("fs").readFileSync(0));console.log((j.ceiling_bytes_per_s/1e9).toFixed(1))') GB/s"
  done
}

# `run --bench --profile` (and a 4-token verify at 8 threads), native and the wasm CLI
profiled() { # engine model
  local log=$OUT/$1-profile.txt
  for t in $THREADS; do
    [ "$(left)" -gt 40 ] || {
      say "skip $1 $2 $t: budget"
      continue
    }
    local verify=()
    [ "$t" = 8 ] && verify=(--verify 4)
    say "$1 --profile $2, $t threads"
    echo "==== $1 $2 threads $t ($CPU x $CORES)" >>"$log"
    local out
    if [ "$1" = native ]; then
      out=$(timeout $(($(left) - 10)) "$CLI" run "$MODELS/$2.gguf" --bench --threads "$t" --n-gen "$N_GEN" --profile "${verify[@]}" 2>>"$log")
    else
      [ -n "$NODE" ] || return 0
      out=$(OX_TOOL_THREADS=$t timeout $(($(left) - 10)) "$NODE" --no-experimental-fetch build-wasm/tools/oxinfer.js run "$MODELS/$2.gguf" --bench --threads "$t" --n-gen "$N_GEN" --profile "${verify[@]}" 2>>"$log")
    fi
    echo "$out" >>"$log"
    local pf dc v
    pf=$(echo "$out" | sed -n 's/^prefill .* s, \([0-9.]*\) tok\/s/\1/p')
    dc=$(echo "$out" | sed -n 's/^decode .* s, \([0-9.]*\) tok\/s/\1/p')
    v=$(echo "$out" | sed -n 's/^verify \([0-9]*\) tokens: .*, \([0-9.]*x\) one decode step.*/verify \1: \2/p')
    row "$1 CLI --profile" "$2" "$t" "$pf" "$dc" "" "$v"
  done
}

# name, preset, type, embedding type; in the order of the issue's targets
ALL_MODELS="e2b-q4_k-q6_k:e2b:q4_k:q6_k bench-q8_0:bench:q8_0: bench-q4_k-q6_k:bench:q4_k:q6_k"
RUN_MODELS=""
for m in $ALL_MODELS; do
  echo "${m%%:*}" | grep -qE "${MODELS_ONLY:-.}" || continue
  IFS=: read -r name preset type embd <<<"$m"
  synth "$name" "$preset" "$type" "$embd" && RUN_MODELS="$RUN_MODELS $name"
done
ls -la "$MODELS" >>"$OUT/machine.txt"

for name in $RUN_MODELS; do
  node_api "$name"
  profiled native "$name"
  [ "$name" = bench-q4_k-q6_k ] || profiled wasm "$name"
done

# the speculative copy task at 8 threads, with what is left
if [ "${SPEC:-1}" = 1 ] && [ -n "$NODE" ] && [ "$(left)" -gt 90 ]; then
  say "speculative copy task, 8 threads"
  OX_CLI=$CLI OX_BENCH_DIR=$MODELS timeout $(($(left) - 10)) "$NODE" tools/bench/decoding.mjs --only verify,spec \
    --threads 8 --reps 2 --spec-reps 2 --no-chromium --no-native --no-write >"$OUT/spec.txt" 2>&1 || say "decoding.mjs: exit $? (spec.txt)"
fi
say "done"
column -t -s $'\t' "$SUM" | tee -a "$OUT/log.txt"
