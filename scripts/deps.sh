#!/usr/bin/env bash
# Install the Debian 12 packages gvloop needs to build, test and run its demo.
set -euo pipefail
PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libuv1-dev tcl8.6-dev tk8.6-dev tcl8.6 tk8.6
      xvfb x11-utils x11-apps imagemagick
      spin valgrind python3 jq gnuplot-nox tcl-thread)
PKGS+=(ocaml ocaml-source ocaml-findlib liblabltk-ocaml-dev)  # hosts/ocaml (skipped without)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
