#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` puts a working sniper in PREFIX/bin and the user documentation in
# PREFIX/share/doc/sniper; the installed binary runs from there (no path into the build tree).
# usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d /tmp/sniper-install-test.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > "$prefix.log" 2>&1 || { cat "$prefix.log"; rm -f "$prefix.log"; exit 1; }
rm -f "$prefix.log"
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$prefix/bin/sniper" ] || fail "no $prefix/bin/sniper"
"$prefix/bin/sniper" --version | grep -q "^sniper [0-9]" || fail "the installed sniper does not run"
for f in README.md CONTRIBUTING.md docs/chat.md docs/benchmarks.md examples/agent.example.json; do
  [ -f "$prefix/share/doc/sniper/$f" ] || fail "no share/doc/sniper/$f"
done
echo PASS
