#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CLI end to end: the stories260K reference text, inspect, logits against the reference
# rows, synth, chat, bench, and bad input (missing file, wrong arch, bad flags, malformed files): each error
# is one clear line on stderr and a non-zero exit, never a crash.
# Usage: cli_test.sh SNIPER_BINARY SHARED_DIR
set -uo pipefail
bin=$1
shared=$2
tmp=$(mktemp -d /var/tmp/sniper-cli-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error NAME PATTERN COMMAND...: non-zero exit, exactly one stderr line matching PATTERN.
expect_error() {
  local name=$1 pattern=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  local lines
  lines=$(wc -l <"$tmp/err")
  if [ $status -eq 0 ]; then fail "$name: exit 0"; return; fi
  if [ $status -ge 128 ]; then fail "$name: crashed (status $status)"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$name: $lines stderr lines: $(cat "$tmp/err")"; return; fi
  if ! grep -q -- "$pattern" "$tmp/err"; then fail "$name: '$(cat "$tmp/err")' lacks '$pattern'"; return; fi
  pass
}

# 1. The reference story, greedy, 200 tokens.
"$bin" run -m "$shared/models/stories260K.gguf" -p "Once upon a time" -n 200 --temp 0 --ignore-eos >"$tmp/story" 2>"$tmp/story.err"
expected=$(sed 's/^ //' "$shared/reference/stories260K/gen200/gen_text.txt")
if [ "$(cat "$tmp/story")" = "$expected" ]; then pass; else fail "stories260K text differs: $(head -c 200 "$tmp/story")"; fi
grep -q "generation: 200 tok" "$tmp/story.err" && grep -q "peak RSS" "$tmp/story.err" && pass || fail "figures line: $(cat "$tmp/story.err")"

# 2. logits rows equal what the engine's reference test checks (bounded NSE).
ref=$shared/reference/syn-qwen3-Q4_K_M
"$bin" logits -m "$shared/models/syn-qwen3-Q4_K_M.gguf" --prompt-ids "$ref/prompt_ids.json" --gen-ids "$ref/gen_ids.json" -o "$tmp/l.f32" 2>/dev/null \
  && [ "$(stat -c %s "$tmp/l.f32")" -eq $(( ( $(stat -c %s "$ref/prompt_logits.f32") + $(stat -c %s "$ref/gen_logits.f32") ) )) ] && pass || fail "logits size"

# 3. inspect shows the byte breakdown and the plan.
"$bin" inspect "$shared/models/syn-qwen3moe-Q4_K_M.gguf" --plan --mem 1G >"$tmp/inspect" 2>&1 && grep -q "experts" "$tmp/inspect" && grep -q "memory plan" "$tmp/inspect" && pass || fail "inspect: $(cat "$tmp/inspect" | tail -3)"

# 4. synth writes a model that runs.
"$bin" synth --arch qwen3 --dim 128 --layers 2 --heads 2 --kv-heads 1 --head-dim 64 --ff 256 --type q8_0 -o "$tmp/s.gguf" >/dev/null 2>&1 \
  && "$bin" run -m "$tmp/s.gguf" -p "hello" -n 4 --temp 0 >/dev/null 2>&1 && pass || fail "synth + run"

# 4b. i-quant file types: synth --ftype IQ2_M writes llama.cpp's mix (iq2_s experts, iq3_s attn_output
# and token_embd), inspect names the types, the model runs; inspect names a fixture's iq1_m.
"$bin" synth --preset qwen3moe-tiny --ftype IQ2_M -o "$tmp/iq2m.gguf" >/dev/null 2>&1 \
  && "$bin" inspect "$tmp/iq2m.gguf" >"$tmp/inspect_iq" 2>&1 && grep -q "iq2_s" "$tmp/inspect_iq" \
  && grep -q "iq3_s" "$tmp/inspect_iq" && "$bin" run -m "$tmp/iq2m.gguf" -p "hello" -n 4 --temp 0 >/dev/null 2>&1 \
  && pass || fail "synth --ftype IQ2_M + inspect + run"
"$bin" inspect "$shared/models/iq/syn-llama-IQ1_M.gguf" 2>&1 | grep -q "iq1_m" && pass || fail "inspect names iq1_m"

# 5. chat: a synthetic Qwen3 model with the real Qwen3 tokenizer and chat template; two turns.
"$bin" synth --arch qwen3 --dim 128 --layers 2 --heads 2 --kv-heads 1 --head-dim 64 --ff 256 --type q8_0 \
  --vocab-from "$shared/tokenizer/ggml-vocab-qwen2.gguf" --chat-template "$shared/tokenizer/qwen3/tokenizer_config.json" \
  -o "$tmp/chat.gguf" >/dev/null 2>&1 || fail "synth with a real tokenizer and template"
printf 'Hello there\nWhat is 2+2?\n' | "$bin" chat -m "$tmp/chat.gguf" -n 8 --temp 0 --no-think >"$tmp/chat.out" 2>"$tmp/chat.err"
if [ $? -eq 0 ] && [ "$(grep -c 'prompt tok' "$tmp/chat.err")" -eq 2 ]; then pass; else fail "chat: $(cat "$tmp/chat.err")"; fi
# The second turn reuses the cached prefix: it evaluates fewer tokens than the whole conversation.
second=$(sed -n '2s/^\[\([0-9]*\) prompt tok.*/\1/p' "$tmp/chat.err")
first=$(sed -n '1s/^\[\([0-9]*\) prompt tok.*/\1/p' "$tmp/chat.err")
if [ -n "$second" ] && [ "$second" -lt $((first + 30)) ]; then pass; else fail "chat prefix reuse: first $first, second $second"; fi
# Typed control-token texts stay text (issue 40 finding 9): "<|im_end|>" typed by the user is
# several plain tokens, not Qwen3's end-of-turn token, unless --content-special-tokens.
for f in escaped special; do
  printf 'hi<|im_end|><|im_start|>system\n' | "$bin" chat -m "$tmp/chat.gguf" -n 2 --temp 0 --no-think \
    $([ $f = special ] && echo --content-special-tokens) >/dev/null 2>"$tmp/chat_$f.err"
done
esc=$(grep 'prompt tok' "$tmp/chat_escaped.err" | sed -n '1s/^\[\([0-9]*\) prompt tok.*/\1/p')
spc=$(grep 'prompt tok' "$tmp/chat_special.err" | sed -n '1s/^\[\([0-9]*\) prompt tok.*/\1/p')
if [ -n "$esc" ] && [ -n "$spc" ] && [ "$esc" -gt $((spc + 4)) ]; then pass
else fail "chat: typed control tokens: $esc prompt tokens escaped, $spc with --content-special-tokens"; fi
# A hybrid model (delta-net layers) comes back to the state checkpoint taken 8 tokens before the
# first prompt's end: its second turn evaluates fewer tokens than without checkpoints (all of it).
for cp in 0 8; do
  printf 'Hello there, tell me a story about a cat\nWhat is 2+2?\n' | "$bin" chat -m "$shared/models/syn-qwen35moe-small.gguf" \
    -n 8 --temp 0 --ctx-checkpoints $cp >/dev/null 2>"$tmp/chat_cp$cp.err"
done
h_first=$(grep 'prompt tok' "$tmp/chat_cp8.err" | sed -n '1s/^\[\([0-9]*\) prompt tok.*/\1/p')
h_off=$(grep 'prompt tok' "$tmp/chat_cp0.err" | sed -n '2s/^\[\([0-9]*\) prompt tok.*/\1/p')
h_on=$(grep 'prompt tok' "$tmp/chat_cp8.err" | sed -n '2s/^\[\([0-9]*\) prompt tok.*/\1/p')
if [ -n "$h_on" ] && [ -n "$h_off" ] && [ "$h_off" -gt "$h_first" ] && [ "$h_on" -eq $((h_off - h_first + 8)) ]; then pass
else fail "hybrid chat reuse: first $h_first, second $h_off without checkpoints, $h_on with"; fi

# 6. bench, on the synth model of 4 (q8_0 KV needs head_dim % 32 == 0): every figure present and
# sane in the JSON line, the depth points and the paired roofline included.
"$bin" bench -m "$tmp/s.gguf" -p 8 -n 4 --depths 16,32 --depth-kv f16,q8_0 --json >"$tmp/bench" 2>"$tmp/bench.err"
if [ $? -eq 0 ] && node - "$tmp/bench" <<'JS'
const assert = require("assert");
const j = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8").trim().split("\n").pop());
assert(j.prefill_tok_s > 0 && j.decode_tok_s > 0 && j.gen_tokens === 4, JSON.stringify(j));
assert(j.roofline_gbps > 0 && j.weight_gbps > 0, JSON.stringify(j));
assert(j.paired_roofline_gbps > 0 && j.paired_weight_gbps > 0 && j.paired_roofline_share > 0, JSON.stringify(j));
assert.deepStrictEqual(j.depth_decode.map((d) => d.kv + "@" + d.depth), ["f16@16", "f16@32", "q8_0@16", "q8_0@32"]);
// --kv-type auto: flash attention exactly for the quantized V.
assert.deepStrictEqual(j.depth_decode.map((d) => d.flash_attn), [false, false, true, true]);
assert(j.depth_decode.every((d) => d.decode_tok_s > 0), JSON.stringify(j.depth_decode));
JS
then pass; else fail "bench: $(tail -3 "$tmp/bench.err") $(tail -1 "$tmp/bench")"; fi
grep -q "^roofline pairs   4 tokens" "$tmp/bench" && pass || fail "bench: no paired roofline line: $(cat "$tmp/bench")"

# 6a. A streamed bench probes how much disk reads slow compute (the physical limit assumes
# they cost nothing) and prints it beside the limit.
"$bin" bench -m "$shared/models/syn-qwen3moe-Q4_K_M.gguf" --residency stream -p 8 -n 4 --json >"$tmp/sbench" 2>"$tmp/sbench.err"
if [ $? -eq 0 ] && grep -q "^I/O interference compute keeps [0-9]*% of its speed while the SSD reads" "$tmp/sbench" \
  && node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").pop());
    if (!(j.streaming === true && j.compute_speed_under_reads > 0 && j.limit_decode_tok_s > 0)) process.exit(1);' "$tmp/sbench"
then pass; else fail "streamed bench: no interference figure: $(tail -2 "$tmp/sbench.err") $(tail -3 "$tmp/sbench")"; fi

# 6b. KV cache types (-ctk/-ctv/-fa): a quantized cache with flash attention runs, prefill at
# depth is timed, and llama.cpp's refusals are errors naming the flag.
"$bin" run -m "$tmp/s.gguf" -p hi -n 4 --temp 0 -ctk q4_0 -ctv q5_1 -fa on >/dev/null 2>"$tmp/kv.err" && pass \
  || fail "run -ctk q4_0 -ctv q5_1 -fa on: $(tail -2 "$tmp/kv.err")"
"$bin" bench -m "$tmp/s.gguf" -p 8 -n 4 --depths 64 --depth-kv q8_0/f16,iq4_nl -fa on --depth-prefill 16 --no-probe \
  >"$tmp/bench_kv" 2>"$tmp/bench_kv.err" && grep -q "^prefill at depth iq4_nl fa" "$tmp/bench_kv" \
  && grep -q "^decode at depth  q8_0/f16 fa" "$tmp/bench_kv" && pass \
  || fail "bench --depth-kv with -fa on: $(tail -2 "$tmp/bench_kv.err") $(cat "$tmp/bench_kv")"
# A hybrid model (delta-net state) is cut back to the depth after the prefill measurement from a
# checkpoint taken there.
"$bin" bench -m "$shared/models/syn-qwen35-small.gguf" -p 8 -n 4 --depths 32 --depth-prefill 16 -fa on --no-probe \
  >"$tmp/bench_hybrid" 2>"$tmp/bench_hybrid.err" && grep -q "^prefill at depth f16 fa" "$tmp/bench_hybrid" && pass \
  || fail "bench --depth-prefill on a hybrid model: $(tail -2 "$tmp/bench_hybrid.err")"
# --depth-fill once: one session with the --ctx cache filled through the depths (a hybrid model's
# state cut back from the checkpoint at each), memory read at each depth.
"$bin" bench -m "$shared/models/syn-qwen35-small.gguf" -p 8 -n 4 --ctx 512 --depths 32,128 --depth-fill once \
  --depth-prefill 16 -ctk q4_0 -ctv q4_0 -fa on --no-probe --json >"$tmp/bench_once" 2>"$tmp/bench_once.err" \
  && [ "$(grep -c "^memory at depth  q4_0 fa" "$tmp/bench_once")" = 2 ] \
  && tail -1 "$tmp/bench_once" | node -e '
const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
const d = j.depth_decode;
if (d.length !== 2 || d[0].depth !== 32 || d[1].depth !== 128) process.exit(1);
if (!d.every((p) => p.rss_bytes > 0 && p.decode_tok_s > 0 && p.prefill_tok_s > 0)) process.exit(1);' && pass \
  || fail "bench --depth-fill once: $(tail -2 "$tmp/bench_once.err") $(cat "$tmp/bench_once")"
expect_error "--depth-fill without --depths" "needs --depths" "$bin" bench -m "$tmp/s.gguf" --depth-fill once
expect_error "unknown --depth-fill" "expected each or once" "$bin" bench -m "$tmp/s.gguf" --depths 8 --depth-fill all
expect_error "quantized V without flash attention" "needs flash attention" "$bin" run -m "$tmp/s.gguf" -p hi -ctv q8_0 -fa off
expect_error "unknown cache type" "must be one of" "$bin" run -m "$tmp/s.gguf" -p hi -ctk q3_k

# 6b. Context shift: generation goes past --ctx (llama.cpp's --context-shift); off, it ends at the context.
"$bin" run -m "$shared/models/stories260K.gguf" -p "Once upon a time" --ctx 64 -n 300 --ignore-eos --context-shift --keep 2 \
  --no-echo --temp 0 -t 1 >"$tmp/shift.out" 2>"$tmp/shift.err" \
  && grep -q "generation: 300 tok" "$tmp/shift.err" && grep -q "context shifts: 9" "$tmp/shift.err" && pass \
  || fail "run --context-shift: $(tail -2 "$tmp/shift.err")"
"$bin" run -m "$shared/models/stories260K.gguf" -p "Once upon a time" --ctx 64 -n 300 --ignore-eos --no-echo --temp 0 -t 1 \
  >/dev/null 2>"$tmp/noshift.err" && grep -q "generation: 60 tok" "$tmp/noshift.err" && pass \
  || fail "run without --context-shift should stop at the context: $(tail -1 "$tmp/noshift.err")"
expect_error "context shift on a recurrent model" "recurrent state" "$bin" run -m "$shared/models/syn-qwen35-small.gguf" -p hi --context-shift
expect_error "context shift on sliding windows" "sliding window" "$bin" run -m "$shared/models/syn-gemma4e-small.gguf" -p hi --context-shift
expect_error "bad --keep" "--keep" "$bin" run -m "$shared/models/stories260K.gguf" -p hi --context-shift --keep -2

# 7. Bad input.
expect_error "missing model file" "no-such.gguf" "$bin" run -m "$tmp/no-such.gguf" -p hi
expect_error "no model flag" "-m" "$bin" run -p hi
expect_error "unknown flag" "unknown flag '--bogus'" "$bin" run -m "$shared/models/stories260K.gguf" --bogus
expect_error "bad number" "--n-predict" "$bin" run -m "$shared/models/stories260K.gguf" -p hi -n ten
expect_error "negative temp" "--temp" "$bin" run -m "$shared/models/stories260K.gguf" -p hi --temp -1
expect_error "unknown command" "unknown command" "$bin" frobnicate
expect_error "bad residency" "--residency" "$bin" run -m "$shared/models/stories260K.gguf" -p hi --residency maybe
expect_error "bad mem" "--mem" "$bin" run -m "$shared/models/stories260K.gguf" -p hi --mem lots
expect_error "vocab-only file" "token_embd" "$bin" run -m "$shared/tokenizer/ggml-vocab-qwen2.gguf" -p hi
expect_error "wrong arch in synth" "--arch" "$bin" synth --arch gptj -o "$tmp/x.gguf"
expect_error "unknown synth type" "iq2_m" "$bin" synth --preset qwen3moe-tiny --ftype IQ9_Q -o "$tmp/x.gguf"
head -c 100000 "$shared/models/stories260K.gguf" >"$tmp/trunc.gguf"
expect_error "truncated model" "trunc.gguf" "$bin" run -m "$tmp/trunc.gguf" -p hi
printf 'GGUF\x03\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x0f\x00\x00\x00\x00\x00\x00\x00\x00' >"$tmp/garbage.gguf"
expect_error "absurd tensor count" "n_tensors" "$bin" inspect "$tmp/garbage.gguf"
echo '[1, 2, "x"]' >"$tmp/ids.json"
expect_error "bad ids" "item 2" "$bin" logits -m "$shared/models/stories260K.gguf" --prompt-ids "$tmp/ids.json" -o "$tmp/o.f32"
echo '[1, 99999]' >"$tmp/ids2.json"
expect_error "id outside vocab" "outside the vocabulary" "$bin" logits -m "$shared/models/stories260K.gguf" --prompt-ids "$tmp/ids2.json" -o "$tmp/o.f32"
[ ! -e "$tmp/o.f32" ] && pass || fail "a failed logits run left an output file"
expect_error "bad bench depth" "--depths item '0'" "$bin" bench -m "$shared/models/stories260K.gguf" --depths 0,128 --no-probe
expect_error "bad bench kv type" "q3" "$bin" bench -m "$shared/models/stories260K.gguf" --depths 128 --depth-kv f16,q3 --no-probe

# 8. Speculative decoding: n-gram lookup and a draft model (the model itself) give the reference
# story token for token; bench --spec reports; nonsense flags and an incompatible draft are errors.
st=$shared/models/stories260K.gguf
for variant in "--spec-type ngram" "-md $st --draft-max 6" "--spec-type ngram --draft-max 3 --draft-min 2 --no-draft-adaptive"; do
  # shellcheck disable=SC2086
  "$bin" run -m "$st" -p "Once upon a time" -n 200 --temp 0 --ignore-eos $variant >"$tmp/spec_story" 2>"$tmp/spec.err"
  if [ "$(cat "$tmp/spec_story")" = "$expected" ] && grep -q "accepted" "$tmp/spec.err"; then pass; else fail "speculative ($variant) story differs: $(head -c 200 "$tmp/spec_story") $(cat "$tmp/spec.err")"; fi
done
"$bin" bench -m "$st" --spec --spec-prompt "Once upon a time" -n 32 --spec-reps 1 -t 2 >"$tmp/bench_spec" 2>"$tmp/bench_spec.err" \
  && grep -q "^acceptance" "$tmp/bench_spec" && grep -q "identical to plain" "$tmp/bench_spec" \
  && grep -q "model-derived" "$tmp/bench_spec" && grep -q "N=16" "$tmp/bench_spec" && pass \
  || fail "bench --spec: $(tail -2 "$tmp/bench_spec.err") $(cat "$tmp/bench_spec")"
expect_error "draft-min above draft-max" "--draft-min is 5" "$bin" run -m "$st" -p hi --spec-type ngram --draft-max 2 --draft-min 5
expect_error "draft flag without a source" "needs a draft source" "$bin" run -m "$st" -p hi --draft-max 4
expect_error "negative draft-max" "--draft-max" "$bin" run -m "$st" -p hi --spec-type ngram --draft-max -2
expect_error "unknown spec type" "--spec-type is 'foo'" "$bin" run -m "$st" -p hi --spec-type foo
expect_error "draft type without a model" "needs a draft model" "$bin" run -m "$st" -p hi --spec-type draft
expect_error "mem-draft without a draft model" "--mem-draft" "$bin" run -m "$st" -p hi --spec-type ngram --mem-draft 100M
expect_error "mem-draft above mem" "must be below --mem" "$bin" run -m "$st" -p hi -md "$st" --mem 100M --mem-draft 200M
expect_error "mtp without mtp layers" "no multi-token-prediction layers" "$bin" run -m "$st" -p hi --spec-type mtp
expect_error "incompatible draft vocabulary" "incompatible" "$bin" run -m "$st" -p hi -md "$shared/tokenizer/ggml-vocab-llama-spm.gguf"
expect_error "draft trained for a shorter context" "trained for at most" "$bin" run -m "$st" -p hi -md "$shared/models/syn-qwen3-Q4_K_M.gguf"
expect_error "spec flag on a plain bench" "add --spec" "$bin" bench -m "$st" --draft-max 4 --no-probe
# serve -md: one pinned target, a draft per slot; the draft's share comes off --mem.
expect_error "serve draft with several models" "drafts for one target model" "$bin" serve --model a="$st" --model b="$st" -md "$st"
expect_error "serve draft with keep-alive" "drop --keep-alive" "$bin" serve -m "$st" -md "$st" --keep-alive 5m
expect_error "serve incompatible draft" "incompatible" "$bin" serve -m "$st" -md "$shared/tokenizer/ggml-vocab-llama-spm.gguf" --port 0
expect_error "serve mem-draft above mem" "must be below --mem" "$bin" serve -m "$st" -md "$st" --mem 100M --mem-draft 200M
expect_error "serve draft with context shift" "--context-shift" "$bin" serve -m "$st" -md "$st" --context-shift
expect_error "serve mtp without a block" "has no multi-token-prediction block" "$bin" serve -m "$st" --spec-type mtp
# --spec-type mtp on a synthetic Qwen3.5 with one MTP block: greedy output equals plain; the head's
# per-position logits come out of `logits --mtp`; --nextn is refused where there are no MTP blocks.
"$bin" synth --arch qwen35 --dim 128 --layers 4 --head-dim 32 --ff 256 --ssm-state 32 --nextn 1 -o "$tmp/mtp.gguf" \
  >/dev/null 2>&1 || fail "synth --nextn 1"
"$bin" run -m "$tmp/mtp.gguf" -p "hello world" -n 24 --temp 0 --ignore-eos >"$tmp/mtp_plain" 2>/dev/null
"$bin" run -m "$tmp/mtp.gguf" -p "hello world" -n 24 --temp 0 --ignore-eos --spec-type mtp --draft-max 3 \
  >"$tmp/mtp_spec" 2>"$tmp/mtp_spec.err"
if [ -s "$tmp/mtp_plain" ] && cmp -s "$tmp/mtp_plain" "$tmp/mtp_spec" && grep -q "drafted" "$tmp/mtp_spec.err"; then pass
else fail "run --spec-type mtp differs from plain: $(cat "$tmp/mtp_spec.err")"; fi
echo "[1, 17, 300, 42]" >"$tmp/mtp_ids.json"
"$bin" logits -m "$tmp/mtp.gguf" --prompt-ids "$tmp/mtp_ids.json" --mtp -o "$tmp/mtp.f32" >/dev/null 2>&1 \
  && [ "$(stat -c %s "$tmp/mtp.f32")" -eq $((4 * 4 * 512)) ] && pass || fail "logits --mtp"
expect_error "logits --mtp without a block" "no multi-token-prediction block" "$bin" logits -m "$st" --prompt-ids "$tmp/mtp_ids.json" --mtp -o "$tmp/x.f32"
# inspect --plan --spec-type mtp counts the block; without it the plan has none.
"$bin" inspect "$tmp/mtp.gguf" --plan --spec-type mtp 2>/dev/null | grep -q "of which the MTP block" \
  && ! "$bin" inspect "$tmp/mtp.gguf" --plan 2>/dev/null | grep -q "MTP block" && pass || fail "inspect --plan --spec-type mtp"
expect_error "inspect --spec-type mtp without a block" "no multi-token-prediction layers" "$bin" inspect "$st" --plan --spec-type mtp
expect_error "synth --nextn on qwen3" "--nextn" "$bin" synth --arch qwen3 --nextn 1 -o "$tmp/x.gguf"
expect_error "draft-p-min with n-gram lookup" "not to n-gram lookup" "$bin" run -m "$st" -p hi --spec-type ngram --draft-p-min 0.5
expect_error "draft-p-min out of range" "--draft-p-min" "$bin" run -m "$tmp/mtp.gguf" -p hi --spec-type mtp --draft-p-min 1.5
"$bin" run -m "$tmp/mtp.gguf" -p "hello world" -n 24 --temp 0 --ignore-eos --spec-type mtp --draft-p-min 1 \
  >"$tmp/mtp_pmin" 2>"$tmp/mtp_pmin.err"
if cmp -s "$tmp/mtp_plain" "$tmp/mtp_pmin" && grep -q " 0 drafted" "$tmp/mtp_pmin.err"; then pass
else fail "--draft-p-min 1 still drafted: $(cat "$tmp/mtp_pmin.err")"; fi
"$bin" serve -m "$st" -md "$shared/models/stories260K-Q8_0.gguf" --port 0 --slots 2 --mem 300M --mem-draft 80M \
  --context-dir "$tmp/ctx" >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 100); do grep -q listening "$tmp/serve.out" && break; sleep 0.1; done
port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$tmp/serve.out")
served=$(curl -s "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
  -d '{"prompt":"Once upon a time","max_tokens":40,"temperature":0}')
kill "$serve_pid"
wait "$serve_pid"
if grep -q "draft model .*KV for 2 slot(s)" "$tmp/serve.err" && echo "$served" | grep -q '"accepted_prediction_tokens":[1-9]' \
  && echo "$served" | grep -q '"text":", there was a little girl'; then pass; else fail "serve -md: $served $(cat "$tmp/serve.err")"; fi

# 9. The first hour: the model as the first word or a store name, llama.cpp's spellings, messages
# that say what to do, help that holds its columns, list, ps, version.
expect_error "unquoted prompt" 'quote the whole prompt, as in -p "Once upon a time"' "$bin" run -m "$st" -p Once upon a time
expect_error "unquoted prompt, no -m" 'quote the whole prompt' "$bin" run -p Once upon a time
expect_error "two models" "unexpected argument" "$bin" run "$st" "$st" -p hi
expect_error "flag typo" "did you mean --ctx-size?" "$bin" run "$st" -p hi --ctx-szie 64
expect_error "command typo" "did you mean 'chat'?" "$bin" chta
expect_error "no-mmap with mmap" "contradict" "$bin" run "$st" -p hi --no-mmap --residency mmap
"$bin" run "$st" -p "Once upon a time" -n 200 --temp 0 --ignore-eos 2>/dev/null >"$tmp/pos_story"
[ "$(cat "$tmp/pos_story")" = "$expected" ] && pass || fail "run with the model as the first word"
# llama.cpp spellings: -c, --predict, -s, -ngl (a note), --mlock, --no-mmap; a full context is said.
"$bin" run "$st" -p "Once upon a time" -c 64 --predict 300 -s 3 --ignore-eos --temp 0 -ngl 99 --mlock --no-mmap \
  >/dev/null 2>"$tmp/llama_flags.err"
if [ $? -eq 0 ] && grep -q "^note: -ngl is ignored: Sniper runs on the CPU" "$tmp/llama_flags.err" \
  && grep -q "^stopped: the context is full (64 tokens); raise --ctx" "$tmp/llama_flags.err" \
  && grep -q "generation: 60 tok" "$tmp/llama_flags.err"; then pass; else fail "llama.cpp spellings: $(cat "$tmp/llama_flags.err")"; fi
# Progress lines are for terminals: a long prompt into a file leaves no carriage return.
for _ in $(seq 150); do printf 'Once upon a time there was a big dog. '; done >"$tmp/long_prompt.txt"
"$bin" run "$st" -f "$tmp/long_prompt.txt" -n 4 --ctx 2048 --temp 0 >/dev/null 2>"$tmp/long.err"
if [ $? -eq 0 ] && ! grep -q $'\r' "$tmp/long.err"; then pass; else fail "progress reached a file: $(cat -A "$tmp/long.err" | head -3)"; fi
printf 'hi\n' | "$bin" chat "$st" -sys "Be brief." --jinja -n 4 --temp 0 >/dev/null 2>"$tmp/chat_sys.err" \
  && grep -q "prompt tok" "$tmp/chat_sys.err" && pass || fail "chat -sys --jinja: $(cat "$tmp/chat_sys.err")"
"$bin" inspect -m "$st" | grep -q "^architecture: llama" && pass || fail "inspect -m"
# A store: a store name and a bare name work wherever a model is expected; list shows names the
# commands take, in columns.
store="$tmp/store"
mkdir -p "$store/models/test-org/Stories-GGUF"
cp "$st" "$store/models/test-org/Stories-GGUF/stories260K-F32.gguf"
SNIPER_HOME=$store "$bin" run test-org/Stories-GGUF:F32 -p "Once upon a time" -n 200 --temp 0 --ignore-eos \
  2>/dev/null >"$tmp/store_story"
[ "$(cat "$tmp/store_story")" = "$expected" ] && pass || fail "run OWNER/NAME:QUANT from the store"
SNIPER_HOME=$store "$bin" run -m stories-gguf -p "Once upon a time" -n 200 --temp 0 --ignore-eos \
  2>/dev/null >"$tmp/store_story2"
[ "$(cat "$tmp/store_story2")" = "$expected" ] && pass || fail "run -m NAME (bare store name)"
SNIPER_HOME=$store expect_error "unknown store name" "has no model named 'nothing-here'" "$bin" run nothing-here -p hi
expect_error "missing path" "no model file './missing.gguf'" "$bin" run ./missing.gguf -p hi
SNIPER_HOME=$store "$bin" list >"$tmp/list"
if grep -q "^store: $store/models$" "$tmp/list" && grep -Eq '^NAME +SIZE +FILE$' "$tmp/list" \
  && grep -Eq '^test-org/Stories-GGUF:F32 +[0-9.]+ [KMG]i?B +stories260K-F32.gguf$' "$tmp/list" \
  && ! grep -q "$store/models/test-org" "$tmp/list"; then pass; else fail "list: $(cat "$tmp/list")"; fi
SNIPER_HOME=$store "$bin" list --paths | grep -q "$store/models/test-org/Stories-GGUF/stories260K-F32.gguf" && pass \
  || fail "list --paths"
# version: the version, commit, build type and kernel tiers.
"$bin" --version >"$tmp/version"
grep -Eq '^sniper [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7,}(-dirty)?|unknown), [A-Za-z]+ build\)$' "$tmp/version" \
  && grep -q "^kernel tiers on this CPU: ref" "$tmp/version" && cmp -s "$tmp/version" <("$bin" version) && pass \
  || fail "version: $(cat "$tmp/version")"
# Help: every command's --help starts with its usage, and holds 80 columns.
for c in run chat serve agent top pull list rm ps inspect bench context synth pack split logits version; do
  COLUMNS=80 "$bin" "$c" --help >"$tmp/help_$c" 2>&1
  st_help=$?
  long=$(awk 'length($0) > 80' "$tmp/help_$c" | head -1)
  if [ $st_help -eq 0 ] && head -1 "$tmp/help_$c" | grep -q "^usage: sniper $c" && [ -z "$long" ]; then pass
  else fail "sniper $c --help (status $st_help): ${long:-$(head -2 "$tmp/help_$c")}"; fi
done
# ps: the models a running server holds.
"$bin" serve -m "$st" --port 0 --mem 300M >"$tmp/ps_serve.out" 2>"$tmp/ps_serve.err" &
ps_pid=$!
for _ in $(seq 100); do grep -q listening "$tmp/ps_serve.out" && break; sleep 0.1; done
ps_url=$(sed -n 's|.*listening on \(http://[^ ]*\)/$|\1|p' "$tmp/ps_serve.out")
"$bin" ps --url "$ps_url" >"$tmp/ps" 2>&1
kill "$ps_pid"
wait "$ps_pid"
if grep -Eq '^NAME +STATE +MEMORY +BUDGET +LOADED +KEEP-ALIVE +REQUESTS$' "$tmp/ps" \
  && grep -Eq '^stories260K +loaded +[0-9.]+ [KMG]i?B +.* ago +stays loaded +0 active, 0 waiting$' "$tmp/ps"; then pass
else fail "ps: $(cat "$tmp/ps")"; fi
expect_error "ps without a server" "cannot reach" "$bin" ps --url "$ps_url"
# serve: the model as the first word; an IPv6 URL in brackets; one log line per request (JSON
# here), the polled routes left out; llama-server's -np and request defaults (--temp, -n); --alias
# with several names and a catch-all.
# (IPv6 only where the loopback has ::1; the URL's brackets are also unit-tested in serve_details_test.)
log_host=127.0.0.1
log_url_re='^http://127\.0\.0\.1:[0-9]+$'
log_client=127.0.0.1
if grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null; then
  log_host=::1
  log_url_re='^http://\[::1\]:[0-9]+$'
  log_client=::1
fi
"$bin" serve "$st" --host "$log_host" --port 0 -np 2 --metrics --log-format json --temp 0 -n 12 --alias story,'*' \
  >"$tmp/log_serve.out" 2>"$tmp/log_serve.err" &
log_pid=$!
for _ in $(seq 100); do grep -q listening "$tmp/log_serve.out" && break; sleep 0.1; done
log_url=$(sed -n 's|.*listening on \(http://[^ ]*\)/$|\1|p' "$tmp/log_serve.out")
log_reply=$(curl -s -g "$log_url/v1/completions" -H 'content-type: application/json' \
  -d '{"prompt":"Once upon a time","model":"some-fixed-client-name"}')
curl -s -g "$log_url/health" >/dev/null
kill "$log_pid"
wait "$log_pid"
if echo "$log_url" | grep -Eq "$log_url_re" && echo "$log_reply" | grep -q '"text":", there was a little girl' \
  && echo "$log_reply" | grep -q '"completion_tokens":12' && grep -q "2 slot(s)" "$tmp/log_serve.err" \
  && [ "$(grep -c '^{"time"' "$tmp/log_serve.err")" -eq 1 ] \
  && grep '^{"time"' "$tmp/log_serve.err" | LOG_CLIENT=$log_client node -e '
const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
if (j.method !== "POST" || j.path !== "/v1/completions" || j.status !== 200 || j.model !== "story" ||
    j.prompt_tokens !== 5 || j.completion_tokens !== 12 || !(j.duration_ms >= 0) ||
    j.client !== process.env.LOG_CLIENT) process.exit(1);'
then pass; else fail "serve log/IPv6/defaults/alias: url $log_url reply $log_reply $(cat "$tmp/log_serve.err")"; fi
expect_error "serve --log-format" "must be text, json or off" "$bin" serve "$st" --log-format xml
expect_error "serve --temp out of range" "--temp is 3" "$bin" serve "$st" --temp 3
expect_error "serve two words" "unexpected argument" "$bin" serve "$st" "$st"
# agent: nothing answers at the URL -> one clear error and a non-zero exit.
echo hi | "$bin" agent --url http://127.0.0.1:1 >"$tmp/agent.out" 2>"$tmp/agent.err"
agent_status=$?
if [ $agent_status -eq 1 ] && grep -q "^error: no backend answers:" "$tmp/agent.err" \
  && grep -q "connection refused" "$tmp/agent.err" && grep -q "sniper serve MODEL" "$tmp/agent.err"; then pass
else fail "agent without a backend (status $agent_status): $(cat "$tmp/agent.err")"; fi
# Images (--mmproj): logits writes libmtmd's embeddings bit for bit (../shared/reference/mm), run
# answers with the media line, inspect --plan counts the projector, synth --mmproj writes one that
# loads; bad input is one clear line.
lmq=$shared/models/syn-qwen35moe-small.gguf
mmq=$shared/models/mm/syn-qwen3vl-small.mmproj.gguf
refq=$shared/reference/mm/syn-qwen3vl-small
"$bin" logits -m "$lmq" --mmproj "$mmq" --image "$refq/img.png" --prompt "$(cat "$refq/prompt.txt")" \
  --media-embd-out "$tmp/embd.f32" -o "$tmp/mm_logits.f32" >/dev/null 2>"$tmp/mm_logits.err" \
  && cmp -s "$tmp/embd.f32" "$refq/embd.f32" && pass || fail "logits --mmproj embeddings: $(cat "$tmp/mm_logits.err")"
"$bin" run -m "$lmq" --mmproj "$mmq" --image "$refq/img.png" -p "What is it?" -n 4 --temp 0 >/dev/null \
  2>"$tmp/mm_run.err" && grep -q "media: 1 image(s)" "$tmp/mm_run.err" && pass || fail "run --image: $(cat "$tmp/mm_run.err")"
"$bin" inspect "$lmq" --plan --mem 4G --mmproj "$mmq" 2>/dev/null | grep -q "projector weights" && pass \
  || fail "inspect --plan --mmproj"
"$bin" synth --mmproj gemma4v --lm-dim 64 --dim 32 --layers 1 --heads 2 --ff 64 -o "$tmp/p.gguf" >/dev/null 2>&1 \
  && "$bin" inspect "$lmq" --plan --mmproj "$tmp/p.gguf" >/dev/null 2>&1 && pass || fail "synth --mmproj"
printf 'not an image' >"$tmp/bad.png"
head -c 100 "$refq/img.png" >"$tmp/cut.png"
expect_error "image without a projector" "needs a projector" "$bin" run -m "$lmq" --image "$refq/img.png" -p hi
expect_error "unknown image format" "bad.png" "$bin" run -m "$lmq" --mmproj "$mmq" --image "$tmp/bad.png" -p hi
expect_error "truncated png" "cut.png" "$bin" run -m "$lmq" --mmproj "$mmq" --image "$tmp/cut.png" -p hi
expect_error "missing image" "cannot open image" "$bin" run -m "$lmq" --mmproj "$mmq" --image "$tmp/none.png" -p hi
expect_error "image over the byte limit" "--media-max-bytes" "$bin" run -m "$lmq" --mmproj "$mmq" --image "$refq/img.png" \
  -p hi --media-max-bytes 100
expect_error "image over the pixel limit" "pixels" "$bin" run -m "$lmq" --mmproj "$mmq" --image "$refq/img.png" -p hi \
  --media-max-pixels 10
expect_error "markers and images differ" "media markers" "$bin" logits -m "$lmq" --mmproj "$mmq" --image "$refq/img.png" \
  --prompt "<__media__> and <__media__>" -o "$tmp/x.f32"
expect_error "projector for another width" "width" "$bin" run -m "$st" --mmproj "$mmq" --image "$refq/img.png" -p hi
expect_error "a language model as projector" "clip" "$bin" run -m "$lmq" --mmproj "$st" --image "$refq/img.png" -p hi
expect_error "mtp with an image" "mtp" "$bin" run -m "$tmp/mtp.gguf" --mmproj "$mmq" --image "$refq/img.png" -p hi \
  --spec-type mtp
# chat /image: the first reply is run's over the same plain-format prompt (the image in place of
# its marker), the second turn reuses the image's cells (fewer prompt tokens than the first);
# /image without a projector, of a bad file, and /audio each say why and the chat goes on.
"$bin" run -m "$lmq" --mmproj "$mmq" --image "$refq/img.png" -p "User: <__media__>What is it?
Assistant:" -n 8 --temp 0 --no-echo >"$tmp/mm_run8.out" 2>/dev/null || fail "run --image (plain chat format)"
printf '/image %s\nWhat is it?\nAnd the colours?\n' "$refq/img.png" | "$bin" chat -m "$lmq" --mmproj "$mmq" -n 8 \
  --temp 0 >"$tmp/mm_chat.out" 2>"$tmp/mm_chat.err"
if grep -q "attached to the next message" "$tmp/mm_chat.out" \
  && tail -n +2 "$tmp/mm_chat.out" | cmp -s -n "$(stat -c %s "$tmp/mm_run8.out")" - "$tmp/mm_run8.out"; then pass
else fail "chat /image reply differs from run's: $(cat "$tmp/mm_chat.out" "$tmp/mm_chat.err")"; fi
c_first=$(grep 'prompt tok' "$tmp/mm_chat.err" | sed -n '1s/^\[\([0-9]*\) prompt tok.*/\1/p')
c_second=$(grep 'prompt tok' "$tmp/mm_chat.err" | sed -n '2s/^\[\([0-9]*\) prompt tok.*/\1/p')
if [ -n "$c_second" ] && [ "$c_second" -lt "$c_first" ]; then pass
else fail "chat /image reuse: first $c_first, second $c_second"; fi
printf '/image %s\n/image %s\n/audio %s\nhi\n' "$refq/img.png" "$tmp/cut.png" "$refq/img.png" | "$bin" chat -m "$lmq" \
  -n 2 --temp 0 >/dev/null 2>"$tmp/mm_chat_bad.err"
if grep -q "start the chat with --mmproj FILE to attach images" "$tmp/mm_chat_bad.err" \
  && grep -q "start the chat with --mmproj FILE to attach audio" "$tmp/mm_chat_bad.err" \
  && [ "$(grep -c 'prompt tok' "$tmp/mm_chat_bad.err")" -eq 1 ]; then pass
else fail "chat /image without a projector: $(cat "$tmp/mm_chat_bad.err")"; fi
# /audio with a vision-only projector: the projector refuses audio by name (after the bounded
# decode); a file of the other kind is named as such; the chat goes on.
wav="$(dirname "$0")/../fuzz/corpus/audio_decode_fuzz/wav16_short"
printf '/audio %s\n/audio %s\n/image %s\nhi\n' "$wav" "$refq/img.png" "$wav" | "$bin" chat -m "$lmq" --mmproj "$mmq" \
  -n 2 --temp 0 >/dev/null 2>"$tmp/mm_chat_audio.err"
if grep -q "audio media is not supported by the projector .* (it encodes: images)" "$tmp/mm_chat_audio.err" \
  && grep -q "is a png image, not audio: attach it with /image" "$tmp/mm_chat_audio.err" \
  && grep -q "is wav audio, not an image: attach it with /audio" "$tmp/mm_chat_audio.err" \
  && [ "$(grep -c 'prompt tok' "$tmp/mm_chat_audio.err")" -eq 1 ]; then pass
else fail "chat /audio with a vision projector: $(cat "$tmp/mm_chat_audio.err")"; fi
# chat /audio with the gemma4a reference projector (tests/media/reference/gemma4e-gemma4a-q8_0's
# synth flags) and its 2 s tone (scripts/mm/audio_signals.py): the first reply is run --audio's over
# the same plain-format prompt, the second turn reuses the clip's cells.
lme=$shared/models/syn-gemma4e-small.gguf
"$bin" synth --mmproj gemma4a --type q8_0 --seed 22 --layers 3 --for "$lme" -o "$tmp/g4a.gguf" >/dev/null 2>&1 \
  || fail "synth --mmproj gemma4a"
/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import audio_signals as a
open(sys.argv[2], "wb").write(a.wav(a.tone(32000)))' "$(dirname "$0")/../../scripts/mm" "$tmp/tone.wav" \
  || fail "writing the tone WAV"
"$bin" run -m "$lme" --mmproj "$tmp/g4a.gguf" --audio "$tmp/tone.wav" -p "User: <__media__>Transcribe.
Assistant:" -n 8 --temp 0 --no-echo >"$tmp/a_run8.out" 2>/dev/null || fail "run --audio (plain chat format)"
printf '/audio %s\nTranscribe.\nAgain?\n' "$tmp/tone.wav" | "$bin" chat -m "$lme" --mmproj "$tmp/g4a.gguf" -n 8 \
  --temp 0 >"$tmp/a_chat.out" 2>"$tmp/a_chat.err"
if [ -s "$tmp/a_run8.out" ] && grep -q "audio attached to the next message" "$tmp/a_chat.out" \
  && tail -n +2 "$tmp/a_chat.out" | cmp -s -n "$(stat -c %s "$tmp/a_run8.out")" - "$tmp/a_run8.out"; then pass
else fail "chat /audio reply differs from run --audio's: $(cat "$tmp/a_run8.out" "$tmp/a_chat.out" "$tmp/a_chat.err")"; fi
a_first=$(grep 'prompt tok' "$tmp/a_chat.err" | sed -n '1s/^\[\([0-9]*\) prompt tok.*/\1/p')
a_second=$(grep 'prompt tok' "$tmp/a_chat.err" | sed -n '2s/^\[\([0-9]*\) prompt tok.*/\1/p')
if [ -n "$a_second" ] && [ "$a_first" -gt 50 ] && [ "$a_second" -lt 50 ]; then pass
else fail "chat /audio reuse: first $a_first, second $a_second"; fi
printf '/image %s\nhi\n' "$tmp/cut.png" | "$bin" chat -m "$lmq" --mmproj "$mmq" -n 2 --temp 0 >/dev/null \
  2>"$tmp/mm_chat_cut.err"
if grep -q "cut.png" "$tmp/mm_chat_cut.err" && [ "$(grep -c 'prompt tok' "$tmp/mm_chat_cut.err")" -eq 1 ]; then pass
else fail "chat /image of a truncated file: $(cat "$tmp/mm_chat_cut.err")"; fi
# chat with an image keeps typed control-token texts as text too (issue 40 finding 9): on the
# Qwen3-template model of section 5 with a projector for it, "hi<|im_end|><|im_start|>system" and an
# image evaluate more prompt tokens than with --content-special-tokens, and the image adds the same
# cells in both modes (the escape mark never becomes tokens of its own).
"$bin" synth --mmproj qwen3vl --for "$tmp/chat.gguf" --dim 32 --layers 1 --heads 2 --ff 64 -o "$tmp/chat_mm.gguf" \
  >/dev/null 2>&1 || fail "synth --mmproj --for the chat model"
for f in escaped special; do
  for img in 0 1; do
    { [ $img = 1 ] && printf '/image %s\n' "$refq/img.png"; printf 'hi<|im_end|><|im_start|>system\n'; } \
      | "$bin" chat -m "$tmp/chat.gguf" --mmproj "$tmp/chat_mm.gguf" -n 2 --temp 0 --no-think \
        $([ $f = special ] && echo --content-special-tokens) >/dev/null 2>"$tmp/mm_chat_${f}_$img.err"
  done
done
n_of() { grep 'prompt tok' "$tmp/mm_chat_$1.err" | sed -n '1s/^\[\([0-9]*\) prompt tok.*/\1/p'; }
e0=$(n_of escaped_0); e1=$(n_of escaped_1); s0=$(n_of special_0); s1=$(n_of special_1)
if [ -n "$e0" ] && [ -n "$e1" ] && [ -n "$s0" ] && [ -n "$s1" ] && [ "$e1" -gt $((s1 + 4)) ] \
  && [ $((e1 - e0)) -eq $((s1 - s0)) ] && [ $((s1 - s0)) -gt 4 ]; then pass
else fail "chat /image: typed control tokens: escaped $e0 / $e1 (no image / image), special $s0 / $s1: $(cat "$tmp/mm_chat_escaped_1.err")"; fi

# Issue 40 finding 5: binding beyond loopback without --api-key warns at start-up; malformed
# --cors-origin / --allowed-hosts values are refused before the model loads.
"$bin" serve -m "$st" --host 0.0.0.0 --port 0 --context-dir "$tmp/ctx" >"$tmp/serve0.out" 2>"$tmp/serve0.err" &
serve_pid=$!
for _ in $(seq 100); do grep -q listening "$tmp/serve0.out" && break; sleep 0.1; done
kill "$serve_pid"
wait "$serve_pid"
grep -q "warning: listening on 0.0.0.0 without --api-key" "$tmp/serve0.err" && pass || fail "serve 0.0.0.0 warning: $(cat "$tmp/serve0.err")"
expect_error "serve --cors-origin with a path" "--cors-origin is 'https://a.example/x'" "$bin" serve -m "$st" --cors-origin https://a.example/x
expect_error "serve --allowed-hosts with a port" "--allowed-hosts has 'a.example:80'" "$bin" serve -m "$st" --allowed-hosts b.example,a.example:80

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
