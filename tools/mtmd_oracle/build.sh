#!/usr/bin/env bash
# Build tools/mtmd_oracle/mtmd_oracle.cpp against the libmtmd that tools/llamacpp.sh built
# (its target mtmd; no network), cached as $OX_MTMD_ORACLE (default
# ~/.cache/oxinfer-mtmd-oracle/mtmd_oracle); rebuilt only when the source is newer.
#
# Beside it, the f32 ggml: a copy of the bundled ggml with the two places where llama.cpp's CPU
# rounds a Gemma 4 vision tower's f32 values to fp16 made f32 — the convolutions' im2col
# (ggml_conv_2d, the patch embedding) and the GELU's fp16 lookup table (GGML_GELU_FP16 in
# ggml-cpu's vec.h) — built as libggml-base/libggml-cpu into ~/.cache/oxinfer-mtmd-oracle/
# ggml-f32/build/src ($OX_MTMD_F32_GGML). test_mtmd runs the oracle a second time with that
# directory first in LD_LIBRARY_PATH, for bounds at float rounding (docs/vision.md). Rebuilt
# when the llama.cpp checkout changes.
#
# Prints the oracle's path, then the f32 ggml's library directory.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LLAMA=${OX_LLAMACPP_DIR:-${HOME:-/root}/.cache/llamacpp}/src
CACHE=${HOME:-/root}/.cache/oxinfer-mtmd-oracle
OUT=${OX_MTMD_ORACLE:-$CACHE/mtmd_oracle}
[ -f "$LLAMA/build/bin/libmtmd.so" ] || { echo "mtmd_oracle: no $LLAMA/build/bin/libmtmd.so (run tools/llamacpp.sh mtmd)" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")" "$CACHE"
if [ ! -x "$OUT" ] || [ "$HERE/mtmd_oracle.cpp" -nt "$OUT" ]; then
  g++ -O1 -std=c++17 -o "$OUT" "$HERE/mtmd_oracle.cpp" -I"$LLAMA/tools/mtmd" -I"$LLAMA/include" -I"$LLAMA/ggml/include" \
    -L"$LLAMA/build/bin" -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA/build/bin" >&2
fi

F32=$CACHE/ggml-f32
head=$(git -C "$LLAMA" rev-parse HEAD)
if [ ! -f "$F32/build/src/libggml-cpu.so" ] || [ "$(cat "$F32/stamp" 2>/dev/null)" != "$head" ]; then
  echo "mtmd_oracle: building the f32 ggml (ggml-base, ggml-cpu) in $F32" >&2
  rm -rf "$F32" && mkdir -p "$F32"
  cp -r "$LLAMA/ggml" "$F32/ggml"
  im2col='a->type == GGML_TYPE_BF16 ? GGML_TYPE_F32 : GGML_TYPE_F16'
  grep -q "$im2col" "$F32/ggml/src/ggml.c" && grep -q '^#define GGML_GELU_FP16$' "$F32/ggml/src/ggml-cpu/vec.h" ||
    { echo "mtmd_oracle: this ggml's im2col type or GELU table is not where expected: cannot make the f32 ggml" >&2; exit 1; }
  sed -i "s/$im2col/GGML_TYPE_F32/" "$F32/ggml/src/ggml.c"
  sed -i 's/^#define GGML_GELU_FP16$//' "$F32/ggml/src/ggml-cpu/vec.h"
  touch "$F32/ggml/ggml.pc.in" # the bundled tree has none; the libraries do not need it
  cmake -S "$F32/ggml" -B "$F32/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON \
        -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >&2
  cmake --build "$F32/build" -j"${OX_LLAMACPP_JOBS:-2}" --target ggml-base ggml-cpu >&2
  echo "$head" > "$F32/stamp"
fi
echo "$OUT"
echo "$F32/build/src"
