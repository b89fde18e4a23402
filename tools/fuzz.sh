#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] — libFuzzer run of every tests/fuzz/fuzz_*.c harness.
#   1. builds them with clang, ASan + UBSan (build-fuzz/);
#   2. writes the seed corpus with the project's own writers (tests/fuzz/make_corpus.c);
#   3. replays the committed crash inputs tests/fuzz/regressions/<target>/*;
#   4. fuzzes each target SECONDS seconds (default 20), growing build-fuzz/fuzz-work/corpus/.
# A crash, leak, timeout or OOM fails the run; its input is copied to
# tests/fuzz/regressions/<target>/ so it gets committed with the fix and replayed from then on.
# Prints "# pass N" / "# fail N" (the summary tools/test.sh counts).
set -uo pipefail
secs=${1:-20}
cd "$(dirname "$0")/.."
root=$PWD
bld=$root/build-fuzz
work=$bld/fuzz-work
regs=$root/tests/fuzz/regressions
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

command -v clang >/dev/null || { echo "fuzz: clang not found"; exit 1; }
targets=()
for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done

CC=clang cmake -S . -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOX_FUZZ=ON -DOX_SANITIZE=ON -DOX_NATIVE=OFF >/dev/null ||
    { echo "fuzz: cmake configure failed"; exit 1; }
mkdir -p "$work"
if ! cmake --build "$bld" -j2 --target oxwriters "${targets[@]}" >"$work/build.log" 2>&1 ||
    ! clang -std=c11 -g -O1 -I src -fsanitize=address,undefined,fuzzer-no-link tests/fuzz/make_corpus.c \
        "$bld/liboxwriters.a" "$bld/liboxcore.a" -lpthread -lm -o "$bld/make_corpus" >>"$work/build.log" 2>&1; then
    grep -E "error|Error" "$work/build.log" | head -20
    echo "fuzz: build failed (log $work/build.log)"
    exit 1
fi
rm -rf "$work/seeds"
mkdir -p "$work/seeds" "$work/crashes"
"$bld/make_corpus" "$work/seeds" || { echo "fuzz: corpus generation failed"; exit 1; }

max_len() {
    case $1 in
    fuzz_gguf | fuzz_model | fuzz_estimate | fuzz_generate | fuzz_hf | fuzz_safetensors | fuzz_multifile) echo 262144 ;;
    fuzz_tokenizer) echo 4096 ;;
    *) echo 65536 ;;
    esac
}

pass=0 fail=0
for t in "${targets[@]}"; do
    # replay: every committed input must now run clean
    if compgen -G "$regs/$t/*" >/dev/null; then
        if "$bld/$t" -rss_limit_mb=2048 -timeout=30 "$regs/$t"/* >"$work/$t.replay.log" 2>&1; then
            echo "fuzz: $t: $(ls "$regs/$t" | wc -l) regression inputs replayed clean"
            pass=$((pass + 1))
        else
            echo "fuzz: $t: a regression input fails again:"
            grep -E "ERROR|runtime error|Running:|fuzz:" "$work/$t.replay.log" | head -20 | sed 's/^/   /'
            fail=$((fail + 1))
        fi
    fi
    mkdir -p "$work/corpus/$t" "$work/crashes/$t"
    # CI: a fixed seed, so a run explores the same inputs each time; by hand: a new seed per run
    "$bld/$t" -max_total_time="$secs" ${CI:+-seed=1} -rss_limit_mb=2048 -timeout=10 -max_len="$(max_len "$t")" \
        -print_final_stats=1 -artifact_prefix="$work/crashes/$t/" \
        "$work/corpus/$t" "$work/seeds/$t" >"$work/$t.log" 2>&1
    rc=$?
    execs=$(grep -E '^stat::number_of_executed_units' "$work/$t.log" | awk '{print $2}')
    cov=$(grep -oE 'cov: [0-9]+' "$work/$t.log" | tail -1)
    if [ "$rc" -eq 0 ]; then
        echo "fuzz: $t: ok, ${execs:-?} runs in ${secs}s, $cov, corpus $(ls "$work/corpus/$t" | wc -l)"
        pass=$((pass + 1))
    else
        echo "fuzz: $t: FAILED (rc $rc), log $work/$t.log"
        grep -E "ERROR|runtime error|SUMMARY|fuzz:|Test unit written" "$work/$t.log" | head -20 | sed 's/^/   /'
        mkdir -p "$regs/$t"
        for c in "$work/crashes/$t"/*; do
            [ -f "$c" ] || continue
            cp "$c" "$regs/$t/$(sha1sum "$c" | cut -c1-16)"
            echo "   saved $c as tests/fuzz/regressions/$t/$(sha1sum "$c" | cut -c1-16) (commit it with the fix)"
            rm -f "$c"
        done
        fail=$((fail + 1))
    fi
done
echo "# pass $pass"
echo "# fail $fail"
[ "$fail" -eq 0 ]
