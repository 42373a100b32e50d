#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/quota_spin.sh -- the waiter's spin under a cgroup CPU quota: the
# convoy, thread_pass and dispatch cases, with the spin (GVL flags 0) and
# without it (GVL_F_NOSPIN), run by turns inside a cgroup allowed one CPU's
# time, then half of one (gvl.h: a quota is not looked at; see
# BENCHMARKS.md, "The spin under a CPU quota").  Needs root and a cgroup v1
# cpu controller at /sys/fs/cgroup/cpu (or cpu,cpuacct).
#
#   bench/quota_spin.sh [--runs N] [--no-build]
#
# Uses the Release build of bench/run.sh (bench/build).  Prints one line
# per quota and setting: medians over the runs; the throttled time is the
# cgroup's (cpu.stat) over all of that setting's runs.  Nothing is asserted.
set -eu
. "$(dirname "$0")/sweep_lib.sh"
sweep_args 3,14 "$@"
mnt=""
for m in /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpu; do
  [ -w "$m/cgroup.procs" ] && [ -e "$m/cpu.cfs_quota_us" ] && { mnt=$m; break; }
done
[ -n "$mnt" ] || { echo "quota_spin.sh: needs root and a cgroup v1 cpu controller" >&2; exit 1; }
sweep_gvlbench

cg="$mnt/gvloop-quota-spin-$$"
tmp=$(mktemp -d)
trap 'rmdir "$cg" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$cg"
echo 100000 > "$cg/cpu.cfs_period_us"

throttled() { awk '$1 == "throttled_time" { print $2 }' "$cg/cpu.stat"; }

echo "INFO $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $runs run(s) per setting, by turns"
printf '%-6s %-8s %8s %9s %8s %9s %9s %8s %8s %11s\n' quota spin io_1hog hog%_1hog \
  io_2hog hog%_2hog yield_ns disp_p50 disp_p99 throttled_s
for quota in 100000 50000; do
  echo "$quota" > "$cg/cpu.cfs_quota_us"
  : > "$tmp/0"; : > "$tmp/2"; th0=0; th2=0
  i=0
  while [ $i -lt "$runs" ]; do
    for flags in 0 2; do
      t0=$(throttled)
      GVLBENCH_GVL_FLAGS=$flags sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' \
        sh "$cg" "$gvlbench" --runs 1 --case convoy,thread_pass,dispatch \
        --variant gvloop >>"$tmp/$flags" 2>/dev/null
      t1=$(throttled)
      eval "th$flags=\$((th$flags + t1 - t0))"
    done
    i=$((i + 1))
  done
  for flags in 0 2; do
    f="$tmp/$flags"
    [ $flags = 0 ] && label=on || label=off
    eval "th=\$th$flags"
    printf '%-6s %-8s %8s %9s %8s %9s %9s %8s %8s %11s\n' \
      "$((quota / 1000))%" "$label" \
      "$(median convoy io_ratio_1hog <"$f")" "$(median convoy hog_pct_1hog <"$f")" \
      "$(median convoy io_ratio_2hog <"$f")" "$(median convoy hog_pct_2hog <"$f")" \
      "$(median thread_pass ns_yield <"$f")" \
      "$(median dispatch_latency p50_us <"$f")" "$(median dispatch_latency p99_us <"$f")" \
      "$(awk -v t="$th" 'BEGIN { printf "%.2f", t / 1e9 }')"
  done
done
