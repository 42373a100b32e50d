#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_deb.sh SRC_DIR BUILD_DIR: build gvloop's .deb packages in BUILD_DIR
# (configured with -DCMAKE_INSTALL_PREFIX=/usr), install them with dpkg -i,
# use them with an empty environment (use_install.sh --system: no
# PKG_CONFIG_PATH, CMAKE_PREFIX_PATH, TCLLIBPATH or LD_LIBRARY_PATH; and
# use_ocaml.sh --system, no OCAMLPATH, when the build has the OCaml host),
# check the man pages, and remove them again.  Needs root (or sudo) and the
# build dependencies (scripts/deps.sh test).  CI runs it; it leaves nothing
# installed.
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
read -r -a pkgs <"$build/deb/packages"   # named after the SONAMEs (cmake/gvloopCPack.cmake)
ocaml=()
if [ -f "$build/hosts/ocaml/findlib/gvloop/META" ]; then
  pkgs+=(libgvloop-ocaml-dev)
  ocaml=(--system)
  [ -f "$build/hosts/ocaml/labltk/lib/gvltk.cma" ] && ocaml+=(labltk)
fi
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "check_deb.sh: $p is installed already; remove it first" >&2
    exit 1
  fi
done
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB >/dev/null)
debs=("$build"/*.deb)
[ ${#debs[@]} = ${#pkgs[@]} ] || { echo "check_deb.sh: expected ${#pkgs[@]} packages: ${debs[*]}" >&2; exit 1; }
xt=$(mktemp -d)
for d in "${debs[@]}"; do
  p=$(dpkg-deb -f "$d" Package)
  printf '%s: %s\n' "$p" "$(dpkg-deb -f "$d" Depends)"
  case $p in lib*[0-9])   # a runtime library: dpkg's ldconfig trigger
    dpkg-deb --ctrl-tarfile "$d" | tar -xO ./triggers 2>/dev/null | grep -qx 'activate-noawait ldconfig' ||
      { echo "check_deb.sh: $p has no ldconfig trigger" >&2; exit 1; } ;;
  esac
  # Binaries ship stripped (shared objects with debug info name the build tree).
  # A dependency on one of gvloop's own packages names one built here.
  for dep in $(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//' |
               grep -E '^(libgvl|libevloop|libtkbridge)[0-9]'); do
    case " ${pkgs[*]} " in *" $dep "*) ;;
      *) echo "check_deb.sh: $p depends on $dep, which this build does not make" >&2; exit 1 ;;
    esac
  done
  dpkg-deb -x "$d" "$xt/$p"
  # A link within one top-level directory is relative (Debian Policy 10.5).
  while IFS= read -r -d '' l; do
    t=$(readlink "$l") rel=${l#"$xt/$p"}
    case $t in /*)
      if [ "$(echo "$t" | cut -d/ -f2)" = "$(echo "$rel" | cut -d/ -f2)" ]; then
        echo "check_deb.sh: $p ships $rel -> $t, an absolute link within one top-level directory" >&2
        exit 1
      fi ;;
    esac
  done < <(find "$xt/$p" -type l -print0)
  while IFS= read -r -d '' f; do
    if file "$f" | grep -q 'not stripped'; then
      echo "check_deb.sh: $p ships ${f#"$xt/$p"} unstripped" >&2; exit 1
    fi
  done < <(find "$xt/$p" -type f -name '*.so*' -print0)
done
rm -rf "$xt"
cleanup() { $SUDO dpkg -P "${pkgs[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT
$SUDO dpkg -i "${debs[@]}" >/dev/null
# Every link the packages ship leads to a file once they are installed.
for p in "${pkgs[@]}"; do
  while IFS= read -r f; do
    if [ -L "$f" ] && [ ! -e "$f" ]; then
      echo "check_deb.sh: $p's $f -> $(readlink "$f") leads nowhere" >&2; exit 1
    fi
  done < <(dpkg -L "$p")
done
echo "ok   the packages' links are relative within a top-level directory and lead to files"
tmp=$(mktemp -d)
cp -r "$src/tests" "$src/README.md" "$tmp/"   # readable without the caller's environment
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp" ${DISPLAY:+DISPLAY=$DISPLAY} \
  "$tmp/tests/install/use_install.sh" "$tmp" cc --system
if [ ${#ocaml[@]} -gt 0 ]; then
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp" ${DISPLAY:+DISPLAY=$DISPLAY} \
    "$tmp/tests/install/use_ocaml.sh" "$tmp" "${ocaml[@]}"
fi
for page in gvl evloop tkbridge gvl_acquire evl_strerror tkb_eval; do
  env -i PATH=/usr/bin:/bin man -w 3 "$page" >/dev/null || { echo "man 3 $page: not installed" >&2; exit 1; }
  # Compressed, and a call's page (.so man3/<header>.3) still finds its target.
  env -i PATH=/usr/bin:/bin MANWIDTH=80 man 3 "$page" 2>&1 | grep -q "FUNCTIONS" ||
    { echo "man 3 $page: does not render" >&2; exit 1; }
done
echo "ok   man 3 gvl, evloop, tkbridge and a page per call"
# The Tcl package's page where Debian's Tcl keeps its own: man3/<name>.3tcl.
env -i PATH=/usr/bin:/bin MANWIDTH=80 man 3tcl gvloop 2>&1 | grep -q "gvloop::stats" ||
  { echo "man 3tcl gvloop: not installed or does not render" >&2; exit 1; }
echo "ok   man 3tcl gvloop"
for p in "${pkgs[@]}"; do
  [ -f "/usr/share/doc/$p/copyright" ] || { echo "no /usr/share/doc/$p/copyright" >&2; exit 1; }
done
echo "ok   the licence in /usr/share/doc/<package>/copyright of each package"
trap - EXIT
$SUDO dpkg -P "${pkgs[@]}" >/dev/null
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "check_deb.sh: $p still installed after dpkg -r" >&2; exit 1
  fi
done
rm -rf "$tmp"
echo "deb ok"
