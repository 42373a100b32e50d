#!/bin/bash
# SPDX-License-Identifier: MIT
# clean_fds.sh LIMIT CMD ARGS...: run CMD with only descriptors 0-2 open (the
# test harness may pass others down) and `ulimit -n LIMIT` (- for no change),
# so that what CMD opens is what it counts.
limit=$1
shift
for f in /proc/$$/fd/*; do
  fd=${f##*/}
  [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
done
[ "$limit" = - ] || ulimit -n "$limit" || exit 2
exec "$@"
