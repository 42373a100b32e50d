#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/convoy_sweep.sh -- the convoy case with each of the GVL's answers to
# it on and off: taking a grant back after a short blocking call
# (GVL_F_NORETAKE), the waiter's spin (GVL_F_NOSPIN) and the interactivity
# policy (variant gvloop-noia), on all CPUs and pinned to one (see
# ARCHITECTURE.md, "Short blocking calls: taking the grant back").
#
#   bench/convoy_sweep.sh [--runs N] [--no-build]
#
# Uses the Release build of bench/run.sh (bench/build).  Prints one line per
# setting: medians over the runs of the convoy metrics; beside 2 hogs also
# where their rate went (hog% = cpu% * eff% / 100: the CPU the kernel gave
# them against alone, the share of it that did work; rqw%, the time they
# waited runnable for a CPU).  Nothing is asserted.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$here/build" runs=5 nobuild=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift ;;
    --no-build) nobuild=1 ;;
    *) sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
  shift
done
if [ $nobuild = 0 ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DGVLOOP_BUILD_EXAMPLES=OFF -DGVLOOP_WERROR=OFF >"$build.cmake.log" 2>&1
  cmake --build "$build" -j2 --target gvlbench >"$build.build.log" 2>&1
fi
gvlbench="$build/bench/gvlbench"
[ -x "$gvlbench" ] || { echo "convoy_sweep.sh: $gvlbench not built" >&2; exit 1; }

# median of the values of one metric in RESULT lines on stdin
median() {
  awk -v m="$1" '$1 == "RESULT" && $4 == m { v[n++] = $5 }
    END { if (!n) { print "-"; exit }
          for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
            if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
          printf "%.3g", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'
}

row() {  # label, file
  printf '%-22s %8s %9s %8s %9s %8s %8s %8s %8s\n' "$1" \
    "$(median io_ratio_1hog <"$2")" "$(median hog_pct_1hog <"$2")" \
    "$(median io_ratio_2hog <"$2")" "$(median hog_pct_2hog <"$2")" \
    "$(median io_us_alone <"$2")" "$(median hog_cpu_pct_2hog <"$2")" \
    "$(median hog_eff_pct_2hog <"$2")" "$(median hog_rqwait_pct_2hog <"$2")"
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "INFO $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $runs run(s) per setting"
printf '%-22s %8s %9s %8s %9s %8s %8s %8s %8s\n' setting io_1hog hog%_1hog io_2hog hog%_2hog \
  alone_us cpu%_2 eff%_2 rqw%_2
# setting label, GVL flags, variant, CPU list ("" = all)
sweep() {
  if [ -n "$4" ]; then pin="taskset -c $4"; else pin=""; fi
  GVLBENCH_GVL_FLAGS=$2 $pin "$gvlbench" --case convoy --variant "$3" --runs "$runs" >"$tmp" 2>/dev/null
  row "$1" "$tmp"
}
sweep "default"              0   gvloop      ""
sweep "no take-back"         8   gvloop      ""
sweep "no spin"              2   gvloop      ""
sweep "no spin, no take-back" 10 gvloop      ""
sweep "policy off"           0   gvloop-noia ""
sweep "1 CPU: default"       0   gvloop      0
sweep "1 CPU: no take-back"  8   gvloop      0
