#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Decode side by side with llama.cpp's llama-bench on the i-quant daily drivers (issue 46): for
# each model, in RAM, the same number of threads, rounds alternating the variants so that drift
# on a shared machine hits them all alike:
#   sniper          `sniper bench` with the i-quant weights repacked (the default)
#   sniper-file     --no-repack (the kernels of the file's layouts)
#   sniper-avx2     SNIPER_ISA=avx2, repacked       sniper-avx2-file   SNIPER_ISA=avx2 --no-repack
#   llama-bench     -p PROMPT -n GEN -r 1 (mmap, warm)
# then, with --cap, one model streamed under a memory cap (scripts/run-capped.sh) against the
# physical limit `sniper bench` prints. Prints a markdown report (medians over the rounds) with
# the machine, the load average and every command; raw JSON lines and logs stay in --out.
#
# Usage: bench/e2e/iquant_decode.sh [--sniper BIN] [--llama-bench BIN] [--threads 2] [--prompt 64]
#            [--gen 32] [--rounds 2] [--variants sniper,sniper-file,...] [--cap 8G --cap-model FILE]
#            [--out DIR] MODEL.gguf...
# Make the models with e.g. `sniper synth --preset qwen3-30b-a3b --type iq2_m -o ...` (add
# --layers 4 for a quick check of the script itself).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
sniper=$repo/build/release/bin/sniper
[ -x "$sniper" ] || sniper=$repo/build/ci/bin/sniper
llama_bench=/work/llama.cpp/llama.cpp-d32676d77/build/bin/llama-bench
threads=2 prompt=64 gen=32 rounds=2 cap="" cap_model="" out=""
variants="sniper,sniper-file,sniper-avx2,sniper-avx2-file,llama-bench"
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sniper) sniper=$2; shift 2;;
    --llama-bench) llama_bench=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --prompt) prompt=$2; shift 2;;
    --gen) gen=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --variants) variants=$2; shift 2;;
    --cap) cap=$2; shift 2;;
    --cap-model) cap_model=$2; shift 2;;
    --out) out=$2; shift 2;;
    -h|--help) sed -n '3,20p' "$0"; exit 0;;
    -*) echo "iquant_decode: unknown option $1" >&2; exit 2;;
    *) models+=("$1"); shift;;
  esac
done
[ ${#models[@]} -gt 0 ] || [ -n "$cap_model" ] || { echo "iquant_decode: no model given (see --help)" >&2; exit 2; }
[ -x "$sniper" ] || { echo "iquant_decode: no sniper binary at $sniper (--sniper)" >&2; exit 2; }
if [[ ",$variants," == *",llama-bench,"* ]] && [ ! -x "$llama_bench" ]; then
  echo "iquant_decode: no llama-bench at $llama_bench (--llama-bench, or drop it from --variants)" >&2; exit 2
fi
if [ -n "$cap" ] && [ -z "$cap_model" ]; then echo "iquant_decode: --cap needs --cap-model" >&2; exit 2; fi
out=${out:-/tmp/iquant_decode.$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
results=$out/results.jsonl
: > "$results"
export LD_LIBRARY_PATH=$(dirname "$llama_bench")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
commands=()

# run_variant MODEL VARIANT ROUND: one measurement, appended to results.jsonl as
# {"model","variant","round","decode_tok_s","prefill_tok_s",...} (sniper's JSON fields kept).
run_variant() {
  local model=$1 variant=$2 round=$3 log json
  log=$out/$(basename "$model" .gguf).$variant.$round.log
  case "$variant" in
    sniper|sniper-file|sniper-avx2|sniper-avx2-file)
      local env=() flags=()
      [[ $variant == *avx2* ]] && env=(SNIPER_ISA=avx2)
      [[ $variant == *-file ]] && flags=(--no-repack)
      local cmd=(env "${env[@]}" "$sniper" bench -m "$model" -t "$threads" -p "$prompt" -n "$gen" \
                 --residency resident "${flags[@]}" --json)
      [ "$round" = 1 ] && commands+=("${cmd[*]}")
      if ! "${cmd[@]}" > "$log" 2>&1; then echo "  $variant failed (see $log)" >&2; return 0; fi
      json=$(tail -n 1 "$log")
      jq -c --arg m "$model" --arg v "$variant" --argjson r "$round" '. + {model: $m, variant: $v, round: $r}' \
        <<< "$json" >> "$results"
      ;;
    llama-bench)
      local cmd=("$llama_bench" -m "$model" -t "$threads" -p "$prompt" -n "$gen" -r 1 -o json)
      [ "$round" = 1 ] && commands+=("${cmd[*]}")
      if ! "${cmd[@]}" > "$log" 2> "$log.err"; then echo "  llama-bench failed (see $log.err)" >&2; return 0; fi
      jq -c --arg m "$model" --argjson r "$round" '
        {model: $m, variant: "llama-bench", round: $r,
         decode_tok_s: ([.[] | select(.n_gen > 0) | .avg_ts][0] // -1),
         prefill_tok_s: ([.[] | select(.n_prompt > 0) | .avg_ts][0] // -1)}' "$log" >> "$results"
      ;;
    *) echo "iquant_decode: unknown variant $variant" >&2; exit 2;;
  esac
  echo "  $variant: $(tail -n 1 "$results" | jq -r '.decode_tok_s') tok/s" >&2
}

IFS=, read -r -a variant_list <<< "$variants"
for model in "${models[@]}"; do
  echo "$(basename "$model"):" >&2
  for ((round = 1; round <= rounds; ++round)); do
    # Alternate the order between rounds: no variant always runs right after a load.
    if (( round % 2 == 1 )); then order=("${variant_list[@]}"); else order=(); for ((i=${#variant_list[@]}-1; i>=0; --i)); do order+=("${variant_list[$i]}"); done; fi
    for v in "${order[@]}"; do run_variant "$model" "$v" "$round"; done
  done
done

cap_line=""
if [ -n "$cap" ]; then
  echo "capped $cap: $(basename "$cap_model")" >&2
  log=$out/capped.log
  cmd=("$repo/scripts/run-capped.sh" "$cap" "$sniper" bench -m "$cap_model" -t "$threads" -p "$prompt" -n "$gen" --mem auto --json)
  commands+=("${cmd[*]}")
  if "${cmd[@]}" > "$log" 2>&1; then
    json=$(grep '^{' "$log" | tail -n 1)
    cap_line=$(jq -r --arg cap "$cap" --arg m "$(basename "$cap_model")" '
      "| \($m) | \($cap) | \(.decode_tok_s * 100 | round / 100) | \(if .limit_decode_tok_s > 0 then (.limit_decode_tok_s * 100 | round / 100) else "-" end) | \(if .limit_decode_tok_s > 0 then (.decode_tok_s / .limit_decode_tok_s * 100 | round) else "-" end)% | \(.hit_rate * 1000 | round / 10)% | \(.bytes_read_per_token / 1e6 | round) MB |"' <<< "$json")
  else
    cap_line="| $(basename "$cap_model") | $cap | failed (see $log) | | | | |"
  fi
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# The report.
{
  echo "## i-quant decode, side by side ($(date -u +%Y-%m-%d))"
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB RAM;" \
       "load average $load_start at the start, $load_end at the end. sniper $(git -C "$repo" rev-parse --short HEAD)," \
       "$threads threads, prompt $prompt, $gen decode tokens, medians of $rounds rounds (variants alternating)."
  echo
  echo "| file | GB | weights/token (file) | sniper | sniper --no-repack | avx2 | avx2 --no-repack | llama-bench | sniper / llama | paired roofline | share (sniper) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  python3 - "$results" "${models[@]}" <<'EOF'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(model, variant, key):
    v = [r[key] for r in rows if r["model"] == model and r["variant"] == variant and r.get(key, -1) is not None and r.get(key, -1) > 0]
    return statistics.median(v) if v else None
def fmt(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"
for m in sys.argv[2:]:
    gb = os.path.getsize(m) / 1e9
    s = {v: med(m, v, "decode_tok_s") for v in ["sniper", "sniper-file", "sniper-avx2", "sniper-avx2-file", "llama-bench"]}
    wb = med(m, "sniper-file", "file_weight_bytes_per_token") or med(m, "sniper", "file_weight_bytes_per_token")
    best = max([x for k, x in s.items() if k != "llama-bench" and x] or [0]) or None
    ratio = best / s["llama-bench"] if best and s["llama-bench"] else None
    roof = med(m, "sniper", "paired_roofline_gbps")
    share = med(m, "sniper", "paired_roofline_share")
    print(f"| {os.path.basename(m)} | {gb:.2f} | {fmt(wb / 1e9 if wb else None)} GB | {fmt(s['sniper'])} | {fmt(s['sniper-file'])} | "
          f"{fmt(s['sniper-avx2'])} | {fmt(s['sniper-avx2-file'])} | {fmt(s['llama-bench'])} | {fmt(ratio)}x | "
          f"{fmt(roof, 1)} GB/s | {fmt(share * 100 if share else None, 0)}% |")
print()
print("Decode in tok/s. Weights/token counts the file's layouts; \"share\" is sniper's paired roofline share (the bytes as")
print("held in memory, repacked layouts included, per token time, over the RAM probe right before each token).")
print()
print("Matvec GB/s per weight type (first round of `sniper`, one token on the model's own matrices):")
print()
for m in sys.argv[2:]:
    r = [x for x in rows if x["model"] == m and x["variant"] in ("sniper", "sniper-file") and x["round"] == 1]
    for x in r:
        items = ", ".join(f"{t['type']}{'' if t['file_type'] == t['type'] else ' (' + t['file_type'] + ')'} {t['gbps']:.1f}"
                          for t in x.get("type_matvec", []))
        print(f"- {os.path.basename(m)}, {x['variant']}: {items} (RAM probe {x.get('roofline_gbps', 0):.1f} GB/s)")
EOF
  if [ -n "$cap_line" ]; then
    echo
    echo "Streamed under a memory cap (experts through the expert cache):"
    echo
    echo "| file | cap | decode tok/s | physical limit | share | expert hits | SSD read/token |"
    echo "|---|---|---|---|---|---|---|"
    echo "$cap_line"
  fi
  echo
  echo "Commands (round 1; later rounds repeat them):"
  echo
  for c in "${commands[@]}"; do echo "    $c"; done
  echo
  echo "Raw results: $results"
} | tee "$out/report.md"
