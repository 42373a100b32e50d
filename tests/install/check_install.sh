#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_install.sh BUILD_DIR SRC_DIR [CC]: install the build tree into a
# fresh random prefix and use it there (use_install.sh); then install it
# with DESTDIR at its configured prefix and check that the Tcl package lands
# in a directory on the auto_path of the installed tclsh (at /usr and
# /usr/local: stock tclsh and wish find it without TCLLIBPATH).
set -euo pipefail
build=$1 src=$2 cc=${3:-cc}
tmp=$(mktemp -d /tmp/gvloop-prefix.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
"$src/tests/install/use_install.sh" "$src" "$cc" "$tmp/prefix"

prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
DESTDIR=$tmp/destdir cmake --install "$build" >/dev/null
idx=$(cd "$tmp/destdir" && find . -path '*/gvloop*/pkgIndex.tcl' | sed 's/^\.//')
pkgparent=$(dirname "$(dirname "$idx")")
case $prefix in
  /usr|/usr/local)
    printf 'puts [expr {[lsearch -exact $auto_path {%s}] >= 0}]\n' "$pkgparent" >"$tmp/ap.tcl"
    if [ "$(tclsh8.6 "$tmp/ap.tcl")" != 1 ]; then
      echo "FAIL the Tcl package goes to $pkgparent, not on tclsh8.6's auto_path" >&2
      exit 1
    fi
    echo "ok   at $prefix the Tcl package goes to $pkgparent, on stock tclsh's auto_path" ;;
  *) echo "ok   prefix $prefix: the Tcl package goes to $pkgparent (TCLLIBPATH)" ;;
esac
echo "prefix ok"
