#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check.sh -- verify the GVL mechanism model (gvl.pml) with SPIN.
#
#   tests/model/check.sh
#
# Runs, each as its own SPIN verifier (spin -a, then pan compiled with cc):
#   1. safety of the model of gvl_lock.c: assertions (mutual exclusion, the
#      lock word and queue invariants, no held-back boost served by a yield
#      within the slice),
#      invalid end states (deadlock), and no code left unreached except
#      lines marked [unreached-ok] in gvl.pml;
#   2. liveness, weak fairness: every acquire completes (LTL `served`; this
#      also rules out lost wake-ups and a lost timer);
#   3. broken variants that SPIN must reject, at least one for each way the
#      GVL changes hands: barging release, lost wake-up (seq read late; wake
#      without a seq bump), timer role passed without a wake, no slice
#      preemption, a yield that hands over before queueing itself, a pick
#      that ignores the cap, a revocable grant taken without CAS, taken
#      back without the timer role, or taken back with the slice restarted,
#      a boosted release that leaves a revocable grant past its slice;
#   4. the same with a hook's window in every yield (-DHOOKS: mu dropped
#      between the pick and the handoff), safety and liveness, and its
#      broken variant (a request made in the window left on the yielder);
#   5. the model's limit: with two boosted threads a normal one can starve
#      (aging and the boost cap are time-based and not modelled);
#   6. the interactive requeue (-DIA_REQUEUE: a preempted holder queues at
#      up to the level of the waiter it hands to): safe, and under the same
#      limit as 5.
#
# Exits non-zero if any check does not give the expected verdict, or if a
# search is incomplete (depth or memory bound hit).
# Environment: SPIN (spin), PAN_CC (cc), GVL_MODEL_WORK (temporary dir).
set -u

here=$(cd "$(dirname "$0")" && pwd)
model=$here/gvl.pml
spin=${SPIN:-spin}
cc=${PAN_CC:-cc}

depth=4000000          # -m: safety with IA_REQUEUE reaches ~3.3M
memlim=2048            # MB, pan stops (and we fail) beyond this
hashw=23               # 8M hash slots, for 2-7M states

if ! command -v "$spin" >/dev/null 2>&1; then
  echo "check.sh: spin not found (Debian package: spin)" >&2
  exit 2
fi

if [ -n "${GVL_MODEL_WORK:-}" ]; then
  work=$GVL_MODEL_WORK
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/gvl-model.XXXXXX")
  # kept when something failed, for the trails
  trap 'if [ $failures = 0 ]; then rm -rf "$work"; else echo "logs and trails: $work"; fi' EXIT
fi

failures=0
start=$SECONDS

# Each check prints one line, "ok ..." or "FAIL ...".  Checks run in two
# lanes at once, each writing its own file (the big liveness search is one
# lane, everything else the other), and the FAIL lines are counted at the
# end.
fail() { echo "FAIL $*"; }

# build NAME MODE DEFS...  -> $work/NAME/pan   (MODE: safety | liveness)
build() {
  local name=$1 mode=$2
  shift 2
  local dir=$work/$name
  local flags=(-O1 -w -DCOLLAPSE -DMEMLIM=$memlim)
  rm -rf "$dir" && mkdir -p "$dir" && cp "$model" "$dir/gvl.pml" || return 1
  [ "$mode" = safety ] && flags+=(-DSAFETY -DNOCLAIM)
  (cd "$dir" && "$spin" "$@" -a gvl.pml >spin.log 2>&1) || {
    fail "$name: spin -a failed"; cat "$dir/spin.log"; return 1; }
  (cd "$dir" && "$cc" "${flags[@]}" -o pan pan.c >cc.log 2>&1) || {
    fail "$name: compiling pan failed"; cat "$dir/cc.log"; return 1; }
}

# run NAME MODE CLAIM  -> $work/NAME/pan.log
run() {
  local name=$1 mode=$2 claim=$3
  local args=(-m$depth -w$hashw)
  [ "$mode" = liveness ] && args+=(-a -f -N "$claim")
  (cd "$work/$name" && ./pan "${args[@]}" >pan.log 2>&1)
  return 0   # pan's status is not its verdict; the log is read instead
}

field() { # field LOG REGEX -> first match, whitespace-trimmed
  grep -m1 -E "$2" "$1" | sed -e 's/^[[:space:]]*//'
}

summary() { # one line: states, depth, time
  local log=$1
  local st dp tm
  st=$(field "$log" 'states, stored' | awk '{print $1}')
  dp=$(field "$log" 'depth reached' | sed -e 's/.*depth reached \([0-9]*\).*/\1/')
  tm=$(field "$log" 'elapsed time' | awk '{print $4}')
  echo "${st:-?} states, depth ${dp:-?}, ${tm:-?} s"
}

incomplete() { # did the search stop early for lack of depth or memory?
  grep -qE 'Search not completed|max search depth too small|reached -DMEMLIM|out of memory' "$1"
}

# Unreached statements of the protocol, other than -end- and lines that
# gvl.pml marks [unreached-ok], mean a path of the model is dead.  Lines are
# looked up in the copy that was verified.
check_unreached() {
  local log=$1 src=$2 bad=0 line stmt
  while IFS= read -r l; do
    line=$(printf '%s\n' "$l" | sed -n -e 's/.*gvl\.pml:\([0-9]*\),.*/\1/p')
    stmt=$(printf '%s\n' "$l" | sed -n -e 's/.*state [0-9]*, "\(.*\)"$/\1/p')
    [ -z "$line" ] && continue
    [ "$stmt" = "-end-" ] && continue
    if ! sed -n "${line}p" "$src" | grep -q '\[unreached-ok\]'; then
      echo "     unreached: gvl.pml:$line $stmt"
      bad=1
    fi
  done < <(awk '/^unreached in proctype/{p=1; next} /^unreached in/{p=0} p' "$log")
  return $bad
}

# expect_pass NAME MODE CLAIM DEFS...
expect_pass() {
  local name=$1 mode=$2 claim=$3
  shift 3
  build "$name" "$mode" "$@" || return
  run "$name" "$mode" "$claim"
  local log=$work/$name/pan.log
  local errs
  errs=$(field "$log" 'errors: [0-9]+' | sed -e 's/.*errors: \([0-9]*\).*/\1/')
  if [ "$errs" != 0 ]; then
    fail "$name: $(grep -m1 -E '^pan:[0-9]+:|^pan: ' "$log")"
    echo "     (trail: cd $work/$name && spin -t -p -g gvl.pml)"
    return
  fi
  if incomplete "$log"; then
    fail "$name: search incomplete: $(grep -m1 -E 'not completed|depth too small|MEMLIM|memory' "$log")"
    return
  fi
  if [ "$mode" = safety ] && ! check_unreached "$log" "$work/$name/gvl.pml"; then
    fail "$name: dead code in the model (see above)"
    return
  fi
  echo "ok   $name: $(summary "$log")"
}

# expect_fail NAME MODE CLAIM PATTERN DEFS...
expect_fail() {
  local name=$1 mode=$2 claim=$3 pat=$4
  shift 4
  build "$name" "$mode" "$@" || return
  run "$name" "$mode" "$claim"
  local log=$work/$name/pan.log
  local first
  first=$(grep -m1 -E '^pan:[0-9]+:' "$log")
  if [ -z "$first" ]; then
    fail "$name: SPIN found no error in a model that must fail ($(summary "$log"))"
    return
  fi
  if ! printf '%s\n' "$first" | grep -qE "$pat"; then
    fail "$name: expected /$pat/, got: $first"
    return
  fi
  echo "ok   $name: rejected as expected: ${first#pan:1: }" | cut -c1-110
}

echo "SPIN model of the GVL mechanism ($("$spin" -V | head -1))"

lane1() {
  expect_pass safety   safety   -
  expect_pass served   liveness served   # implies every queued waiter is served
}

lane2() {
  expect_fail bug-barge      safety   -      'assertion violated' -DBUG_BARGE
  expect_fail bug-seq        safety   -      'invalid end state'  -DBUG_SEQ
  expect_fail bug-timerwake  liveness served 'acceptance cycle'   -DBUG_TIMERWAKE
  expect_fail bug-nopreempt  liveness served 'acceptance cycle'   -DBUG_NOPREEMPT
  expect_fail bug-noseq      safety   -      'invalid end state'  -DBUG_NOSEQ
  expect_fail bug-yieldfirst safety   -      'assertion violated' -DBUG_YIELDFIRST
  expect_fail bug-cappick    safety   -      'assertion violated' -DBUG_CAPPICK
  expect_fail bug-hotnocas   safety   -      'assertion violated' -DBUG_HOTNOCAS
  expect_fail bug-hottimer   safety   -      'assertion violated' -DBUG_HOTTIMER
  expect_fail bug-hotslice   liveness served 'acceptance cycle'   -DBUG_HOTSLICE
  expect_fail bug-hotboostslice liveness served 'acceptance cycle' -DBUG_HOTBOOSTSLICE
  # A hook's window in a yield (mu dropped for SUSPENDED): safe, live, and
  # a request made in it must not stay with the yielder.
  expect_pass hooks          safety   -      -DHOOKS
  expect_fail bug-hookflag   safety   -      'assertion violated' -DHOOKS -DBUG_HOOKFLAG
  expect_pass served-hooks   liveness served -DHOOKS
  # Not a bug: two boosted threads starve a normal one unless time-based
  # aging or the boost cap steps in, and neither is in the model.
  expect_fail two-boosted    liveness served 'acceptance cycle'   -DTWO_BOOSTED
  # The interactive requeue: safe; live only with the cap, as above.
  expect_pass ia-requeue     safety   -      -DIA_REQUEUE
  expect_fail ia-requeue-served liveness served 'acceptance cycle' -DIA_REQUEUE
}

lane1 >"$work/lane1.out" 2>&1 &
pid1=$!
lane2 >"$work/lane2.out" 2>&1
wait $pid1
cat "$work/lane1.out" "$work/lane2.out"
failures=$(cat "$work/lane1.out" "$work/lane2.out" | grep -c '^FAIL')

echo "total $((SECONDS - start)) s, $failures failure(s)"
[ $failures = 0 ]
