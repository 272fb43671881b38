#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Expert parallel under mpirun (src/dist, issue 44) against one process, bit for bit: the logits
# of the shared MoE fixtures (qwen3moe, qwen35moe, gemma4 MoE), resident and streamed at the
# smallest budget, for a prompt evaluated as one pass with every position's logits (the shape of a
# speculative verification pass), the same prompt in chunks of 5 (prompt chunks), and decode steps
# (the reference gen ids, one token at a time); bench's per-rank figures. Then the start-up
# checks: a rank with a different model file and a rank that cannot load its file are refused
# with an error naming the rank.
# Usage: expert_parallel_test.sh SNIPER_BINARY SHARED_DIR
set -uo pipefail
bin=$1
shared=$2
tmp=$(mktemp -d /var/tmp/sniper-ep-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 3)
# One thread per rank: three ranks share the CI machine's cores.
common=(-t 1 --rank-timeout 60)

for model in syn-qwen3moe-Q4_K_M syn-qwen35moe-small syn-gemma4moe-small; do
  m="$shared/models/$model.gguf"
  ref="$shared/reference/$model"
  # The smallest budget the planner accepts for a streamed run (its error names the minimum).
  min=$("$bin" logits -m "$m" --prompt-ids "$ref/prompt_ids.json" -o "$tmp/x.f32" --residency stream --mem 16M 2>&1 |
    sed -n 's/.*below the minimum \([0-9.]*\) MiB.*/\1/p')
  if [ -z "$min" ]; then
    fail "$model: no minimum budget in the planner's error"
    continue
  fi
  smallest=$(awk -v m="$min" 'BEGIN { printf "%d", m + 1 }')M
  for mode in resident stream; do
    case $mode in
      resident) res=(--residency resident) ;;
      stream) res=(--residency stream --mem "$smallest") ;;
    esac
    # batch 5: the 24-token prompt in chunks of 5 with every row's logits; batch 64 (one pass of
    # all 24, a verification pass's shape) on the first fixture only, to keep CI near a minute.
    batches=(5)
    [ "$model" = syn-qwen3moe-Q4_K_M ] && batches=(64 5)
    for batch in "${batches[@]}"; do
      args=(logits -m "$m" --prompt-ids "$ref/prompt_ids.json" --gen-ids "$ref/gen_ids.json" --batch "$batch"
        "${res[@]}" "${common[@]}")
      if ! "$bin" "${args[@]}" -o "$tmp/solo.f32" >"$tmp/solo.log" 2>&1; then
        fail "$model $mode batch $batch: one process failed: $(tail -3 "$tmp/solo.log")"
        continue
      fi
      if ! "${mpi[@]}" "$bin" "${args[@]}" --distribute experts -o "$tmp/ep.f32" >"$tmp/ep.log" 2>&1; then
        fail "$model $mode batch $batch: mpirun -np 3 failed: $(tail -5 "$tmp/ep.log")"
        continue
      fi
      if cmp -s "$tmp/solo.f32" "$tmp/ep.f32" && [ -s "$tmp/ep.f32" ]; then
        pass
      else
        fail "$model $mode batch $batch: expert-parallel logits differ from one process"
      fi
      # The other ranks did run experts (the equality above is not one process's run twice).
      for r in 1 2; do
        if grep -Eq "^rank $r \(host .*\): served [1-9][0-9]* expert requests" "$tmp/ep.log"; then
          pass
        else
          fail "$model $mode batch $batch: rank $r served no expert request: $(grep "^rank $r" "$tmp/ep.log")"
        fi
      done
      if [ "$mode" = stream ] && ! grep -q "^rank 1 .*streamed through its own cache" "$tmp/ep.log"; then
        fail "$model $mode batch $batch: rank 1 did not stream its experts"
      fi
    done
  done
done

# bench under mpirun: the per-rank figures of its decode (rank 0's exchange, each rank's share).
"${mpi[@]}" "$bin" bench -m "$shared/models/syn-qwen3moe-Q4_K_M.gguf" --no-probe -p 8 -n 8 "${common[@]}" \
  >"$tmp/bench.log" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "^rank 0 (.*front end: .* ms/token waiting for answers" "$tmp/bench.log" &&
  grep -Eq "^rank 1 \(.*\) +[1-9][0-9]*% of the routed rows, cache hit rate" "$tmp/bench.log" &&
  grep -Eq "^rank 2 \(.*\) +[1-9][0-9]*% of the routed rows" "$tmp/bench.log"; then
  pass
else
  fail "bench under mpirun: status $status, $(grep -E '^(rank|decode|error)' "$tmp/bench.log")"
fi

# A rank with a different file is refused at start-up, on rank 0, naming the rank and its host.
a="$shared/models/syn-qwen3moe-Q4_K_M.gguf"
b="$shared/models/syn-qwen3moe-Q6_K.gguf"
ids="$shared/reference/syn-qwen3moe-Q4_K_M/prompt_ids.json"
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$bin" logits -m "$a" --prompt-ids "$ids" -o "$tmp/x.f32" -t 1 \
  : -np 1 "$bin" logits -m "$b" --prompt-ids "$ids" -o "$tmp/x.f32" -t 1 >"$tmp/diff.log" 2>&1
status=$?
if [ $status -ne 0 ] && grep -q "rank 2 (host .*) has a different model file" "$tmp/diff.log"; then
  pass
else
  fail "different file on rank 2: status $status, $(tail -3 "$tmp/diff.log")"
fi
# A rank that cannot open its file: the others stop too, and rank 0 names it.
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$bin" logits -m "$a" --prompt-ids "$ids" -o "$tmp/x.f32" -t 1 \
  : -np 1 "$bin" logits -m "$tmp/missing.gguf" --prompt-ids "$ids" -o "$tmp/x.f32" -t 1 >"$tmp/miss.log" 2>&1
status=$?
if [ $status -ne 0 ] && grep -q "rank 2 (host .*) could not load the model" "$tmp/miss.log"; then
  pass
else
  fail "missing file on rank 2: status $status, $(tail -3 "$tmp/miss.log")"
fi
# A dense model has no experts to divide: a clear error, not a silent single-process run.
"${mpi[@]}" "$bin" logits -m "$shared/models/syn-qwen3.gguf" --prompt-ids "$ids" -o "$tmp/x.f32" -t 1 >"$tmp/dense.log" 2>&1
status=$?
if [ $status -ne 0 ] && grep -q "has none" "$tmp/dense.log"; then pass; else fail "dense model: $(tail -3 "$tmp/dense.log")"; fi

echo "expert_parallel_test: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
