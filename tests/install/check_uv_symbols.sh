#!/bin/sh
# SPDX-License-Identifier: MIT
# check_uv_symbols.sh LIST LIB...: every libuv function the shared libraries
# LIB call is in LIST, the functions known to be in the oldest libuv the
# build accepts.  The system's libuv is newer, so a call to a newer function
# links here and fails only on an older system; this catches it here.
set -eu
list=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v '^#' "$list" | sort -u >"$tmp/known"
for lib in "$@"; do
  nm -D --undefined-only "$lib" | awk '{sub(/@.*/, "", $2); if ($2 ~ /^uv_/) print $2}'
done | sort -u >"$tmp/used"
[ -s "$tmp/used" ] || { echo "FAIL: no libuv calls found in $*"; exit 1; }
new=$(comm -23 "$tmp/used" "$tmp/known")
if [ -n "$new" ]; then
  echo "FAIL: libuv functions not known to be in the oldest accepted libuv ($list):"
  echo "$new"
  exit 1
fi
echo "uv symbols ok: $(wc -l <"$tmp/used") functions, all in $(basename "$list")"
