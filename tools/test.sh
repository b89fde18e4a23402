#!/usr/bin/env bash
# Every test: formatting and types, native C (ctest), the same under ASan+UBSan (generic and -march=native kernels),
# a short fuzz run, the wasm build, the C tests as wasm (plain and under Emscripten's
# ASan+UBSan), Node tests (wasm engine, JS package), browser tests (headless Chromium).
# Prints one line per suite and a closing "N passed, N failed".
# OX_SKIP="fuzz browser" skips suites by name.
set -uo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs
root=$PWD
log=$root/test-artifacts/logs
mkdir -p "$log"
passed=0 failed=0 status=0
skip() { [[ " ${OX_SKIP:-} " == *" $1 "* ]]; }

# count PASS FAIL from a log: ctest summary, node --test TAP summary, or (wasm-c) one
# check_summary line per test program, "name: N passed, N failed" (passed if 0 failed)
tally() {
  local f=$1 p=0 x=0
  if grep -q 'tests passed, ' "$f"; then
    local line; line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$f" | tail -1)
    x=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    p=$(( $(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line") - x ))
  elif grep -qE '^# pass [0-9]+' "$f"; then
    p=$(grep -E '^# pass [0-9]+' "$f" | tail -1 | awk '{print $3}')
    x=$(grep -E '^# fail [0-9]+' "$f" | tail -1 | awk '{print $3}')
  elif grep -qE '^[A-Za-z0-9_]+: [0-9]+ passed, [0-9]+ failed' "$f"; then
    p=$(grep -cE '^[A-Za-z0-9_]+: [0-9]+ passed, 0 failed' "$f")
    x=$(grep -cE '^[A-Za-z0-9_]+: [0-9]+ passed, [1-9][0-9]* failed' "$f")
  fi
  echo "$p $x"
}

suite() { # name, command...
  local name=$1; shift
  if skip "$name"; then echo "== $name: skipped (OX_SKIP)"; return; fi
  echo "== $name"
  local t0=$SECONDS
  "$@" >"$log/$name.log" 2>&1
  local rc=$?
  read -r p x < <(tally "$log/$name.log")
  if [ "$rc" -ne 0 ] && [ "$x" -eq 0 ]; then x=1; fi
  passed=$((passed + p)) failed=$((failed + x))
  [ "$rc" -ne 0 ] && status=1
  echo "   $name: $p passed, $x failed (rc $rc, $((SECONDS - t0)) s; log test-artifacts/logs/$name.log)"
  if [ "$rc" -ne 0 ]; then tail -n 40 "$log/$name.log" | sed 's/^/   | /'; fi
}

native() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 &&
    ctest --test-dir build --output-on-failure -j2
}
sanitize() {
  CC=clang cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOX_SANITIZE=ON -DOX_NATIVE=OFF >/dev/null &&
    cmake --build build-asan -j2 && ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j2
}
# the same with -march=native: the AVX2 tiles (compiled out above) under the sanitizers too
sanitize_native() {
  CC=clang cmake -S . -B build-asan-native -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOX_SANITIZE=ON -DOX_NATIVE=ON >/dev/null &&
    cmake --build build-asan-native -j2 && ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan-native --output-on-failure -j2
}
fuzz() { bash tools/fuzz.sh "${OX_FUZZ_SECONDS:-20}"; }
# the engine builds (the relaxed-SIMD ones where clang 16 is there) and the relaxed kernel test
wasm() { make -f Makefile.emscripten -j2 all $([ -x /usr/lib/llvm-16/bin/clang ] && echo relaxed-test); }
# llama.cpp's quantizer for the oracle tests on its real
# quantization recipes, built from the source inside the npm package node-llama-cpp
# and the MTP drafter's logits against llama.cpp's (test_mtp with the oracle built on libllama;
# the native suite, run before llama.cpp exists on a fresh machine, skips that part), and the
# vision tower's image embeddings against llama.cpp's mtmd (test_mtmd with tools/mtmd_oracle on
# libmtmd, likewise skipped by the native suite until the oracle is built)
llamacpp() {
  bash tools/llamacpp.sh llama-quantize mtmd && echo "llamacpp: 1 passed, 0 failed" &&
    bash tools/mtp_oracle/build.sh && ./build/test_mtp &&
    bash tools/mtmd_oracle/build.sh && ./build/test_mtmd
}
node_tests() { node --test --test-reporter=tap --test-concurrency=1 tests/node/; }
browser_tests() { node --test --test-reporter=tap --test-concurrency=1 tests/browser/; }
# the packed package in fresh Vite 8 / webpack 5 / plain-ESM apps and in Node (npm registry)
bundler_tests() { node --test --test-reporter=tap --test-concurrency=1 tests/bundlers/; }

# formatting (prettier, clang-format where .clang-format exists: tools/format.sh) and the public
# types (tsc over js/main/*.d.ts and tests/types/: tsconfig.json with the DOM lib, as a page's
# tsconfig; tsconfig.node.json without it, as a Node user's: es2022 and @types/node)
format() { bash tools/format.sh --check && echo "format: 1 passed, 0 failed"; }
types() {
  node_modules/.bin/tsc -p tsconfig.json && node_modules/.bin/tsc -p tsconfig.node.json &&
    echo "types: 2 passed, 0 failed"
}

suite format format
suite types types
suite native native
suite sanitize sanitize
grep -qw avx2 /proc/cpuinfo 2>/dev/null && suite sanitize-native sanitize_native
[ -f tools/fuzz.sh ] && suite fuzz fuzz
[ -f Makefile.emscripten ] && suite wasm wasm
[ -f Makefile.emscripten ] && suite wasm-c bash tests/c/run_wasm.sh build-wasm-tests
[ -f Makefile.emscripten ] && suite wasm-asan env OX_WASM_SANITIZE=1 bash tests/c/run_wasm.sh build-wasm-asan-tests
[ -f tools/llamacpp.sh ] && suite llamacpp llamacpp
ls tests/node/*.test.mjs >/dev/null 2>&1 && suite node node_tests
ls tests/browser/*.test.mjs >/dev/null 2>&1 && suite browser browser_tests
ls tests/bundlers/*.test.mjs >/dev/null 2>&1 && suite bundlers bundler_tests

echo
echo "all: $passed passed, $failed failed"
exit $status
