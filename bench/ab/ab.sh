#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/ab/ab.sh -- A/B of the GVL's handoff between two git revisions:
# yield_pingpong.c built against each revision's libgvl (Release), the two
# run in turn ROUNDS times, each line printed, then each side's median.
#
#   bench/ab/ab.sh REV_A REV_B [ROUNDS [YIELDS]]     (defaults 8, 500000)
#
# Interleaving puts a change in the machine's state (its cache-line mode,
# other load) on both sides; compare the two medians of one invocation,
# never figures of different invocations.
set -eu
[ $# -ge 2 ] || { sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/a" 2>/dev/null || :
      git -C "$root" worktree remove --force "$work/b" 2>/dev/null || :
      rm -rf "$work"' EXIT
rounds=${3:-8} yields=${4:-500000}
for side in a b; do
  [ $side = a ] && rev=$1 || rev=$2
  git -C "$root" worktree add -q --detach "$work/$side" "$rev"
  cmake -S "$work/$side" -B "$work/$side.build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_TESTING=OFF -DGVLOOP_BUILD_BENCH=OFF -DGVLOOP_BUILD_EVLOOP=OFF \
    -DGVLOOP_BUILD_EXAMPLES=OFF -DGVLOOP_WERROR=OFF >"$work/$side.log" 2>&1
  cmake --build "$work/$side.build" --target gvl -j2 >>"$work/$side.log" 2>&1
  lib=$(dirname "$(find "$work/$side.build" -name 'libgvl.so' | head -1)")
  ${CC:-cc} -O2 -I"$work/$side/gvl_api/include" "$here/yield_pingpong.c" \
    -o "$work/pp_$side" -L"$lib" -lgvl -Wl,-rpath,"$lib" -lpthread
done
i=0
while [ $i -lt "$rounds" ]; do
  for side in a b; do echo "$side $("$work/pp_$side" "$yields")"; done
  i=$((i + 1))
done | tee "$work/out"
for side in a b; do
  awk -v s=$side '$1 == s { v[n++] = $3 }
    END { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
            if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
          printf "%s median ns_yield %.1f (%d runs)\n", s,
                 n % 2 ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2, n }' \
    "$work/out"
done
