# SPDX-License-Identifier: MIT
# bench/sweep_lib.sh -- sourced by the sweep scripts (convoy_sweep.sh,
# quota_spin.sh): their two options, the Release build of gvlbench they
# share with bench/run.sh (bench/build), and medians of gvlbench's RESULT
# lines.

# sweep_args USAGE "$@": --runs N and --no-build; anything else prints the
# calling script's usage (its comment lines USAGE, e.g. 3,15) and exits 2.
# Sets here, root, build, runs (default 5) and nobuild.
sweep_args() {
  usage=$1
  shift
  here=$(cd "$(dirname "$0")" && pwd)
  root=$(cd "$here/.." && pwd)
  build="$here/build" runs=5 nobuild=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --runs) runs=$2; shift ;;
      --no-build) nobuild=1 ;;
      *) sed -n "${usage}p" "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
    shift
  done
}

# sweep_gvlbench: builds gvlbench (unless --no-build) and sets gvlbench.
sweep_gvlbench() {
  if [ "$nobuild" = 0 ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
          -DGVLOOP_BUILD_EXAMPLES=OFF -DGVLOOP_WERROR=OFF >"$build.cmake.log" 2>&1
    cmake --build "$build" -j2 --target gvlbench >"$build.build.log" 2>&1
  fi
  gvlbench="$build/bench/gvlbench"
  [ -x "$gvlbench" ] || { echo "$(basename "$0"): $gvlbench not built" >&2; exit 1; }
}

# median CASE METRIC: the median of METRIC in CASE's RESULT lines on stdin,
# "-" if there are none.
median() {
  awk -v c="$1" -v m="$2" '$1 == "RESULT" && $2 == c && $4 == m { v[n++] = $5 }
    END { if (!n) { print "-"; exit }
          for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
            if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
          printf "%.3g", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'
}
