#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a command as if the machine had less RAM: in a fresh cgroup (v1 memory controller, or
# v2 memory.max) capped at CAP, page cache included, without swap. Prints the cgroup's peak
# memory when the command ends, and removes the cgroup. Needs root.
# Usage: scripts/run-capped.sh CAP COMMAND [ARGS...]      CAP like 8G, 4096M
# Exit status: the command's; 3 if cgroups are not usable here.
set -euo pipefail
cap=$1; shift
to_bytes() {
  local v=$1
  case "$v" in
    *G|*g) echo $(( ${v%[Gg]} * 1024 * 1024 * 1024 ));;
    *M|*m) echo $(( ${v%[Mm]} * 1024 * 1024 ));;
    *K|*k) echo $(( ${v%[Kk]} * 1024 ));;
    *) echo "$v";;
  esac
}
bytes=$(to_bytes "$cap")
if [ "$(id -u)" -ne 0 ]; then echo "run-capped: needs root for cgroups" >&2; exit 3; fi
name="sniper-capped-$$"
if [ -d /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/memory ]; then
  cg=/sys/fs/cgroup/memory/$name
  mkdir "$cg"
  echo "$bytes" > "$cg/memory.limit_in_bytes"
  [ -f "$cg/memory.memsw.limit_in_bytes" ] && echo "$bytes" > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
  peak_file=$cg/memory.max_usage_in_bytes
  procs=$cg/cgroup.procs
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
  cg=/sys/fs/cgroup/$name
  mkdir "$cg"
  echo "$bytes" > "$cg/memory.max"
  echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
  peak_file=$cg/memory.peak
  procs=$cg/cgroup.procs
else
  echo "run-capped: no writable cgroup memory controller" >&2
  exit 3
fi
cleanup() {
  # Move ourselves out, then remove the cgroup (it must be empty).
  if [ -d /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/memory/cgroup.procs ]; then
    echo $$ > /sys/fs/cgroup/memory/cgroup.procs 2>/dev/null || true
  else
    echo $$ > /sys/fs/cgroup/cgroup.procs 2>/dev/null || true
  fi
  rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT
status=0
# The command runs in a subshell that joins the cgroup first; page cache it causes is charged there.
( echo $BASHPID > "$procs"; exec "$@" ) || status=$?
peak=$(cat "$peak_file" 2>/dev/null || echo 0)
echo "run-capped: cap $bytes bytes ($cap), cgroup peak $peak bytes ($((peak / 1048576)) MiB)" >&2
exit $status
