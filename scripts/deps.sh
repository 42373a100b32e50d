#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages gvloop needs.
#   scripts/deps.sh [build|demo|test]     (default: test)
#     build  compiler, CMake, libuv, Tcl/Tk headers: enough to build everything
#     demo   build + Xvfb and ImageMagick, for the headless demo run
#     test   demo + what the tests use: clang and libFuzzer, valgrind, spin,
#            python3, jq, gnuplot, tcl-thread, tclx8.4 (fork), dpkg-dev and
#            file (the .deb), man-db (the installed man pages), OCaml and
#            labltk (hosts/ocaml)
# Only packages that are missing are installed; nothing runs when all are.
set -euo pipefail
what=${1:-test}
BUILD=(build-essential cmake pkg-config libuv1-dev tcl8.6-dev tk8.6-dev
       tcl8.6 tk8.6 libx11-dev)
DEMO=(xvfb imagemagick)
TEST=(clang libclang-rt-14-dev x11-utils x11-apps spin valgrind python3 python3-matplotlib jq
      gnuplot-nox tcl-thread tclx8.4 dpkg-dev file man-db
      ocaml ocaml-source ocaml-findlib liblabltk-ocaml-dev)
case $what in
  build) PKGS=("${BUILD[@]}") ;;
  demo)  PKGS=("${BUILD[@]}" "${DEMO[@]}") ;;
  test)  PKGS=("${BUILD[@]}" "${DEMO[@]}" "${TEST[@]}") ;;
  -h|--help) sed -n '3,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "deps.sh: unknown set '$what' (build, demo or test)" >&2; exit 2 ;;
esac
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps.sh: installing ${#missing[@]} package(s): ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
