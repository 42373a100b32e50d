#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/convoy_share.sh -- the convoy case at several hold shares: what the
# interactivity policy trades between the I/O thread's round trips and the
# CPU hog's share (see ARCHITECTURE.md, "The hold share").
#
#   bench/convoy_share.sh [--runs N] [--shares "50 80 85 90 95"] [--no-build]
#
# Uses the Release build of bench/run.sh (bench/build).  Prints one line per
# share: medians over the runs of the convoy metrics for variant gvloop,
# then gvloop-noia (policy off) once as the reference.  Nothing is asserted.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$here/build" runs=5 shares="50 80 85 90 95" nobuild=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift ;;
    --shares) shares=$2; shift ;;
    --no-build) nobuild=1 ;;
    *) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
  shift
done
if [ $nobuild = 0 ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DGVLOOP_BUILD_EXAMPLES=OFF -DGVLOOP_WERROR=OFF >"$build.cmake.log" 2>&1
  cmake --build "$build" -j2 --target gvlbench >"$build.build.log" 2>&1
fi
gvlbench="$build/bench/gvlbench"
[ -x "$gvlbench" ] || { echo "convoy_share.sh: $gvlbench not built" >&2; exit 1; }

# median of the values of one metric in RESULT lines on stdin
median() {
  awk -v m="$1" '$1 == "RESULT" && $4 == m { v[n++] = $5 }
    END { if (!n) { print "-"; exit }
          for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
            if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
          printf "%.3g", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'
}

row() {  # label, file
  printf '%-10s %10s %10s %10s %10s %10s\n' "$1" \
    "$(median io_ratio_1hog <"$2")" "$(median hog_pct_1hog <"$2")" \
    "$(median io_ratio_2hog <"$2")" "$(median hog_pct_2hog <"$2")" \
    "$(median io_us_alone <"$2")"
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "INFO $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $runs run(s) per share"
printf '%-10s %10s %10s %10s %10s %10s\n' share io_1hog hog%_1hog io_2hog hog%_2hog io_alone_us
for s in $shares; do
  GVLBENCH_HOLD_SHARE=$s "$gvlbench" --case convoy --variant gvloop --runs "$runs" >"$tmp" 2>/dev/null
  row "$s" "$tmp"
done
"$gvlbench" --case convoy --variant gvloop-noia --runs "$runs" >"$tmp" 2>/dev/null
row "policy off" "$tmp"
