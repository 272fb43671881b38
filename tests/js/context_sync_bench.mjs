// SPDX-License-Identifier: MIT
// Save, load, push and pull times of a long context against recomputing it (issue 23 point 6),
// with s3rver on loopback. Not a ctest (minutes on a big model); run by hand:
//   sniper synth --preset qwen3-8b --layers 2 --vocab 512 --ctx 8192 -o /tmp/q8b-2l.gguf
//   node tests/js/context_sync_bench.mjs build/ci/bin/sniper ../shared /tmp/q8b-2l.gguf 4096
// Prints one line per measurement: recompute (the prompt's prefill in /v1/context/save), save
// (write) and load (read + parse + restore) per compression, push and pull per compression.
import S3rver from "s3rver";
import { spawn } from "node:child_process";
import { mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { check, parseArgs, startServer, tempDir } from "./lib/server.mjs";

const { bin, rest } = parseArgs("context_sync_bench.mjs <sniper binary> <shared dir> <model.gguf> [n_tokens]");
const model = rest[0];
const target = Number(rest[1] || 4096);
check(model, "a model path is required");
const dir = tempDir("sniper-ctxbench-");

function sniper(args) {
  return new Promise((resolve) => {
    const p = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("close", (code) => resolve({ code, out, err }));
  });
}

const s3dir = path.join(dir, "s3");
mkdirSync(s3dir);
const s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: s3dir, configureBuckets: [{ name: "bench" }] });
const { port } = await s3.run();
Object.assign(process.env, { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1",
                             AWS_ENDPOINT_URL: `http://127.0.0.1:${port}` });
const store = path.join(dir, "contexts");
const server = await startServer(bin, ["-m", model, "--ctx", String(target + 256), "--context-dir", store], { timeoutMs: 300000 });
const post = async (route, body) => {
  const res = await fetch(`${server.url}${route}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const json = await res.json();
  check(res.ok, `${route}: ${res.status} ${JSON.stringify(json)}`);
  return json;
};
try {
  // A prompt of about `target` tokens: grow the text until the tokenizer gives enough.
  const words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split(" ");
  let prompt = "";
  for (let i = 0; prompt.length < target * 12; ++i) prompt += words[(i * 7) % words.length] + " ";
  const probe = await post("/v1/context/save", { name: "probe", prompt: prompt.slice(0, 2000) });
  const chars = Math.floor(2000 * target / probe.n_tokens);
  prompt = prompt.slice(0, chars);
  await post("/v1/completions", { prompt: "x", max_tokens: 1 });  // the slot forgets the probe
  const exact = await post("/v1/context/save", { name: "ctx-none", prompt, compression: "none" });
  console.log(`context: ${exact.n_tokens} tokens; recompute (prefill of ${exact.n_evaluated} tokens): ${exact.eval_ms.toFixed(0)} ms`);
  for (const c of ["none", "q8_0", "q4_0"]) {
    const name = `ctx-${c}`;
    const saved = c === "none" ? exact : await post("/v1/context/save", { name, prompt, compression: c });
    const bytes = statSync(path.join(store, `${name}.ctx`)).size;
    await post("/v1/completions", { prompt: "x", max_tokens: 1 });
    const loaded = await post("/v1/context/load", { name });
    const push = await sniper(["context", "push", name, "--remote", "s3://bench/ctx", "--context-dir", store]);
    check(push.code === 0, push.err);
    const pull = await sniper(["context", "pull", name, "--remote", "s3://bench/ctx", "--context-dir", path.join(dir, "pulled"), "-m", model]);
    check(pull.code === 0, pull.err);
    const ms = (r) => Number(r.out.match(/([\d.]+) ms$/m)[1]);
    console.log(`${c.padEnd(5)} ${(bytes / 1e6).toFixed(1).padStart(7)} MB (${(exact.bytes / bytes).toFixed(2)}x): save ${saved.write_ms.toFixed(0)} ms, ` +
                `load ${(loaded.read_ms + loaded.restore_ms).toFixed(0)} ms (read ${loaded.read_ms.toFixed(0)} + restore ${loaded.restore_ms.toFixed(0)}), ` +
                `push ${ms(push).toFixed(0)} ms, pull ${ms(pull).toFixed(0)} ms`);
  }
} finally {
  await server.stop();
  await s3.close();
}
