#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/setup-anchors.sh -- install what the full benchmark run uses beyond
# the build: Debian's ruby and python3 (the outside anchors) and gnuplot-nox
# (the chart).  CI does not need any of them: without them run.sh skips the
# anchors and the chart.  Needs root (or sudo) on Debian/Ubuntu.
set -eu
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
# apt may be busy with another install; wait for it rather than fail.
for i in 1 2 3 4 5 6 7 8 9 10; do
  if $sudo apt-get install -y --no-install-recommends ruby python3 gnuplot-nox; then
    exit 0
  fi
  echo "setup-anchors: apt-get failed (locked?), retrying in 10 s" >&2
  sleep 10
  [ $i = 3 ] && $sudo apt-get update || :
done
exit 1
