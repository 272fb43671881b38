#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Drives the interactive `sniper agent` REPL inside tmux against the scripted OpenAI server (which
# also serves saved search-result and article pages) and checks what a user sees:
#   1. a routed web search (the router answers "search") with citations and the source URLs,
#   2. a shell command that needs confirmation, answered "y", which runs (marker file appears),
#   3. Tab completion of a slash command prefix and /stats,
#   4. Ctrl-C during a slowly streamed reply stops it, the prompt returns and the agent lives on,
#   5. /loop wakes the idle prompt for its iterations until /stop,
#   6. /quit exits with status 0.
# Synchronisation is by polling tmux capture-pane for expected text (never fixed sleeps).
# usage: repl_tmux_test.sh SNIPER_BIN SCRIPTED_SERVER_BIN DATA_DIR
set -euo pipefail

SNIPER=$(realpath "$1")
SCRIPTED=$(realpath "$2")
DATA=$(realpath "$3")
command -v tmux > /dev/null || { echo "tmux not installed"; exit 1; }

WORK=$(mktemp -d /tmp/sniper-agent-tmux-XXXXXX)
SOCKET="sniper-agent-test-$$"
SESSION=agent
SERVER_PID=""
TMUX_CMD=(tmux -L "$SOCKET" -f /dev/null)

cleanup() {
  "${TMUX_CMD[@]}" kill-server 2> /dev/null || true
  if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2> /dev/null || true; wait "$SERVER_PID" 2> /dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  echo "----- screen -----"
  "${TMUX_CMD[@]}" capture-pane -p -t "$SESSION" -S -300 2> /dev/null || true
  echo "----- server -----"
  cat "$WORK/server.out" 2> /dev/null || true
  exit 1
}

screen() { "${TMUX_CMD[@]}" capture-pane -p -t "$SESSION" -S -300; }

# wait_for REGEX [TIMEOUT_S]: polls the pane (with scrollback) until grep -E matches.
wait_for() {
  local pattern=$1 timeout=${2:-20}
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    if screen | grep -Eq -- "$pattern"; then return 0; fi
    sleep 0.05
  done
  fail "timed out waiting for /$pattern/"
}

# count REGEX: how many pane lines match.
count() { screen | grep -Ec -- "$1" || true; }

send() { "${TMUX_CMD[@]}" send-keys -t "$SESSION" "$@"; }

# The scripted server prints its URL when ready.
"$SCRIPTED" --data-dir "$DATA" --slow-ms 100 > "$WORK/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 200); do
  grep -q "listening on" "$WORK/server.out" && break
  kill -0 "$SERVER_PID" 2> /dev/null || fail "scripted server exited"
  sleep 0.05
done
URL=$(sed -n 's|.*listening on \(http://[^ ]*\)/$|\1|p' "$WORK/server.out")
[[ -n "$URL" ]] || fail "no URL from the scripted server"

# The agent runs in a shell that reports its exit status and keeps the pane open afterwards.
# `trap true INT` keeps that shell alive when Ctrl-C reaches the whole foreground group.
cat > "$WORK/run_agent.sh" << EOF
cd '$WORK' || exit 1
trap true INT
env HOME='$WORK' XDG_STATE_HOME='$WORK/state' XDG_CONFIG_HOME='$WORK/config' TERM=xterm-256color \\
  '$SNIPER' agent --url '$URL' --search-url '$URL/html/'
echo AGENT_EXITED=\$?
sleep 600
EOF
"${TMUX_CMD[@]}" new-session -d -s "$SESSION" -x 120 -y 40 "sh '$WORK/run_agent.sh'"
wait_for '^sniper> ?$'

# 1. Routed web search with citations.
send "what is the latest sniper news" Enter
wait_for '^Sources:' 30
screen | grep -q -- '-> search' || fail "the request was not routed to search"
screen | grep -q 'searching: sniper engine' || fail "the model's search query was not used"
screen | grep -Eq 'Sniper is a CPU LLM engine \[1\] that streams experts from SSD \[2\]\.' || fail "answer with citations missing"
screen | grep -Fq "[1] Sniper: a CPU LLM engine — overview - $URL/article/sniper" || fail "source [1] not listed"
screen | grep -Fq "[2] Streaming experts from SSD | Engine notes - $URL/article/experts" || fail "source [2] not listed"
wait_for '^sniper> ?$'

# 2. A shell command that is not read-only asks first; "y" runs it.
send "make a marker file" Enter
wait_for 'Run `touch marker\.txt`\? \[y/N\]'
[[ ! -e "$WORK/marker.txt" ]] || fail "the command ran before it was confirmed"
send "y" Enter
wait_for '\[exit 0 '
[[ -e "$WORK/marker.txt" ]] || fail "the confirmed command did not run"

# 3. Tab completes a slash command prefix; /stats shows the session.
wait_for '^sniper> ?$'
send "/sta" Tab
wait_for '^sniper> /stats ?$'
send Enter
wait_for '^answers [0-9]+ · routed chat 0, search 1, shell 1'

# 4. Ctrl-C during a long, slowly streamed reply stops it and the prompt comes back.
send "tell me a long story" Enter
wait_for 'word5 ' 20
send C-c
wait_for '\[stopped\]' 10
wait_for '^sniper> ?$' 10
screen | grep -q 'THE END' && fail "the reply was not stopped"
send "/stats" Enter
wait_for 'stopped 1' 10

# 5. /loop wakes the idle prompt: two iterations answer without a key pressed, /stop ends it.
before=$(count 'Hello from the scripted server\.')
send "/loop 1s say hello" Enter
wait_for 'looping every 1s' 10
deadline=$((SECONDS + 20))
while (($(count 'Hello from the scripted server\.') < before + 2)); do
  ((SECONDS < deadline)) || fail "the idle prompt did not wake for two /loop iterations"
  sleep 0.05
done
wait_for '^sniper> ?$' 10
send "/stop" Enter
wait_for '^loop stopped' 10

# 6. /quit leaves with status 0.
send "/quit" Enter
wait_for 'AGENT_EXITED=0' 10
[[ -s "$WORK/state/sniper/agent_history" ]] || fail "no history file written"
if [[ -n "${SNIPER_TMUX_DEBUG:-}" ]]; then screen; fi
echo "PASS"
