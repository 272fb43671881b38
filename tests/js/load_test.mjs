// SPDX-License-Identifier: MIT
// Load test of `sniper serve` with the official openai client: 8 concurrent streaming clients send
// 50 completions each (max_tokens 16, stories260K, --slots 4). Every request must finish without
// error with at least one token; the server's RSS (from /metrics) must stay flat: the last sample
// at most 10% + 8 MiB above the sample taken after the first 50 requests; the request counters in
// /metrics must account for every request. Prints p50/p99 time to first token and aggregate
// tokens/s on a `figures:` line.
// usage: node load_test.mjs <sniper binary> <shared dir>
import OpenAI from "openai";
import path from "node:path";
import { check, fetchMetrics, parseArgs, startServer } from "./lib/server.mjs";

const { bin, shared } = parseArgs("load_test.mjs <sniper binary> <shared dir>");
const kClients = 8, kRequestsPerClient = 50, kMaxTokens = 16, kSlots = 4;
const prompts = ["Once upon a time", "The little dog", "Lily and Ben went to the park", "One day, a bird",
  "Tom had a red ball", "The sun was", "Mom said", "In the garden there was"];

const server = await startServer(bin, ["-m", path.join(shared, "models/stories260K.gguf"), "--slots", String(kSlots)]);
let failed = false;
try {
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60000 });
  const ttfts = [];
  let tokens = 0, done = 0, rssAfterFirst = null, firstSampleWaiter = null;
  const start = performance.now();

  async function oneRequest(clientIdx, reqIdx) {
    const t0 = performance.now();
    const stream = await client.completions.create({
      model: "stories260K", prompt: prompts[(clientIdx + reqIdx) % prompts.length], max_tokens: kMaxTokens,
      temperature: 0.8, stream: true, stream_options: { include_usage: true },
    });
    let first = 0, pieces = 0, usage = null, finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices[0];
      if (!c) continue;
      if (c.text) { pieces++; if (!first) first = performance.now(); }
      if (c.finish_reason) finish = c.finish_reason;
    }
    check(first > 0, `client ${clientIdx} request ${reqIdx}: no text streamed`);
    check(finish === "length" || finish === "stop", `client ${clientIdx} request ${reqIdx}: finish_reason ${finish}`);
    ttfts.push(first - t0);
    const n = usage ? usage.completion_tokens : pieces;
    check(n >= 1 && n <= kMaxTokens, `client ${clientIdx} request ${reqIdx}: ${n} tokens`);
    tokens += n;
    if (++done === kRequestsPerClient) {
      firstSampleWaiter = fetchMetrics(server.url).then((m) => { rssAfterFirst = m.get("sniper_rss_bytes"); });
    }
  }

  await Promise.all(Array.from({ length: kClients }, async (_, c) => {
    for (let r = 0; r < kRequestsPerClient; r++) await oneRequest(c, r);
  }));
  const wallS = (performance.now() - start) / 1000;
  await firstSampleWaiter;
  const total = kClients * kRequestsPerClient;
  // A stream's outcome is counted after its `[DONE]` is written, so the last client can read the
  // end of its stream a moment before the counter moves: wait up to 5 s for the counters (a lost
  // or double count still fails below). The slots are freed before any response ends.
  let m = await fetchMetrics(server.url);
  check(m.get("sniper_slots_busy") === 0 && m.get("sniper_requests_queued") === 0, "server not idle after the load");
  for (let i = 0; i < 50 && m.sum("sniper_requests_total", {}) < total; i++) {
    await new Promise((r) => setTimeout(r, 100));
    m = await fetchMetrics(server.url);
  }
  const rssEnd = m.get("sniper_rss_bytes");

  check(done === total, `${done} of ${total} requests finished`);
  check(rssAfterFirst > 0 && rssEnd > 0, `RSS samples ${rssAfterFirst} ${rssEnd}`);
  const limit = rssAfterFirst * 1.10 + 8 * 1024 * 1024;
  check(rssEnd <= limit, `RSS grew from ${rssAfterFirst} to ${rssEnd} bytes (limit ${Math.round(limit)})`);
  const ok = m.get("sniper_requests_total", { endpoint: "completions", status: "ok" });
  const errors = m.sum("sniper_requests_total", { status: "error" });
  check(ok === total, `sniper_requests_total{endpoint="completions",status="ok"} is ${ok}, want ${total}`);
  check(errors === 0, `${errors} requests counted as errors`);
  check(m.get("sniper_generated_tokens_total") === tokens,
    `sniper_generated_tokens_total ${m.get("sniper_generated_tokens_total")} but clients received ${tokens}`);

  ttfts.sort((x, y) => x - y);
  const pct = (p) => ttfts[Math.min(ttfts.length - 1, Math.floor(p * ttfts.length))];
  const mib = (b) => (b / 1048576).toFixed(1);
  console.log(`figures: requests=${total} clients=${kClients} slots=${kSlots} max_tokens=${kMaxTokens} ` +
    `wall_s=${wallS.toFixed(2)} ttft_p50_ms=${pct(0.5).toFixed(1)} ttft_p99_ms=${pct(0.99).toFixed(1)} ` +
    `tokens=${tokens} tok_per_s=${(tokens / wallS).toFixed(1)} req_per_s=${(total / wallS).toFixed(1)} ` +
    `rss_after_50_mib=${mib(rssAfterFirst)} rss_end_mib=${mib(rssEnd)} peak_rss_mib=${mib(m.get("sniper_peak_rss_bytes"))}`);
  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code} after SIGTERM`);
  console.log("PASS load_test");
} catch (e) {
  failed = true;
  console.error("FAIL:", e && e.stack ? e.stack : e);
  console.error("--- server stderr (tail) ---\n" + server.stderr().slice(-4000));
} finally {
  await server.stop();
  if (failed) process.exitCode = 1;
}
