#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Drives `sniper chat` and `sniper run` in a real terminal (tmux) and checks what a user sees, on a
# synthetic Qwen3 model with the real Qwen3 tokenizer and chat template (greedy, so deterministic):
#   1. `sniper chat OWNER/NAME:QUANT` finds the model in the store; a one-line banner;
#   2. line editing: Left arrow and an insertion edit the line (no ^[[D reaches the chat), Up
#      recalls history; Tab completes a command;
#   3. /help, /set and an unknown command are answered by the chat, never sent to the model;
#   4. a multi-line message (a trailing backslash) shows the continuation prompt;
#   5. Ctrl-C during a long reply stops it, the prompt comes back, and the next message continues
#      the same conversation (its prompt reuses the evaluated prefix); /save keeps it;
#   6. Ctrl-C at an empty prompt says how to leave, a second one leaves with status 0;
#   7. a second chat: /load brings the conversation back, Ctrl-D leaves with status 0 and the
#      history file holds what was typed;
#   8. `sniper run`: Ctrl-C during generation prints the figures so far (exit 130).
# Synchronisation polls tmux capture-pane for expected text (no fixed sleeps).
# usage: chat_tmux_test.sh SNIPER_BIN SHARED_DIR
set -euo pipefail

SNIPER=$(realpath "$1")
SHARED=$(realpath "$2")
command -v tmux > /dev/null || { echo "tmux not installed"; exit 1; }

WORK=$(mktemp -d /tmp/sniper-chat-tmux-XXXXXX)
SESSION=chat
RUN=0
TMUX_CMD=(tmux -L "sniper-chat-test-$$-$RUN" -f /dev/null)

cleanup() {
  "${TMUX_CMD[@]}" kill-server 2> /dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

screen() { "${TMUX_CMD[@]}" capture-pane -p -t "$SESSION" -S -400; }

fail() {
  echo "FAIL: $*"
  echo "----- screen -----"
  screen 2> /dev/null || true
  exit 1
}

# wait_for REGEX [TIMEOUT_S]: polls the pane (with scrollback) until grep -E matches.
wait_for() {
  local pattern=$1 timeout=${2:-30}
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    if screen | grep -Eq -- "$pattern"; then return 0; fi
    sleep 0.05
  done
  fail "timed out waiting for /$pattern/"
}

count() { screen | grep -Ec -- "$1" || true; }

# wait_output_after REGEX N [TIMEOUT_S]: polls until at least N characters follow the last line
# matching REGEX (the streamed reply grows).
wait_output_after() {
  local pattern=$1 n=$2 timeout=${3:-30}
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    local after
    after=$(screen | awk -v re="$pattern" '$0 ~ re { text = ""; found = 1; next } found { text = text $0 } END { print text }')
    if ((${#after} >= n)); then return 0; fi
    sleep 0.05
  done
  fail "timed out waiting for $n characters after /$pattern/"
}
send() { "${TMUX_CMD[@]}" send-keys -t "$SESSION" "$@"; }

# A model in a store, as `sniper pull` leaves it.
STORE="$WORK/home/.cache/sniper"
mkdir -p "$STORE/models/test-org/Tiny-Chat-GGUF"
"$SNIPER" synth --arch qwen3 --dim 128 --layers 2 --heads 2 --kv-heads 1 --head-dim 64 --ff 256 --type q8_0 \
  --vocab-from "$SHARED/tokenizer/ggml-vocab-qwen2.gguf" --chat-template "$SHARED/tokenizer/qwen3/tokenizer_config.json" \
  -o "$STORE/models/test-org/Tiny-Chat-GGUF/Tiny-Chat-Q8_0.gguf" > /dev/null

# Each program runs in a shell that reports its exit status and keeps the pane open afterwards;
# `trap true INT` keeps that shell alive when Ctrl-C reaches the whole foreground group.
start() {
  cat > "$WORK/run.sh" << EOF
cd '$WORK' || exit 1
trap true INT
env HOME='$WORK/home' XDG_STATE_HOME='$WORK/state' XDG_CACHE_HOME='$WORK/cache' TERM=xterm-256color $*
echo EXITED=\$?
sleep 600
EOF
  if [[ -n "${SNIPER_TMUX_DEBUG:-}" ]]; then screen 2> /dev/null || true; fi
  # Each program gets a tmux server of its own: a new session on a server that is still shutting
  # down fails with "server exited unexpectedly".
  "${TMUX_CMD[@]}" kill-server 2> /dev/null || true
  RUN=$((RUN + 1))
  TMUX_CMD=(tmux -L "sniper-chat-test-$$-$RUN" -f /dev/null)
  "${TMUX_CMD[@]}" new-session -d -s "$SESSION" -x 160 -y 50 "sh '$WORK/run.sh'"
}

# 1. A store name, the banner.
start "'$SNIPER' chat test-org/Tiny-Chat-GGUF:Q8_0 --temp 0 --no-think --ctx 2048 -n 16"
wait_for '^sniper chat: .*context 2048 tokens\. /help for commands, Ctrl-D to quit\.'
wait_for '^> ?$'

# 2. Line editing: "/system abd", Left, "c" gives "/system abcd"; Up recalls it; Tab completes.
send "/system abd" Left "c" Enter
wait_for '^system = "abcd"$'
screen | grep -q '\^\[\[D' && fail "an escape sequence reached the chat"
send Up
wait_for '^> /system abcd$'
send C-u "/he" Tab
wait_for '^> /help ?$'
send Enter
wait_for '^  /save NAME'

# 3. Commands are the chat's: /set, an unknown command; none reaches the model.
send "/set temp 0.7" Enter
wait_for '^temp = 0\.7$'
send "/set temp 0" Enter
wait_for '^temp = 0 \(greedy\)$'
send "/sett" Enter
wait_for 'unknown command /sett; did you mean /set\?'
[[ $(count 'prompt tok at') -eq 0 ]] || fail "a command was sent to the model"

# 4. A message over two lines (trailing backslash), answered once.
send 'Hello \' Enter
wait_for '^\.\.\. ?$'
send "there" Enter
wait_for '^\[[0-9]+ prompt tok at .* tok/s, 16 tok at'
first_prompt=$(screen | sed -n 's/^\[\([0-9]*\) prompt tok at.*/\1/p' | head -1)

# 5. Ctrl-C during a long reply; the next turn continues the conversation.
send "/set n-predict -1" Enter
wait_for '^n-predict = -1'
send "Tell me a long story" Enter
wait_output_after '^> Tell me a long story$' 60
send C-c
wait_for '^\[stopped; the reply so far stays in the conversation\]$' 30
wait_for '^> ?$'
send "/set n-predict 4" Enter
wait_for '^n-predict = 4$'
send "And then?" Enter
wait_for '^\[[0-9]+ prompt tok at .* tok/s, 4 tok at'
third_prompt=$(screen | sed -n 's/^\[\([0-9]*\) prompt tok at.*, 4 tok at.*/\1/p' | tail -1)
# The tokens the stopped reply generated (how many depends on when Ctrl-C landed).
second_gen=$(screen | sed -n 's/^\[[0-9]* prompt tok at .* tok\/s, \([0-9]*\) tok at.*/\1/p' | sed -n 2p)
send "/save story" Enter
wait_for "^saved as 'story' \([0-9]+ tokens\)"
n_total=$(screen | sed -n "s/^saved as 'story' (\([0-9]*\) tokens).*/\1/p" | tail -1)
# The third turn evaluates its own message and at most the reply before it (the template renders a
# reply in the history without the empty think block it was generated after), never the whole
# conversation again: the first turn's prompt stays evaluated.
[[ -n "$third_prompt" && -n "$second_gen" && -n "$n_total" ]] || fail "no token counts on the screen"
((third_prompt <= second_gen + 24)) || fail "the third turn evaluated $third_prompt tokens (the stopped reply had $second_gen)"
((third_prompt + first_prompt <= n_total)) || fail "the third turn evaluated $third_prompt of $n_total tokens: the first turn's prompt ($first_prompt) was evaluated again"

# 6. Ctrl-C at an empty prompt tells how to leave; the second one leaves.
send C-c
wait_for '\(Ctrl-C again or Ctrl-D to quit\)'
send C-c
wait_for '^EXITED=0$' 10

# 7. A second chat: /load, then Ctrl-D.
start "'$SNIPER' chat test-org/Tiny-Chat-GGUF:Q8_0 --temp 0 --no-think --ctx 2048 -n 4"
wait_for '^> ?$'
send "/load" Enter
wait_for '^saved conversations: story$'
send "/load story" Enter
wait_for "^loaded 'story': 6 messages, [0-9]+ tokens in context$"
send "/system" Enter
wait_for '^system prompt: abcd$'
send "One more" Enter
wait_for '^\[[0-9]+ prompt tok at .* tok/s, 4 tok at'
loaded_prompt=$(screen | sed -n 's/^\[\([0-9]*\) prompt tok at.*/\1/p' | tail -1)
[[ "$loaded_prompt" -lt 40 ]] || fail "after /load the turn evaluated $loaded_prompt tokens (the context was not restored)"
send C-d
wait_for '^EXITED=0$' 10
grep -Eq "Tell(\\\\040| )me" "$WORK/state/sniper/chat_history" || fail "no history file: $(cat "$WORK/state/sniper/chat_history" 2>&1)"

# 8. run: Ctrl-C prints the figures so far.
start "'$SNIPER' run test-org/Tiny-Chat-GGUF:Q8_0 -p 'Once upon a time' -n -1 --ignore-eos --ctx 2048 --temp 0"
wait_output_after '^EXITED|Once upon a time' 60
send C-c
wait_for '^interrupted: the figures so far$' 30
wait_for 'generation: [0-9]+ tok, [0-9.]+ tok/s'
wait_for '^EXITED=130$' 10
[[ "$first_prompt" -gt 0 ]] || fail "no first turn figures"
if [[ -n "${SNIPER_TMUX_DEBUG:-}" ]]; then screen; fi
echo "PASS"
