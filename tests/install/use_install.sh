#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# use_install.sh SRC_DIR CC PREFIX|--system
#
# Use an installed gvloop as its users would:
#  - a pkg-config consumer for each library (gvl, evloop, tkbridge), linked
#    with -rpath to the libdir as the README says, run without
#    LD_LIBRARY_PATH (a libevloop or libtkbridge consumer linked --as-needed
#    records only that library: the others are found by its RUNPATH);
#  - a CMake project with find_package(gvloop COMPONENTS ...), shared and
#    static targets, and a request for an unknown component that must fail;
#  - gvtclsh and gvwish run, with no LD_LIBRARY_PATH (their RUNPATH);
#  - the gvloop Tcl package loaded by stock tclsh8.6 and wish8.6.
# PREFIX: a tree from `cmake --install --prefix PREFIX`; only the variables
# such a prefix needs are set (PKG_CONFIG_PATH, CMAKE_PREFIX_PATH, and
# TCLLIBPATH if the package is not on Tcl's auto_path; never LD_LIBRARY_PATH
# for the shells and the package).  --system: the .deb is installed; nothing
# is set at all.  Wish runs on a private Xvfb (tests/tkbridge/run_x.sh) when
# DISPLAY is unset.
set -euo pipefail
src=$1 cc=$2 where=$3
here=$src/tests/install
run_x=$src/tests/tkbridge/run_x.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*" >&2; exit 1; }

if [ "$where" = --system ]; then
  prefix=/usr bindir=/usr/bin
  pc() { pkg-config "$@"; }
  cmake_prefix=()
  tcl_env=()
else
  prefix=$where bindir=$where/bin
  pcdir=$(dirname "$(find "$prefix" -name gvl.pc | head -1)")
  pc() { PKG_CONFIG_PATH=$pcdir pkg-config "$@"; }
  cmake_prefix=(-DCMAKE_PREFIX_PATH="$prefix")
  pkgidx=$(find "$prefix" -path '*/gvloop*/pkgIndex.tcl' | head -1)
  [ -n "$pkgidx" ] || fail "no gvloop pkgIndex.tcl under $prefix"
  tcl_env=(TCLLIBPATH="$(dirname "$(dirname "$pkgidx")")")
fi

# ---- pkg-config -----------------------------------------------------------------
for lib in gvl evloop tkbridge; do
  case $lib in gvl) c=main.c ;; evloop) c=evl.c ;; tkbridge) c=tkb.c ;; esac
  # shellcheck disable=SC2046
  "$cc" -o "$tmp/pc_$lib" "$here/consumer/$c" $(pc --cflags --libs "$lib") \
    || fail "pkg-config consumer of $lib does not build"
  libdir=$(pc --variable=libdir "$lib")
  [ -f "$libdir/lib$lib.so" ] || fail "$lib.pc: libdir $libdir has no lib$lib.so"
  out=$(LD_LIBRARY_PATH=$libdir "$tmp/pc_$lib") || fail "pkg-config consumer of $lib: $out"
  ok "pkg-config $lib ($(pc --modversion "$lib")): $out"
  if [ "$where" != --system ]; then
    # A program that calls this library alone (its consumer above also
    # calls libgvl, which then is recorded and found by the -rpath).
    case $lib in gvl) p=gvl ;; evloop) p=evl ;; tkbridge) p=tkb ;; esac
    printf '#include <%s.h>\n#include <errno.h>\n#include <stdio.h>\nint main(void) { puts(%s_err_name(EINVAL)); return 0; }\n' \
      "$lib" "$p" >"$tmp/only_$lib.c"
    # shellcheck disable=SC2046
    "$cc" -Wl,--as-needed -o "$tmp/rp_$lib" "$tmp/only_$lib.c" $(pc --cflags --libs "$lib") \
      -Wl,-rpath,"$libdir" || fail "a program of $lib's calls alone, with -rpath, does not build"
    out=$(env -u LD_LIBRARY_PATH "$tmp/rp_$lib") || fail "$lib's calls alone, -rpath, --as-needed: $out"
    ok "pkg-config $lib, -rpath, --as-needed, no LD_LIBRARY_PATH: $out"
  fi
done
# README.md's quick start, built with the command the README gives.
sed -n '/^```c$/,/^```$/p' "$src/README.md" | sed '1d;$d' >"$tmp/app.c"
[ -s "$tmp/app.c" ] || fail "README.md has no C block"
# shellcheck disable=SC2046
(cd "$tmp" && "$cc" -o app app.c $(pc --cflags --libs gvl)) || fail "README's quick start does not build"
out=$(LD_LIBRARY_PATH=$(pc --variable=libdir gvl) "$tmp/app") || fail "README's quick start: $out"
[ "$out" = done ] || fail "README's quick start printed: $out"
ok "README.md's quick start builds with its pkg-config line and runs"

pc --print-requires evloop | grep -q '^libuv' && fail "evloop.pc: libuv is a public Requires"
ok "evloop.pc: libuv only in Requires.private"

# ---- the static archives ----------------------------------------------------------
# A host linking them exports the API to the extensions it loads (-rdynamic),
# and the three hold no symbol twice: they make one shared object together.
libdir=$(pc --variable=libdir tkbridge)
archives=("$libdir/libtkbridge.a" "$libdir/libevloop.a" "$libdir/libgvl.a")
deps=()
for w in $(pc --libs --static tkbridge); do
  case $w in -ltkbridge|-levloop|-lgvl) ;; *) deps+=("$w") ;; esac
done
# shellcheck disable=SC2046
"$cc" -shared -fPIC -o "$tmp/plugin.so" "$here/consumer/plugin.c" $(pc --cflags tkbridge) \
  || fail "an extension using the headers alone does not build"
# shellcheck disable=SC2046
"$cc" -rdynamic -o "$tmp/plugin_host" "$here/consumer/plugin_host.c" $(pc --cflags tkbridge) \
  "${archives[@]}" "${deps[@]}" -ldl || fail "a host linking the static archives does not build"
out=$(env -u LD_LIBRARY_PATH "$tmp/plugin_host" "$tmp/plugin.so") || fail "static host and extension: $out"
ok "$out"
"$cc" -shared -o "$tmp/bundle.so" -Wl,--whole-archive "${archives[@]}" -Wl,--no-whole-archive \
  "${deps[@]}" >"$tmp/bundle.log" 2>&1 || { cat "$tmp/bundle.log"; fail "the static archives define a symbol twice"; }
ok "libtkbridge.a, libevloop.a and libgvl.a make one shared object (no symbol twice)"

# ---- CMake ----------------------------------------------------------------------
cmake -S "$here/consumer" -B "$tmp/cm" "${cmake_prefix[@]}" -DCMAKE_C_COMPILER="$cc" \
  -DCOMPONENTS="gvl;evloop;tkbridge" >"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package(gvloop COMPONENTS gvl evloop tkbridge)"; }
cmake --build "$tmp/cm" >"$tmp/cmb.log" 2>&1 || { cat "$tmp/cmb.log"; fail "CMake consumer does not build"; }
for exe in "$tmp"/cm/consumer_*; do
  out=$(env -u LD_LIBRARY_PATH "$exe") || fail "$(basename "$exe"): $out"
  ok "cmake $(basename "$exe"): $out"
done
grep -rqs 'libuv\.so\|libpthread\.a\|/usr/lib/x86_64-linux-gnu/lib' "$(dirname "$(find "$prefix" -name gvloopConfig.cmake | head -1)")"/gvloop-*-targets.cmake \
  && fail "exported targets name absolute library paths"
ok "exported targets use imported targets for their dependencies"
cmake -S "$here/consumer" -B "$tmp/cm1" "${cmake_prefix[@]}" -DCMAKE_C_COMPILER="$cc" \
  -DCOMPONENTS=tkbridge >"$tmp/cm1.log" 2>&1 || { cat "$tmp/cm1.log"; fail "find_package(gvloop COMPONENTS tkbridge)"; }
ok "find_package(gvloop COMPONENTS tkbridge)"
if cmake -S "$here/consumer" -B "$tmp/cm2" "${cmake_prefix[@]}" -DCMAKE_C_COMPILER="$cc" \
     -DCOMPONENTS=bogus >"$tmp/cm2.log" 2>&1; then
  fail "find_package(gvloop COMPONENTS bogus) succeeded"
fi
grep -q "no component 'bogus'" "$tmp/cm2.log" || { cat "$tmp/cm2.log"; fail "no message for an unknown component"; }
ok "find_package(gvloop COMPONENTS bogus) fails and says why"

# ---- shells and the Tcl package ---------------------------------------------------
printf 'puts "gvtclsh: Tcl [info patchlevel], [dict size [gvloop::stats]] bridge counters"\n' >"$tmp/sh.tcl"
out=$(env -u LD_LIBRARY_PATH "$bindir/gvtclsh" "$tmp/sh.tcl" 2>&1) || fail "gvtclsh: $out"
ok "$out"
printf 'puts "gvwish [package require Tk]"; exit 0\n' >"$tmp/wish.tcl"
out=$(env -u LD_LIBRARY_PATH "$run_x" "$bindir/gvwish" "$tmp/wish.tcl" 2>&1) || fail "gvwish: $out"
ok "$out"
printf 'puts "tclsh: gvloop [package require gvloop]"\n' >"$tmp/pkg.tcl"
out=$(env -u LD_LIBRARY_PATH "${tcl_env[@]}" tclsh8.6 "$tmp/pkg.tcl" 2>&1) || fail "stock tclsh: $out"
ok "$out"
printf 'puts "wish: gvloop [package require gvloop], Tk [package require Tk]"; exit 0\n' >"$tmp/pkgw.tcl"
out=$(env -u LD_LIBRARY_PATH "${tcl_env[@]}" "$run_x" wish8.6 "$tmp/pkgw.tcl" 2>&1) || fail "stock wish: $out"
ok "$out"
echo "install ok"
