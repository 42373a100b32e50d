#!/usr/bin/env bash
# Install the build tree into a scratch prefix, then build a consumer with
# find_package(gvloop) and another with pkg-config, and run both.
set -euo pipefail
build=$1 src=$2 cc=${3:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/cm" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib64:$tmp/prefix/lib/$(gcc -dumpmachine 2>/dev/null || true)" "$tmp/cm/consumer"
pcdir=$(dirname "$(find "$tmp/prefix" -name gvl.pc | head -1)")
sed -i "s|^prefix=.*|prefix=$tmp/prefix|" "$pcdir/gvl.pc"
PKG_CONFIG_PATH=$pcdir "$cc" "$src/consumer/main.c" -o "$tmp/pc" \
  $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs gvl) -pthread
LD_LIBRARY_PATH="$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir gvl)" "$tmp/pc"
