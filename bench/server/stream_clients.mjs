// SPDX-License-Identifier: MIT
// N concurrent streaming clients against an OpenAI-compatible server (sniper serve or
// llama-server): each sends POST /v1/completions with stream: true, greedy, ignore_eos, and
// records when each token's event arrives. Prints one JSON line:
//   {clients, tokens, wall_s, agg_tok_s, ttft_ms: {p50, p99}, itl_ms: {p50, p99, max}}
// With --long N: the clients start first; once each has its first token, one more request with a
// prompt of about N tokens arrives; `long` then reports its time to first token and the other
// clients' largest gap between tokens while it was being evaluated (a stall shows here).
// usage: node stream_clients.mjs URL --clients N [--tokens T] [--prompt-words W] [--long N]
const args = process.argv.slice(2);
const url = args[0].replace(/\/$/, "");
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const clients = opt("--clients", 1);
const tokens = opt("--tokens", 64);
const promptWords = opt("--prompt-words", 16);
const longTokens = opt("--long", 0);

const words = "once upon a time there was a little girl who loved to play in the park with her friends".split(" ");
const prompt = (seed, n) => Array.from({ length: n }, (_, i) => words[(seed * 7 + i * 3) % words.length]).join(" ");

async function stream(body, onToken) {
  const t0 = performance.now();
  const times = [];
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  if (!res.ok) throw new Error(`status ${res.status}: ${await res.text()}`);
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
      const j = JSON.parse(event.slice(6));
      if (j.choices && j.choices[0] && typeof j.choices[0].text === "string" && j.choices[0].text.length > 0) {
        const t = performance.now();
        times.push(t);
        if (onToken) onToken(t);
      }
    }
  }
  return { t0, times };
}

const quantile = (v, q) => {
  if (!v.length) return 0;
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

let firstSeen = 0;
let releaseLong;
const allFirst = new Promise((r) => (releaseLong = r));
const body = (i) => ({ prompt: prompt(i, promptWords), max_tokens: tokens, temperature: 0, ignore_eos: true });
const start = performance.now();
const runs = Array.from({ length: clients }, (_, i) => {
  let first = true;
  return stream(body(i), () => {
    if (first && ++firstSeen === clients) releaseLong();
    first = false;
  });
});
let longRun = null;
if (longTokens > 0) {
  longRun = allFirst.then(() =>
    stream({ prompt: prompt(99, longTokens), max_tokens: 8, temperature: 0, ignore_eos: true }),
  );
}
const results = await Promise.all(runs);
const end = performance.now();
const ttft = results.map((r) => r.times[0] - r.t0);
const itl = results.flatMap((r) => r.times.slice(1).map((t, k) => t - r.times[k]));
const n = results.reduce((a, r) => a + r.times.length, 0);
const out = {
  clients,
  tokens: n,
  wall_s: +((end - start) / 1e3).toFixed(3),
  agg_tok_s: +(n / ((end - start) / 1e3)).toFixed(2),
  ttft_ms: { p50: +quantile(ttft, 0.5).toFixed(1), p99: +quantile(ttft, 0.99).toFixed(1) },
  itl_ms: {
    p50: +quantile(itl, 0.5).toFixed(1),
    p99: +quantile(itl, 0.99).toFixed(1),
    max: +Math.max(0, ...itl).toFixed(1),
  },
};
if (longRun) {
  const l = await longRun;
  const lt0 = l.t0, lt1 = l.times[0];
  // The streaming clients' gaps that overlap the long prompt's evaluation.
  const gaps = results.flatMap((r) =>
    r.times.slice(1).map((t, k) => [r.times[k], t]).filter(([a, b]) => b > lt0 && a < lt1).map(([a, b]) => b - a),
  );
  out.long = {
    prompt_words: longTokens,
    ttft_ms: +(lt1 - lt0).toFixed(1),
    others_max_gap_ms: +Math.max(0, ...gaps).toFixed(1),
    others_p50_gap_ms: +quantile(gaps, 0.5).toFixed(1),
  };
}
console.log(JSON.stringify(out));
