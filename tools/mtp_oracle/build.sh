#!/usr/bin/env bash
# Build tools/mtp_oracle/mtp_oracle.cpp against the libllama that tools/llamacpp.sh built
# (no network); cached as $OX_MTP_ORACLE (default ~/.cache/oxinfer-mtp-oracle/mtp_oracle).
# Prints the binary's path. Rebuilt only when the source is newer.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LLAMA=${OX_LLAMACPP_DIR:-${HOME:-/root}/.cache/llamacpp}/src
OUT=${OX_MTP_ORACLE:-${HOME:-/root}/.cache/oxinfer-mtp-oracle/mtp_oracle}
[ -f "$LLAMA/build/bin/libllama.so" ] || { echo "mtp_oracle: no $LLAMA/build/bin/libllama.so (run tools/llamacpp.sh)" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
if [ ! -x "$OUT" ] || [ "$HERE/mtp_oracle.cpp" -nt "$OUT" ]; then
  g++ -O1 -std=c++17 -o "$OUT" "$HERE/mtp_oracle.cpp" -I"$LLAMA/include" -I"$LLAMA/src" -I"$LLAMA/ggml/include" \
    -L"$LLAMA/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA/build/bin" >&2
fi
echo "$OUT"
