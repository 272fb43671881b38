// SPDX-License-Identifier: MIT
// Soak test of `sniper serve` (issue 26): 16 clients for a bounded time against stories260K
// (--slots 4), each looping over a seeded mix of valid streaming and non-streaming completions
// and chats, bad inputs (malformed JSON, wrong types, 100,000-deep nesting), streams abandoned
// mid-way, slow readers on raw sockets and half-open connections left to the header timeout.
// A warm-up of the same mix comes first; then the server is left idle and its RSS and open file
// descriptors (/proc/PID) are the baseline. After the soak and the same idle wait:
// - the server is alive and every client outcome is expected: valid requests completed (stop or
//   length, [DONE] for streams) or were cancelled by their client, bad inputs got 400/408; any
//   other outcome (5xx, reset, missing [DONE], wrong status) fails;
// - the server's request counters account for every request (ok + cancelled = valid + abandoned,
//   error = bad inputs);
// - RSS is within 10% of the post-warm-up baseline and open FDs are back to it.
// Prints `figures:` with requests, errors by class, TTFT p50/p99 and RSS/FD before/after.
// usage: node soak_test.mjs <sniper binary> <shared dir> [--seconds N (default 15)] [--seed S]
//   (CI runs 15 s; run e.g. --seconds 600 by hand for a long soak.)
import net from "node:net";
import path from "node:path";
import { readFileSync, readdirSync } from "node:fs";
import { check, fetchMetrics, parseArgs, startServer } from "./lib/server.mjs";

const { bin, shared, rest } = parseArgs("soak_test.mjs <sniper binary> <shared dir> [--seconds N] [--seed S]");
const opt = (name, dflt) => {
  const i = rest.indexOf(name);
  return i >= 0 && rest[i + 1] !== undefined ? Number(rest[i + 1]) : dflt;
};
const kSoakSeconds = opt("--seconds", 15), kWarmupSeconds = Math.min(5, Math.max(2, kSoakSeconds / 5));
const kClients = 16, kSlots = 4, kHeaderTimeoutS = 2;
let seed = opt("--seed", 26) >>> 0;
function rand() {  // xorshift32: the mix is the same on every run with the same seed
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const server = await startServer(bin, ["-m", path.join(shared, "models/stories260K.gguf"), "--slots", String(kSlots),
  "--ctx", "256", "--header-timeout", String(kHeaderTimeoutS), "--timeout", "10"]);
const pid = server.proc.pid;
const rssBytes = () => Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/)[1]) * 1024;
const openFds = () => readdirSync(`/proc/${pid}/fd`).length;

const prompts = ["Once upon a time", "The little dog", "Lily and Ben went to the park", "One day, a bird", "Tom had a red ball"];
const outcomes = {};   // class -> count
const ttfts = [];
let valid = 0, abandoned = 0, bad = 0;
const count = (cls) => { outcomes[cls] = (outcomes[cls] || 0) + 1; };
const unexpected = (what) => { count("unexpected"); console.error("unexpected: " + what); };

function body(stream) {
  const p = prompts[Math.floor(rand() * prompts.length)];
  const max_tokens = 4 + Math.floor(rand() * 28);
  return rand() < 0.5
    ? { path: "/v1/completions", json: { prompt: p, max_tokens, temperature: 0.8, stream } }
    : { path: "/v1/chat/completions", json: { messages: [{ role: "user", content: p }], max_tokens, stream } };
}

// Reads an SSE response; returns { done, finish, first } (first: ms to the first text).
async function readStream(res, t0, abortAfterFirst, controller) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "", done = false, finish = null, first = 0;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      if (!ev.startsWith("data: ")) throw new Error("bad SSE event: " + ev.slice(0, 80));
      const data = ev.slice(6);
      if (data === "[DONE]") { done = true; continue; }
      const j = JSON.parse(data);
      if (j.error) throw new Error("error event: " + data.slice(0, 200));
      const c = j.choices && j.choices[0];
      if (!c) continue;
      const text = c.text ?? (c.delta && c.delta.content) ?? "";
      if (text && !first) {
        first = performance.now() - t0;
        if (abortAfterFirst) { controller.abort(); return { done, finish, first, aborted: true }; }
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { done, finish, first, aborted: false };
}

async function validRequest(stream, abandon) {
  const { path: p, json } = body(stream);
  const controller = new AbortController();
  const t0 = performance.now();
  if (abandon) abandoned++; else valid++;
  try {
    const res = await fetch(server.url + p, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(json), signal: controller.signal });
    if (res.status !== 200) return unexpected(`${p} status ${res.status}: ${(await res.text()).slice(0, 200)}`);
    if (!stream) {
      const j = await res.json();
      const f = j.choices[0].finish_reason;
      return f === "stop" || f === "length" ? count("ok") : unexpected(`finish_reason ${f}`);
    }
    const r = await readStream(res, t0, abandon, controller);
    if (r.aborted) return count("cancelled_by_client");
    if (!r.done || !(r.finish === "stop" || r.finish === "length")) return unexpected(`stream ended done=${r.done} finish=${r.finish}`);
    if (r.first) ttfts.push(r.first);
    count(abandon ? "finished_before_abandon" : "ok");
  } catch (e) {
    if (abandon && e.name === "AbortError") return count("cancelled_by_client");
    unexpected(`${p}: ${e.message}`);
  }
}

const deep = '{"prompt":"hi","x":' + '{"a":'.repeat(100000) + "1" + "}".repeat(100000) + "}";
const badBodies = ["{not json", '{"prompt":5}', '{"prompt":"a","temperature":"hot"}', '{"messages":[]}',
  '{"prompt":"a","max_tokens":-1}', deep, '{"prompt":' + "[".repeat(100000) + "]".repeat(100000) + "}"];
async function badRequest() {
  bad++;
  const b = badBodies[Math.floor(rand() * badBodies.length)];
  const p = b.includes("messages") ? "/v1/chat/completions" : "/v1/completions";
  try {
    const res = await fetch(server.url + p, { method: "POST", headers: { "Content-Type": "application/json" }, body: b });
    const j = await res.json();
    res.status === 400 && j.error && j.error.message ? count("bad_input_400") : unexpected(`bad input got ${res.status}`);
  } catch (e) {
    unexpected(`bad input: ${e.message}`);
  }
}

// A raw-socket streaming request read slowly (paused between reads); must end with [DONE].
function slowReader() {
  valid++;
  return new Promise((resolve) => {
    const { path: p, json } = body(true);
    const payload = JSON.stringify(json);
    const sock = net.connect(server.port, "127.0.0.1");
    let got = "";
    const finish = (ok, why) => { sock.destroy(); ok ? count("ok_slow_reader") : unexpected("slow reader: " + why); resolve(); };
    const timer = setTimeout(() => finish(false, "no [DONE] in 30 s"), 30000);
    sock.on("connect", () => sock.write(`POST ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Connection: close\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`));
    sock.on("data", (d) => {
      got += d;
      sock.pause();
      setTimeout(() => sock.resume(), 20 + Math.floor(rand() * 60));
    });
    sock.on("error", (e) => { clearTimeout(timer); finish(false, e.message); });
    sock.on("close", () => {
      clearTimeout(timer);
      if (got.startsWith("HTTP/1.1 200") && got.includes("data: [DONE]")) { count("ok_slow_reader"); resolve(); }
      else finish(false, got.slice(0, 120));
    });
  });
}

// Half a request head, then nothing: the server must answer 408 after --header-timeout.
function halfOpen() {
  return new Promise((resolve) => {
    const sock = net.connect(server.port, "127.0.0.1");
    let got = "";
    const timer = setTimeout(() => { sock.destroy(); unexpected("half-open: no 408 in time"); resolve(); }, (kHeaderTimeoutS + 5) * 1000);
    sock.on("connect", () => sock.write("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    sock.on("data", (d) => { got += d; });
    sock.on("error", () => {});
    sock.on("close", () => {
      clearTimeout(timer);
      got.startsWith("HTTP/1.1 408") ? count("half_open_408") : unexpected("half-open got " + JSON.stringify(got.slice(0, 60)));
      resolve();
    });
  });
}

async function client(untilMs) {
  while (performance.now() < untilMs) {
    const r = rand();
    if (r < 0.30) await validRequest(true, false);
    else if (r < 0.50) await validRequest(false, false);
    else if (r < 0.65) await badRequest();
    else if (r < 0.78) await validRequest(true, true);
    else if (r < 0.92) await slowReader();
    else await halfOpen();
  }
}

async function waitIdle() {
  // Idle: no request in flight, the keep-alive connections of fetch closed by the server (5 s).
  for (let i = 0; i < 100; i++) {
    const m = await fetchMetrics(server.url);
    if (m.get("sniper_slots_busy") === 0 && m.get("sniper_requests_queued") === 0 && m.get("sniper_http_connections_open") <= 1) break;
    await sleep(100);
  }
  await sleep(6000);
}

let failed = false;
try {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: kClients }, () => client(t0 + kWarmupSeconds * 1000)));
  await waitIdle();
  const rssBase = rssBytes(), fdBase = openFds();
  const m0 = await fetchMetrics(server.url);
  const base = { ok: m0.sum("sniper_requests_total", { status: "ok" }), cancelled: m0.sum("sniper_requests_total", { status: "cancelled" }),
    error: m0.sum("sniper_requests_total", { status: "error" }) };
  for (const k of Object.keys(outcomes)) delete outcomes[k];
  valid = abandoned = bad = 0;
  ttfts.length = 0;

  const t1 = performance.now();
  await Promise.all(Array.from({ length: kClients }, () => client(t1 + kSoakSeconds * 1000)));
  const soakS = (performance.now() - t1) / 1000;
  await waitIdle();
  check(server.proc.exitCode === null && server.proc.signalCode === null, "the server died during the soak");
  const rssEnd = rssBytes();
  let fdEnd = openFds();
  for (let i = 0; i < 50 && fdEnd > fdBase; i++) { await sleep(100); fdEnd = openFds(); }
  const m = await fetchMetrics(server.url);
  const ok = m.sum("sniper_requests_total", { status: "ok" }) - base.ok;
  const cancelled = m.sum("sniper_requests_total", { status: "cancelled" }) - base.cancelled;
  const errors = m.sum("sniper_requests_total", { status: "error" }) - base.error;

  ttfts.sort((x, y) => x - y);
  const pct = (p) => (ttfts.length ? ttfts[Math.min(ttfts.length - 1, Math.floor(p * ttfts.length))] : NaN);
  const mib = (b) => (b / 1048576).toFixed(1);
  const classes = Object.entries(outcomes).sort().map(([k, v]) => `${k}=${v}`).join(" ");
  console.log(`figures: seconds=${soakS.toFixed(1)} clients=${kClients} slots=${kSlots} requests=${valid + abandoned + bad} ` +
    `valid=${valid} abandoned=${abandoned} bad=${bad} ${classes} server_ok=${ok} server_cancelled=${cancelled} ` +
    `server_error=${errors} ttft_p50_ms=${pct(0.5).toFixed(1)} ttft_p99_ms=${pct(0.99).toFixed(1)} ` +
    `rss_base_mib=${mib(rssBase)} rss_end_mib=${mib(rssEnd)} fd_base=${fdBase} fd_end=${fdEnd}`);

  check(!outcomes.unexpected, `${outcomes.unexpected} unexpected outcomes (see above)`);
  check(valid > 0 && bad > 0 && abandoned > 0, "the mix ran every kind of request");
  check(ok + cancelled === valid + abandoned, `server counted ok ${ok} + cancelled ${cancelled}, clients sent ${valid} valid + ${abandoned} abandoned`);
  check(errors === bad, `server counted ${errors} errors for ${bad} bad inputs`);
  check(rssEnd <= rssBase * 1.10, `RSS grew from ${rssBase} to ${rssEnd} bytes (limit +10%)`);
  check(fdEnd <= fdBase, `open FDs ${fdEnd}, baseline ${fdBase}`);
  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code} after SIGTERM`);
  console.log("PASS soak_test");
} catch (e) {
  failed = true;
  console.error("FAIL:", e && e.stack ? e.stack : e);
  console.error("--- server stderr (tail) ---\n" + server.stderr().slice(-4000));
} finally {
  await server.stop();
  if (failed) process.exitCode = 1;
}
