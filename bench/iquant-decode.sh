#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# i-quant decode side by side with llama.cpp (issue 46; docs/iquant-decode.md): for each model, in
# RAM, these variants alternated --reps times (the order reversed every other run, so that drift on
# a shared machine hits them alike):
#   sniper            `sniper bench --residency resident`, i-quant weights repacked (the default)
#   sniper-file       the same with --no-repack (the kernels of the file's layouts)
#   sniper-avx2       SNIPER_ISA=avx2, repacked      sniper-avx2-file   SNIPER_ISA=avx2 --no-repack
#   llama             llama-bench -p P -n N -r 1
# Prints a markdown table: decode tok/s of each, the weight bytes a token reads in the file's
# layouts, the RAM probe and the memory-bandwidth limit they give (probe / bytes), Sniper's share
# of its paired roofline, and each weight type's one-token matvec GB/s. With --cap, one model is
# then decoded streamed under a memory cap (scripts/run-capped.sh, root) against the physical limit
# `sniper bench` prints (llama.cpp under a cap: bench/capped.sh).
# usage: bench/iquant-decode.sh [common options, see bench/lib.sh] [-p P] [-n N]
#            [--variants sniper,sniper-file,sniper-avx2,sniper-avx2-file,llama]
#            [--cap 8G --cap-model MODEL] MODEL...
#   MODEL: a GGUF path or preset:NAME[:layers=N][:type=T], e.g. preset:qwen3-30b-a3b:type=iq2_m
#   (10.2 GB). A quick check of the script itself:
#   bench/iquant-decode.sh --reps 1 -n 16 preset:qwen3-30b-a3b:layers=4:type=iq2_m
source "$(dirname "$0")/lib.sh"
bench_parse_common "$@"
P=64
N=32
VARIANTS=sniper,sniper-file,sniper-avx2,sniper-avx2-file,llama
CAP=""
CAP_MODEL=""
models=()
set -- "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"
while [ $# -gt 0 ]; do
  case "$1" in
    -p) P=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    --variants) VARIANTS=$2; shift 2 ;;
    --cap) CAP=$2; shift 2 ;;
    --cap-model) CAP_MODEL=$2; shift 2 ;;
    -*) bench_die "unknown option '$1' (see the head of $0)" ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || [ -n "$CAP_MODEL" ] || bench_die "no model given (see the head of $0)"
[ -z "$CAP" ] || [ -n "$CAP_MODEL" ] || bench_die "--cap needs --cap-model MODEL"
[ -z "$CAP_MODEL" ] || [ -n "$CAP" ] || bench_die "--cap-model needs --cap SIZE"
IFS=, read -r -a variant_list <<< "$VARIANTS"
use_llama=0
for v in "${variant_list[@]}"; do
  case "$v" in
    sniper | sniper-file | sniper-avx2 | sniper-avx2-file) ;;
    llama) use_llama=1 ;;
    *) bench_die "--variants names '$v'; allowed: sniper, sniper-file, sniper-avx2, sniper-avx2-file, llama" ;;
  esac
done
bench_need node "it reads the JSON both engines print"
bench_find_sniper
[ "$use_llama" = 0 ] || bench_find_llama
if [ -n "$CAP" ]; then
  [ "$(id -u)" -eq 0 ] || bench_die "--cap needs root (scripts/run-capped.sh makes a cgroup)"
  "$BENCH_ROOT/scripts/run-capped.sh" 64M true > /dev/null 2>&1 ||
    bench_die "cgroups are not usable here (scripts/run-capped.sh 64M true failed)"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run_variant MODEL VARIANT: one measurement; leaves sniper's JSON (or llama-bench's) in $work/VARIANT.json.
run_variant() {
  local model=$1 v=$2 env=() flags=()
  if [ "$v" = llama ]; then
    "$LLAMA_BIN/llama-bench" -m "$model" -p "$P" -n "$N" -t "$THREADS" -r 1 -o json \
      > "$work/$v.json" 2> "$work/$v.err" || bench_die "llama-bench failed: $(tail -2 "$work/$v.err")"
    return
  fi
  case "$v" in *avx2*) env=(SNIPER_ISA=avx2) ;; esac
  case "$v" in *-file) flags=(--no-repack) ;; esac
  env "${env[@]+"${env[@]}"}" "$SNIPER" bench "$model" --residency resident "${flags[@]+"${flags[@]}"}" \
    -p "$P" -n "$N" -t "$THREADS" --json > "$work/$v.json" 2> "$work/$v.err" ||
    bench_die "sniper bench ($v) failed: $(tail -2 "$work/$v.err")"
}

# percent A B: A/B of the medians as "45%"; "n/a" when either is missing.
percent() {
  node -e 'const a = parseFloat(process.argv[1]), b = parseFloat(process.argv[2]);
    console.log(a > 0 && b > 0 ? (100 * a / b).toFixed(0) + "%" : "n/a");' "$1" "$2"
}

# The per-type matvec line of one sniper JSON: "iq2_rp (iq2_s) 9.1, q4_K 12.0 GB/s".
type_line() {
  json_get "$1" 'j.type_matvec.map((t) => t.type + (t.file_type === t.type ? "" : " (" + t.file_type + ")")
    + " " + t.gbps.toFixed(1)).join(", ") + " GB/s (RAM probe " + j.roofline_gbps.toFixed(1) + " GB/s)"'
}

rows=() notes=()
for spec in "${models[@]}"; do
  model=$(bench_model "$spec")
  name=$(basename "$model" .gguf)
  declare -A TG=()
  probe=() bytes="" share=() types=()
  for r in $(seq "$REPS"); do
    order=("${variant_list[@]}")
    if [ $((r % 2)) = 0 ]; then
      order=()
      for ((i = ${#variant_list[@]} - 1; i >= 0; --i)); do order+=("${variant_list[$i]}"); done
    fi
    for v in "${order[@]}"; do
      echo "[$name] run $r/$REPS: $v" >&2
      run_variant "$model" "$v"
      if [ "$v" = llama ]; then
        TG[$v]+=" $(json_get "$work/$v.json" "j.find((e) => e.n_gen === $N && e.n_prompt === 0).avg_ts")"
        continue
      fi
      TG[$v]+=" $(json_get "$work/$v.json" j.decode_tok_s)"
      probe+=("$(json_get "$work/$v.json" j.roofline_gbps)")
      bytes=$(json_get "$work/$v.json" j.file_weight_bytes_per_token)
      [ "$v" != sniper ] || share+=("$(json_get "$work/$v.json" '100 * j.paired_roofline_share')")
      [ "$r" != 1 ] || [[ "$v" == *avx2* ]] || types+=("$v: $(type_line "$work/$v.json")")
    done
  done
  gb=$(node -e "console.log((require('fs').statSync(process.argv[1]).size / 1e9).toFixed(2))" "$model")
  pr=$(summary "${probe[@]+"${probe[@]}"}")
  limit=n/a
  if [ -n "$bytes" ]; then
    limit=$(node -e 'console.log((parseFloat(process.argv[1]) * 1e9 / Number(process.argv[2])).toFixed(2))' "$pr" "$bytes")
    bytes=$(node -e 'console.log((Number(process.argv[1]) / 1e9).toFixed(2))' "$bytes")
  fi
  cell() { [ -n "${TG[$1]:-}" ] && summary ${TG[$1]} || echo -; }
  s=$(cell sniper) l=$(cell llama)
  sh=$(summary "${share[@]+"${share[@]}"}")
  rows+=("| $name | $gb | ${bytes:-n/a} | $pr | $limit | $s | $(cell sniper-file) | $(cell sniper-avx2) | $(cell sniper-avx2-file) | $l | $(ratio "$s" "$l") | $(percent "$s" "$limit") | $(percent "$sh" 100) |")
  for t in "${types[@]+"${types[@]}"}"; do notes+=("- $name, $t"); done
  unset TG
done

cap_row=""
if [ -n "$CAP" ]; then
  model=$(bench_model "$CAP_MODEL")
  echo "[$(basename "$model" .gguf) under $CAP] sniper bench --mem auto" >&2
  "$BENCH_ROOT/scripts/run-capped.sh" "$CAP" "$SNIPER" bench "$model" --mem auto -p "$P" -n "$N" -t "$THREADS" \
    --json > "$work/cap.json" 2> "$work/cap.err" || bench_die "sniper bench under $CAP failed: $(tail -2 "$work/cap.err")"
  cap_row="| $(basename "$model" .gguf) | $CAP | $(json_get "$work/cap.json" 'j.decode_tok_s.toFixed(2)') | $(json_get "$work/cap.json" \
    'j.limit_decode_tok_s > 0 ? j.limit_decode_tok_s.toFixed(2) + " | " + (100 * j.decode_tok_s / j.limit_decode_tok_s).toFixed(0) + "%" : "n/a | n/a"') | $(json_get \
    "$work/cap.json" '(100 * j.hit_rate).toFixed(1) + "% | " + (j.bytes_read_per_token / 1e6).toFixed(0) + " MB"') |"
fi

bench_header "i-quant decode in RAM: $N tokens after a $P-token prompt" \
  "bench/iquant-decode.sh --reps $REPS -t $THREADS -p $P -n $N --variants $VARIANTS${CAP:+ --cap $CAP --cap-model $CAP_MODEL} ${models[*]}"
if [ ${#rows[@]} -gt 0 ]; then
  echo "| model | GB | weights GB/token (file) | RAM probe GB/s | limit tok/s | Sniper | --no-repack | avx2 | avx2 --no-repack | llama.cpp | Sniper / llama.cpp | Sniper / limit | Sniper's paired roofline share |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for row in "${rows[@]+"${rows[@]}"}"; do echo "$row"; done
  echo
  echo "Decode tok/s. The limit is the RAM probe over the weight bytes a token reads in the file's layouts (what"
  echo "llama.cpp reads); the paired share counts the bytes as held (repacked layouts are larger) against a probe"
  echo "taken right before each of a few tokens. Sniper: \`sniper bench MODEL --residency resident -p $P -n $N -t $THREADS --json\`"
  echo "(--no-repack, SNIPER_ISA=avx2 as named); llama.cpp: \`llama-bench -m MODEL -p $P -n $N -t $THREADS -r 1 -o json\`."
fi
if [ ${#notes[@]} -gt 0 ]; then
  echo
  echo "One-token matvec GB/s per weight type (first run; repacked layouts with their file type in brackets):"
  echo
  for n in "${notes[@]}"; do echo "$n"; done
fi
if [ -n "$cap_row" ]; then
  echo
  echo "Streamed under a $CAP cap (\`scripts/run-capped.sh $CAP sniper bench MODEL --mem auto\`; nothing is repacked there):"
  echo
  echo "| model | cap | decode tok/s | physical limit tok/s | share | expert hits | SSD read/token |"
  echo "|---|---|---|---|---|---|---|"
  echo "$cap_row"
fi
