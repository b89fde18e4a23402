#!/usr/bin/env bash
# Build tools/mtmd_oracle/mtmd_oracle.cpp against the libmtmd that tools/llamacpp.sh built
# (its target libmtmd.so; no network); cached as $OX_MTMD_ORACLE (default
# ~/.cache/oxinfer-mtmd-oracle/mtmd_oracle). Prints the binary's path. Rebuilt only when the
# source is newer.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LLAMA=${OX_LLAMACPP_DIR:-${HOME:-/root}/.cache/llamacpp}/src
OUT=${OX_MTMD_ORACLE:-${HOME:-/root}/.cache/oxinfer-mtmd-oracle/mtmd_oracle}
[ -f "$LLAMA/build/bin/libmtmd.so" ] || { echo "mtmd_oracle: no $LLAMA/build/bin/libmtmd.so (run tools/llamacpp.sh mtmd)" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
if [ ! -x "$OUT" ] || [ "$HERE/mtmd_oracle.cpp" -nt "$OUT" ]; then
  g++ -O1 -std=c++17 -o "$OUT" "$HERE/mtmd_oracle.cpp" -I"$LLAMA/tools/mtmd" -I"$LLAMA/include" -I"$LLAMA/ggml/include" \
    -L"$LLAMA/build/bin" -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA/build/bin" >&2
fi
echo "$OUT"
