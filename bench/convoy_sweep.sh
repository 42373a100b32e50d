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
. "$(dirname "$0")/sweep_lib.sh"
sweep_args 3,15 "$@"
sweep_gvlbench

row() {  # label, file
  printf '%-22s %8s %9s %8s %9s %8s %8s %8s %8s\n' "$1" \
    "$(median convoy io_ratio_1hog <"$2")" "$(median convoy hog_pct_1hog <"$2")" \
    "$(median convoy io_ratio_2hog <"$2")" "$(median convoy hog_pct_2hog <"$2")" \
    "$(median convoy io_us_alone <"$2")" "$(median convoy hog_cpu_pct_2hog <"$2")" \
    "$(median convoy hog_eff_pct_2hog <"$2")" "$(median convoy hog_rqwait_pct_2hog <"$2")"
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
