#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A/B of chat-template rendering: builds bench/template/template_render_bench.cpp against this
# tree's Jinja engine and against REF's (default: main), both with g++ -O2, and runs them
# alternately ROUNDS times (default 3), printing each run. With --callgrind, prints instead the
# instructions of one render pass of each (deterministic; slow).
# usage: bench/template/ab_render.sh [--callgrind] [REF] [ROUNDS] [TURNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
callgrind=0
if [ "${1:-}" = "--callgrind" ]; then callgrind=1; shift; fi
ref=${1:-main}
rounds=${2:-3}
turns=${3:-250}
shared=$(cd ../shared && pwd)
work=$(mktemp -d /tmp/sniper-template-ab-XXXXXX)
trap 'rm -rf "$work"' EXIT
build() {  # build DIR OUT: the bench against the tokenizer sources under DIR/src
  local src=$1 out=$2
  g++ -std=c++20 -O2 -DNDEBUG -I"$src/src" bench/template/template_render_bench.cpp \
    "$src"/src/tokenizer/chat_template.cpp "$src"/src/tokenizer/jinja_*.cpp "$src"/src/base/base.cpp -o "$out"
}
mkdir -p "$work/ref"
git archive "$ref" src/tokenizer src/base | tar -x -C "$work/ref"
build "$work/ref" "$work/bench_ref"
build . "$work/bench_new"
if [ "$callgrind" = 1 ]; then
  for v in ref new; do
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.$v" "$work/bench_$v" "$shared" "$turns" 1 >/dev/null 2>&1
    echo "$v ($([ $v = ref ] && echo "$ref" || echo "this tree")): $(callgrind_annotate "$work/cg.$v" 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{print $1}') instructions"
  done
  exit 0
fi
for i in $(seq "$rounds"); do
  echo "== round $i: $ref"; "$work/bench_ref" "$shared" "$turns" 5
  echo "== round $i: this tree"; "$work/bench_new" "$shared" "$turns" 5
done
