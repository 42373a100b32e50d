#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_install.sh BUILD_DIR SRC_DIR [CC]: install the build tree into a
# fresh random prefix and use it there (use_install.sh; use_ocaml.sh when
# the build has the OCaml host, with the build tree hidden where a mount
# namespace can be had); then install it with DESTDIR at its configured
# prefix and check that the Tcl package lands in a directory on the
# auto_path of the installed tclsh, and the OCaml package in one on
# ocamlfind's search path (at /usr and /usr/local: stock tclsh and wish find
# it without TCLLIBPATH, ocamlfind without OCAMLPATH); last, install it
# stripped and uninstall it.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) cc=${3:-cc}
tmp=$(mktemp -d /tmp/gvloop-prefix.XXXXXX)
# The installs below rewrite the build tree's record of its last install
# (install_manifest.txt and its .destdir): put back what was there, so the
# uninstall target still knows the user's own install.
manifest=$build/install_manifest.txt
for f in "$manifest" "$manifest.destdir"; do
  if [ -e "$f" ]; then cp -p "$f" "$tmp/$(basename "$f").saved"; fi
done
restore() {
  for f in "$manifest" "$manifest.destdir"; do
    if [ -e "$tmp/$(basename "$f").saved" ]; then cp -p "$tmp/$(basename "$f").saved" "$f"
    else rm -f "$f"; fi
  done
  rm -rf "$tmp"
}
trap restore EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
"$src/tests/install/use_install.sh" "$src" "$cc" "$tmp/prefix"

# OCaml: the installed findlib package must not need the build tree.
if [ ! -f "$build/hosts/ocaml/findlib/gvloop/META" ]; then
  echo "skip OCaml: the build has no OCaml host (hosts/ocaml)"
elif ! command -v ocamlfind >/dev/null; then
  echo "skip OCaml: no ocamlfind"
else
  ocaml=("$src/tests/install/use_ocaml.sh" "$src" "$tmp/prefix")
  [ -f "$build/hosts/ocaml/labltk/lib/gvltk.cma" ] && ocaml+=(labltk)
  meta=$(find "$tmp/prefix" -path '*/gvloop/META' -print -quit)
  if [ -n "$meta" ] && grep -n -F "$build" "$meta"; then
    echo "FAIL the installed META names the build tree" >&2
    exit 1
  fi
  case $src/ in "$build"/*) hide=no ;; *) hide=yes ;; esac
  if [ $hide = yes ] && unshare -m sh -c 'mount -t tmpfs none "$1"' sh "$build" 2>/dev/null; then
    echo "ok   (the OCaml checks run with the build tree $build hidden)"
    unshare -m sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' sh "$build" "${ocaml[@]}"
  else
    echo "ok   (the OCaml checks run with the build tree present: no mount namespace)"
    "${ocaml[@]}"
  fi
fi

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
meta=$(cd "$tmp/destdir" && find . -path '*/gvloop/META' | sed 's/^\.//')
if [ -n "$meta" ] && command -v ocamlfind >/dev/null; then
  findlibdir=$(dirname "$(dirname "$meta")")
  case $prefix in
    /usr|/usr/local)
      searched=$(env -u OCAMLPATH ocamlfind printconf path)
      if ! grep -qxF "$findlibdir" <<<"$searched"; then
        echo "FAIL the OCaml package goes to $findlibdir, not on ocamlfind's search path" >&2
        exit 1
      fi
      echo "ok   at $prefix the OCaml package goes to $findlibdir, on ocamlfind's search path" ;;
    *) echo "ok   prefix $prefix: the OCaml package goes to $findlibdir (OCAMLPATH)" ;;
  esac
fi

# --strip (what CPack does): the static archives keep no debug info, which
# names the build's source tree, and nothing outside the staging tree is
# touched: the build links files of other packages (labltk's), which an
# install links in turn and a strip must not write through.  Installed
# twice (an update), then `uninstall` takes all of it away.
outside=$(find "$build" -type l -xtype f -exec readlink -f {} + 2>/dev/null | grep -v "^$build/" | sort -u || true)
sums() { [ -z "$outside" ] || printf '%s\n' "$outside" | xargs -r -d '\n' sha256sum; }
before=$(sums)
DESTDIR=$tmp/strip cmake --install "$build" --strip >/dev/null
DESTDIR=$tmp/strip cmake --install "$build" --strip >/dev/null
if [ "$(sums)" != "$before" ]; then
  echo "FAIL install --strip changed files outside the staging tree:" >&2
  diff <(printf '%s\n' "$before") <(sums) >&2
  exit 1
fi
echo "ok   install --strip changed nothing outside the staging tree ($(printf '%s' "$outside" | grep -c . || true) linked files)"
for a in $(find "$tmp/strip" -type f -name 'lib*.a'); do
  if grep -qaF "$src/" "$a"; then
    echo "FAIL $a, installed with --strip, still names $src" >&2
    exit 1
  fi
done
echo "ok   installed with --strip, the static archives name no source path"
if DESTDIR=/elsewhere cmake --build "$build" --target uninstall >"$tmp/un.log" 2>&1; then
  echo "FAIL uninstall of a DESTDIR install ran under another DESTDIR" >&2
  exit 1
fi
grep -q "the last install used DESTDIR" "$tmp/un.log" || { cat "$tmp/un.log"; echo "FAIL no reason given" >&2; exit 1; }
echo "ok   uninstall refuses a DESTDIR other than the install's"
# A file of the user's in one of gvloop's folders stays, and so does the folder.
keepdir=$(find "$tmp/strip" -type d -path '*/cmake/gvloop' | head -1)
echo mine >"$keepdir/mine.txt"
env -u DESTDIR cmake --build "$build" --target uninstall >/dev/null   # the recorded one
if [ ! -f "$keepdir/mine.txt" ]; then
  echo "FAIL uninstall removed a file it had not installed" >&2
  exit 1
fi
rm "$keepdir/mine.txt" && rmdir "$keepdir"
left=$(find "$tmp/strip" ! -type d | head -5)
if [ -n "$left" ]; then
  echo "FAIL uninstall left files behind: $left" >&2
  exit 1
fi
if find "$tmp/strip" -type d -name 'gvloop*' | grep -q .; then
  echo "FAIL uninstall left gvloop's own folders behind" >&2
  exit 1
fi
echo "ok   uninstall removed every file it installed and gvloop's own folders, and no other"
# A relative DESTDIR is taken against the directory the install ran in, as
# the install takes it, and a prefix named after gvloop is the user's: its
# own folders that were there before stay (empty or not).  The prefix has
# characters CMake lists and regular expressions treat specially.
p="/opt/gvloop [x+"
mkdir -p "$tmp/cwd/rel$p/include" "$tmp/cwd/rel$p/bin"
echo theirs >"$tmp/cwd/rel$p/bin/theirs"
(cd "$tmp/cwd" && DESTDIR=rel cmake --install "$build" --prefix "$p" >/dev/null)
[ -f "$tmp/cwd/rel$p/include/gvl.h" ] || { echo "FAIL no install under the relative DESTDIR" >&2; exit 1; }
(cd "$tmp/cwd" && DESTDIR=rel cmake --build "$build" --target uninstall >"$tmp/un.log" 2>&1)
left=$(find "$tmp/cwd/rel" ! -type d ! -name theirs | head -5)
if [ -n "$left" ]; then
  echo "FAIL uninstall of a relative DESTDIR install left files behind: $left" >&2
  exit 1
fi
for d in include bin; do
  if [ ! -d "$tmp/cwd/rel$p/$d" ]; then
    echo "FAIL uninstall removed the folder $p/$d, which was there before" >&2
    exit 1
  fi
done
if grep -q "were not found" "$tmp/un.log"; then cat "$tmp/un.log"; echo "FAIL a warning for files that were there" >&2; exit 1; fi
env -u DESTDIR cmake --build "$build" --target uninstall >"$tmp/un.log" 2>&1
grep -q "were not found" "$tmp/un.log" || { cat "$tmp/un.log"; echo "FAIL no word on files not found" >&2; exit 1; }
echo "ok   uninstall of a relative DESTDIR install at the prefix $p removed its files and kept the folders that were there"
echo "prefix ok"
