# SPDX-License-Identifier: MIT
# Shared by the side-by-side benchmark scripts in bench/ (sourced, not run). Each script runs
# Sniper and llama.cpp on the same GGUF file in one sitting, alternating the two, and prints a
# markdown table headed by the machine, the date, the versions and the exact commands, ready to
# paste into docs/benchmarks.md.
#
# Common options (parsed by bench_parse_common; the rest are the script's own):
#   --sniper BIN        the sniper binary (default: build/release/bin/sniper, built if missing)
#   --llama-bin DIR     llama.cpp's build/bin (default: $LLAMA_BIN, else
#                       $LLAMA_CPP_DIR/llama.cpp-d32676d77/build/bin, LLAMA_CPP_DIR=/tmp/llama.cpp)
#   --build-llama       build llama.cpp from ../shared/tools (the reference revision) when missing
#   --models DIR        where preset models are written (default: $BENCH_MODELS or /tmp/sniper-bench)
#   -t N                threads for both engines (default: all cores)
#   --reps N            runs of each engine, alternated (default 3)
# A model argument is a GGUF path or preset:NAME[:layers=N][:type=T] (written once with
# `sniper synth`; T a quantization mix such as q4_k_m or iq2_m).

set -euo pipefail
BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SNIPER=${SNIPER:-}
LLAMA_BIN=${LLAMA_BIN:-}
BUILD_LLAMA=0
BENCH_MODELS=${BENCH_MODELS:-/tmp/sniper-bench}
THREADS=$(nproc)
REPS=3
BENCH_ARGS=()  # what is left for the script after the common options

bench_parse_common() {
  BENCH_ARGS=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --sniper) SNIPER=$2; shift 2 ;;
      --llama-bin) LLAMA_BIN=$2; shift 2 ;;
      --build-llama) BUILD_LLAMA=1; shift ;;
      --models) BENCH_MODELS=$2; shift 2 ;;
      -t) THREADS=$2; shift 2 ;;
      --reps) REPS=$2; shift 2 ;;
      *) BENCH_ARGS+=("$1"); shift ;;
    esac
  done
  case "$THREADS" in '' | *[!0-9]*) bench_die "-t is '$THREADS' but must be a number of threads" ;; esac
  case "$REPS" in '' | *[!0-9]* | 0) bench_die "--reps is '$REPS' but must be a positive number" ;; esac
}

bench_die() {
  echo "error: $*" >&2
  exit 1
}

bench_need() { command -v "$1" > /dev/null || bench_die "$1 is needed ($2)"; }

# Sets SNIPER to a built binary.
bench_find_sniper() {
  if [ -z "$SNIPER" ]; then
    SNIPER=$BENCH_ROOT/build/release/bin/sniper
    if [ ! -x "$SNIPER" ]; then
      echo "building sniper (cmake --preset release)..." >&2
      (cd "$BENCH_ROOT" && cmake --preset release > /dev/null && cmake --build --preset release --target sniper_cli > /dev/null)
    fi
  fi
  [ -x "$SNIPER" ] || bench_die "no sniper binary at $SNIPER (pass --sniper BIN)"
}

# Sets LLAMA_BIN to llama.cpp's bin folder (building the reference revision when asked).
bench_find_llama() {
  if [ -z "$LLAMA_BIN" ]; then
    local dir=${LLAMA_CPP_DIR:-/tmp/llama.cpp}
    LLAMA_BIN=$dir/llama.cpp-d32676d77/build/bin
    if [ ! -x "$LLAMA_BIN/llama-bench" ] && [ "$BUILD_LLAMA" = 1 ]; then
      local script=$BENCH_ROOT/../shared/tools/build-llama-cpp.sh
      [ -x "$script" ] || bench_die "cannot build llama.cpp: $script is missing"
      echo "building llama.cpp (the reference revision) into $dir; this takes a while..." >&2
      LLAMA_BIN=$("$script" "$dir" | tail -1)
    fi
  fi
  [ -x "$LLAMA_BIN/llama-bench" ] ||
    bench_die "no llama-bench in '$LLAMA_BIN': pass --llama-bin DIR, set LLAMA_BIN, or add --build-llama"
  export LD_LIBRARY_PATH=$LLAMA_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# bench_model SPEC: prints the path of the GGUF file SPEC names (writing a preset once).
bench_model() {
  local spec=$1
  if [ -f "$spec" ]; then
    echo "$spec"
    return
  fi
  case "$spec" in
    preset:*)
      local rest=${spec#preset:} name layers="" type="" opt file opts=()
      name=${rest%%:*}
      IFS=: read -r -a opts <<< "${rest#"$name"}"
      for opt in "${opts[@]+"${opts[@]}"}"; do
        case "$opt" in
          '') ;;
          layers=*) layers=${opt#layers=} ;;
          type=*) type=${opt#type=} ;;
          *) bench_die "model '$spec': '$opt' is neither layers=N nor type=T" ;;
        esac
      done
      file=$BENCH_MODELS/$name${layers:+-${layers}l}${type:+-$type}.gguf
      if [ ! -f "$file" ]; then
        mkdir -p "$BENCH_MODELS"
        echo "writing $file (sniper synth --preset $name${layers:+ --layers $layers}${type:+ --type $type})..." >&2
        "$SNIPER" synth --preset "$name" ${layers:+--layers "$layers"} ${type:+--type "$type"} -o "$file" > /dev/null
      fi
      echo "$file"
      ;;
    *) bench_die "model '$spec' is neither a file nor preset:NAME[:layers=N][:type=T]" ;;
  esac
}

# The machine, in one line.
bench_machine() {
  local cpu mem
  cpu=$(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -1)
  mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
  echo "${cpu:-unknown CPU}, $(nproc) cores, $mem RAM, $(uname -sr)"
}

# bench_header TITLE COMMAND: the block above a table.
bench_header() {
  echo "### $1"
  echo
  echo "- machine: $(bench_machine); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- date: $(date -u +%Y-%m-%d)"
  echo "- sniper: $("$SNIPER" --version | head -1); $("$SNIPER" --version | sed -n 2p)"
  echo "- llama.cpp: $LLAMA_BIN (the reference revision d32676d77)"
  echo "- command: $2"
  echo "- each figure: the median of $REPS runs per engine, alternated (min-max in brackets), $THREADS threads"
  echo
}

# json_get FILE JS_EXPR: evaluates JS_EXPR with `j` bound to the last JSON value in FILE (the
# last line for sniper bench --json; the whole file for llama-bench -o json).
json_get() {
  node -e '
    const fs = require("fs");
    const text = fs.readFileSync(process.argv[1], "utf8").trim();
    let j;
    try { j = JSON.parse(text); } catch (e) { j = JSON.parse(text.split("\n").pop()); }
    const v = eval(process.argv[2]);
    console.log(v === undefined || v === null ? "" : v);' "$1" "$2"
}

# summary V1 V2 ...: "median (min-max)", or "n/a" with no values.
summary() {
  node -e '
    const v = process.argv.slice(1).map(Number).filter((x) => Number.isFinite(x) && x > 0).sort((a, b) => a - b);
    if (!v.length) { console.log("n/a"); process.exit(0); }
    const m = v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    const f = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
    console.log(v.length > 1 ? `${f(m)} (${f(v[0])}-${f(v[v.length - 1])})` : f(m));' "$@"
}

# ratio "A (..)" "B (..)": A/B of the medians, "1.23x"; "n/a" when either is missing.
ratio() {
  node -e '
    const a = parseFloat(process.argv[1]), b = parseFloat(process.argv[2]);
    console.log(a > 0 && b > 0 ? (a / b).toFixed(2) + "x" : "n/a");' "$1" "$2"
}
