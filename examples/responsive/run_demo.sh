#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_demo.sh BUILD_DIR [--headless] [--out DIR] [--phase-ms MS] [--threads N]
#
# Runs the responsive demo built in BUILD_DIR.
#  - With $DISPLAY (and no --headless): opens the window; close it to quit.
#  - Without one: starts a private Xvfb, runs the scripted tour (the four
#    GVL policies one after another, with clicks on Ping), saves a PNG
#    screenshot of the window at the end and prints the latency figures
#    per policy.  About 4 x phase + 5 s (phase: 9 s unless --phase-ms).
# Output of the headless run goes to --out (default BUILD_DIR/demo):
# responsive.png and responsive.log.
set -euo pipefail

usage() {
  [ $# -gt 0 ] && echo "run_demo.sh: $*" >&2
  echo "usage: $0 BUILD_DIR [--headless] [--out DIR] [--phase-ms MS] [--threads N]" >&2
  exit 2
}
# number NAME VALUE LO HI: VALUE must be a whole number in [LO, HI].
number() {
  case $2 in ''|*[!0-9]*) usage "$1 $2: not a whole number" ;; esac
  # Past nine digits test(1) may not compare it: out of range anyway.
  if [ ${#2} -gt 9 ]; then usage "$1 $2: out of range ($3..$4)"; fi
  if [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then usage "$1 $2: out of range ($3..$4)"; fi
}
[ $# -ge 1 ] || usage
case $1 in -h|--help) usage ;; -*) usage "the first argument is the build directory, not $1" ;; esac
build=$1; shift
headless=0; out=""; phase=9000; threads=2; check=0
while [ $# -gt 0 ]; do
  case $1 in
    --headless) headless=1 ;;
    --check-args) check=1 ;;   # scripts/demo.sh: refuse bad options before building
    --out) [ $# -ge 2 ] || usage "--out needs a directory"; out=$2; shift ;;
    --phase-ms) [ $# -ge 2 ] || usage "--phase-ms needs a value"
                number --phase-ms "$2" 200 600000; phase=$2; shift ;;
    --threads) [ $# -ge 2 ] || usage "--threads needs a value"
               number --threads "$2" 1 8; threads=$2; shift ;;
    *) usage "unknown option $1" ;;
  esac
  shift
done
[ $check = 1 ] && exit 0
bin=$build/examples/responsive/responsive
if [ ! -x "$bin" ]; then
  echo "run_demo.sh: $bin not built (cmake --build $build)" >&2
  exit 1
fi

if [ -n "${DISPLAY:-}" ] && [ $headless = 0 ]; then
  echo "Opening the demo window on $DISPLAY: rendering starts by itself; switch the policy, click Ping."
  exec "$bin" --threads "$threads"
fi

# ---- headless: Xvfb, scripted tour, screenshot, figures ---------------------
for tool in Xvfb import; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "run_demo.sh: $tool not found (apt-get install xvfb imagemagick)" >&2
    exit 1
  fi
done
out=${out:-$build/demo}
mkdir -p "$out"
png=$out/responsive.png
log=$out/responsive.log
hold=$out/.screenshot-taken
rm -f "$png" "$log" "$hold"

tmp=$(mktemp -d /tmp/gvloop_demo.XXXXXX)
xpid=""; apid=""
cleanup() {
  [ -n "$apid" ] && kill "$apid" 2>/dev/null || true
  [ -n "$xpid" ] && kill "$xpid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The screen is exactly the window's size, so the screenshot is the window.
Xvfb -displayfd 3 -screen 0 960x680x24 -nolisten tcp 3>"$tmp/display" 2>"$tmp/xvfb.log" &
xpid=$!
for _ in $(seq 200); do
  [ -s "$tmp/display" ] && break
  kill -0 "$xpid" 2>/dev/null || break
  sleep 0.05
done
if [ ! -s "$tmp/display" ]; then
  echo "run_demo.sh: Xvfb did not start:" >&2; cat "$tmp/xvfb.log" >&2
  exit 1
fi
export DISPLAY=:$(head -n1 "$tmp/display")

secs=$(( (4 * phase + 999) / 1000 ))
echo "No display: running the demo under Xvfb ($DISPLAY) for about $((secs + 3)) s:"
echo "  $threads interpreter threads render while a 20 ms timer and clicks on Ping run host code;"
echo "  policies in turn: cond-timer, cpython, gvloop-noboost, gvloop (with boost)."
"$bin" --script --threads "$threads" --phase-ms "$phase" --hold-file "$hold" >"$log" 2>&1 &
apid=$!

# Wait for the app to say the window is final, then take the screenshot.
limit=$(( secs + 40 ))
start=$SECONDS
shot=0
while kill -0 "$apid" 2>/dev/null; do
  if [ $shot = 0 ] && grep -q '^snapshot: ready' "$log"; then
    import -window root "$png" 2>"$tmp/import.log" || cat "$tmp/import.log" >&2
    touch "$hold"
    shot=1
  fi
  if [ $((SECONDS - start)) -gt $limit ]; then
    echo "run_demo.sh: the demo did not finish in ${limit} s" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
rc=0
wait "$apid" || rc=$?
apid=""
sed -n '/^dispatch latency/,$p' "$log"
# One line for a newcomer: how much sooner gvloop ran the event's host code.
awk '/^STAT /{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
               p50[f["policy"]] = f["p50_us"] + 0 }
     END { g = p50["gvloop"]; if (g <= 0) exit
           line = sprintf("median wait from event to host code: gvloop %.0f us", g)
           n = split("cpython cond-timer gvloop-noboost", k, " ")
           for (i = 1; i <= n; i++) if (p50[k[i]] > 0)
             line = line sprintf(", %s %.1f ms (%.0fx)", k[i], p50[k[i]] / 1000, p50[k[i]] / g)
           print line }' "$log"
if [ $rc != 0 ]; then
  echo "run_demo.sh: the demo exited with status $rc; its output:" >&2
  cat "$log" >&2
  exit $rc
fi
if [ -s "$png" ]; then
  echo "screenshot: $png"
else
  echo "run_demo.sh: no screenshot was taken" >&2
  exit 1
fi
