// SPDX-License-Identifier: MIT
// Shared helpers of the JS tests: start `sniper serve` on port 0 and read the port from its ready
// line, stop it with SIGTERM and check it exits 0, make a small synthetic Qwen3 chat model with
// `sniper synth`, a minimal assertion helper and a temp dir that is removed at exit.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export const READY_RE = /^sniper serve: listening on http:\/\/([^/\s]+):(\d+)\/$/;

export function fail(msg) {
  console.error("FAIL: " + msg);
  process.exitCode = 1;
  throw new Error(msg);
}
export function check(cond, msg) {
  if (!cond) fail(msg);
}

// Parses argv: <sniper binary> <shared dir> [extra...]. Exits 2 with usage when missing.
export function parseArgs(usage) {
  const [bin, shared, ...rest] = process.argv.slice(2);
  if (!bin || !shared || !existsSync(bin)) {
    console.error(`usage: node ${usage}`);
    process.exit(2);
  }
  return { bin, shared, rest };
}

// A temp dir removed when the process exits.
export function tempDir(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Writes a small Qwen3 model (real tokenizer + chat template, random weights) and returns its path.
export function synthQwen3(bin, shared, dir, extra = [], name = "qwen3-synth.gguf") {
  const out = path.join(dir, name);
  execFileSync(bin, [
    "synth", "--arch", "qwen3", "--dim", "64", "--layers", "2", "--heads", "2", "--kv-heads", "1",
    "--head-dim", "32", "--ff", "128", "--type", "q8_0",
    "--vocab-from", path.join(shared, "tokenizer/ggml-vocab-qwen2.gguf"),
    "--chat-template", path.join(shared, "tokenizer/qwen3/tokenizer_config.json"),
    ...extra,
    "-o", out,
  ], { stdio: ["ignore", "ignore", "inherit"] });
  return out;
}

// Starts `sniper serve --port 0 ...args` and resolves {url, port, proc, stop()} once the ready
// line appears on stdout. Rejects if the process exits first or after `timeoutMs`.
export function startServer(bin, args, { timeoutMs = 60000 } = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, ["serve", "--port", "0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    let out = "";
    let ready = false;
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`sniper serve printed no ready line in ${timeoutMs} ms; stderr:\n${stderr}`));
    }, timeoutMs);
    proc.stderr.on("data", (d) => {
      stderr += d;
      if (stderr.length > 200000) stderr = stderr.slice(-100000);
    });
    const exited = new Promise((res) => proc.on("exit", (code, signal) => res({ code, signal })));
    proc.on("exit", (code, signal) => {
      if (!ready) {
        clearTimeout(timer);
        reject(new Error(`sniper serve exited (code ${code}, signal ${signal}) before it was ready; stderr:\n${stderr}`));
      }
    });
    proc.stdout.on("data", (d) => {
      if (ready) return;
      out += d;
      for (const line of out.split("\n")) {
        const m = line.match(READY_RE);
        if (!m) continue;
        ready = true;
        clearTimeout(timer);
        const port = Number(m[2]);
        const url = `http://127.0.0.1:${port}`;
        // Stops the server with SIGTERM; resolves its exit code (SIGKILL after 15 s -> null).
        const stop = async () => {
          if (proc.exitCode !== null || proc.signalCode !== null) return (await exited).code;
          proc.kill("SIGTERM");
          const killer = setTimeout(() => proc.kill("SIGKILL"), 15000);
          const { code } = await exited;
          clearTimeout(killer);
          return code;
        };
        process.on("exit", () => { if (proc.exitCode === null) proc.kill("SIGKILL"); });
        resolve({ url, port, proc, stop, stderr: () => stderr });
        return;
      }
    });
  });
}

// Parses Prometheus text into a lookup: get(name, labels?) -> first matching value or undefined.
export function parseMetrics(text) {
  const samples = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || "").matchAll(/(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  const matches = (s, name, labels) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    samples,
    get: (name, labels = {}) => samples.find((s) => matches(s, name, labels))?.value,
    sum: (name, labels = {}) => samples.filter((s) => matches(s, name, labels)).reduce((a, s) => a + s.value, 0),
  };
}

export async function fetchMetrics(url, headers = {}) {
  const res = await fetch(url + "/metrics", { headers });
  check(res.ok, `GET /metrics returned ${res.status}`);
  return parseMetrics(await res.text());
}
