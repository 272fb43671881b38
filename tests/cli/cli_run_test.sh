#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The short CLI run every build affords, cross builds included (there the binary runs under the
# emulator, e.g. qemu-aarch64 -cpu max): `sniper version` names the kernel tier in use, and a
# greedy `sniper run` of stories260K prints llama.cpp's reference story (reference/stories260K,
# 32 tokens) exactly.
# Usage: cli_run_test.sh SHARED_DIR [EMULATOR ARGS...] SNIPER_BINARY
set -uo pipefail
shared=$1
shift
tmp=$(mktemp -d /var/tmp/sniper-cli-run.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if "$@" version >"$tmp/version" 2>&1; then
  grep -q "^kernel tiers on this CPU: .*(in use)" "$tmp/version" || fail "version: no tier in use: $(cat "$tmp/version")"
else
  fail "version exited $?: $(cat "$tmp/version")"
fi
cat "$tmp/version"

"$@" run -m "$shared/models/stories260K.gguf" -p "Once upon a time" -n 32 --temp 0 --ignore-eos >"$tmp/story" 2>"$tmp/err" ||
  fail "run exited $?: $(cat "$tmp/err")"
expected=$(sed 's/^ //' "$shared/reference/stories260K/gen_text.txt")
[ "$(cat "$tmp/story")" = "$expected" ] || fail "stories260K text differs: got '$(cat "$tmp/story")', want '$expected'"

if [ $fails -ne 0 ]; then exit 1; fi
echo "cli_run_test: ok"
