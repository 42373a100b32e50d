#!/usr/bin/env bash
# List tracked source files that lack an "SPDX-License-Identifier: MIT" line
# (in their first 10 lines); exit 1 if there is any.
#   scripts/check-spdx.sh
set -euo pipefail
cd "$(dirname "$0")/.."
missing=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if ! head -n 10 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
    printf '%s\n' "$f"
    missing=$((missing + 1))
  fi
done < <(git ls-files -z -- '*.c' '*.h' '*.sh' '*.py' '*.tcl' '*.ml' '*.mli' \
           '*.pml' '*.rb' '*.cmake' '*.in' '.ci/run' 'CMakeLists.txt' '*/CMakeLists.txt' \
           ':!tests/fuzz/corpus/**' ':!bench/results/**')
if ((missing)); then
  echo "check-spdx: $missing source file(s) without an SPDX-License-Identifier: MIT line" >&2
  exit 1
fi
echo "check-spdx: every tracked source file has an SPDX line"
