#!/bin/sh
# SPDX-License-Identifier: MIT
# check_exports.sh SRC_DIR LIB PREFIX [HEADER...]: the shared library LIB
# exports only functions named PREFIX*: no data, none of the linker's own
# (_edata, _end, __bss_start).  With headers, exactly the functions they
# declare (gcc's -aux-info lists them; a static inline one is not
# exported), plus the helpers those inline functions call (PREFIX_*, a
# second underscore).  Without (a Tcl module): its load entry points.
set -eu
src=$1 lib=$2 prefix=$3
shift 3
inc="-I$src/gvl_api/include -I$src/evloop/include -I$src/tkbridge/include -I$src/tkbridge/tclpkg"
tcl=$(pkg-config --cflags tcl8.6 2>/dev/null || echo -I/usr/include/tcl8.6)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{print $2, $3}' | sort -k2 >"$tmp/nm"
awk '{print $2}' "$tmp/nm" | sort -u >"$tmp/exported"
# Every exported symbol is a function (T) with the library's prefix.
bad=$(awk -v p="$prefix" '$1 != "T" || index($2, p) != 1 {print $1, $2}' "$tmp/nm")
if [ -n "$bad" ]; then
  echo "FAIL $lib exports symbols that are not $prefix* functions:"; echo "$bad"; exit 1
fi
[ -s "$tmp/exported" ] || { echo "FAIL $lib exports nothing"; exit 1; }
if [ $# = 0 ]; then
  echo "exports ok: $(wc -l <"$tmp/exported") symbols in $(basename "$lib")"; exit 0
fi
for h in "$@"; do
  case $h in gvloop_tcl.h) echo '#include <tcl.h>' ;; esac
  echo "#include <$h>"
done >"$tmp/t.c"
# gcc only: clang has no -aux-info, and the check is about the library.
command -v gcc >/dev/null || { echo "exports ok: prefix only (no gcc for -aux-info)"; exit 0; }
# shellcheck disable=SC2086
gcc -fsyntax-only -aux-info "$tmp/aux" $inc $tcl "$tmp/t.c"
for h in "$@"; do
  # Declarations (NC) from this header, not definitions (NF: static inline).
  grep "/$h:[0-9]*:NC \*/" "$tmp/aux" |
    sed -n "s/.*[ *]\($prefix[A-Za-z0-9_]*\) (.*/\1/p"
done | sort -u >"$tmp/declared"
status=0
# Exported but not declared: only PREFIX_ _helpers called by inline code.
extra=$(comm -13 "$tmp/declared" "$tmp/exported" | grep -v "^${prefix}_" || true)
if [ -n "$extra" ]; then
  echo "FAIL $lib exports what its headers do not declare:"; echo "$extra"; status=1
fi
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
if [ -n "$missing" ]; then
  echo "FAIL $lib does not export what its headers declare:"; echo "$missing"; status=1
fi
[ $status = 0 ] || exit 1
[ -s "$tmp/declared" ] || { echo "FAIL no declarations found in $*"; exit 1; }
echo "exports ok: $(wc -l <"$tmp/exported") symbols in $(basename "$lib")"
