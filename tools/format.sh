#!/usr/bin/env bash
# The formatters: prettier (.prettierrc.json, .prettierignore) over the JS and TS files, and
# clang-format (the root .clang-format) over the C sources and headers.
#   bash tools/format.sh           rewrite the files (npm run format)
#   bash tools/format.sh --check   list the unformatted files and exit 1 if any (the "format" suite)
set -uo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && check=1
status=0
js=('js/**/*.js' 'src/**/*.js' 'tests/**/*.{js,mjs,ts}' 'tools/**/*.{js,mjs}' 'web/*.js' '*.{js,mjs}')
if [ $check = 1 ]; then
  node_modules/.bin/prettier --check --log-level warn --no-error-on-unmatched-pattern "${js[@]}" || status=1
else
  node_modules/.bin/prettier --write --log-level warn --no-error-on-unmatched-pattern "${js[@]}" || status=1
fi
if [ -f .clang-format ]; then
  mapfile -t c < <(git ls-files -co --exclude-standard -- '*.c' '*.h')
  if [ $check = 1 ]; then
    clang-format --dry-run -Werror "${c[@]}" || status=1
  else
    clang-format -i "${c[@]}" || status=1
  fi
fi
exit $status
