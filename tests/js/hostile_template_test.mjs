// SPDX-License-Identifier: MIT
// Hostile chat templates through `sniper serve` (issue 40 findings 1 and 2), end to end: synthetic
// Qwen3 models made by `sniper synth --chat-template t.jinja` carry the reproductions.
// - model "hostile": one template that runs the reproduction the user message names; each chat
//   request must get an answer (200 for the chains, which now render; 400 naming the limit for
//   the rest), and the server must stay alive and answer a normal request after each;
// - model "trim": the 200,000-filter chain (1 MB), which crashed serve on the first
//   request: it renders;
// - model "or": the 200,000-`or` chain (1.8 MB): refused at load for its size, by name,
//   while the server keeps serving the other models;
// - SIGTERM while a render runs: the server stops at once (the render is cancelled), well before
//   the render would have ended on its own;
// - `sniper chat`: Ctrl-C while the template renders stops the render and the chat goes on.
// usage: node hostile_template_test.mjs <sniper binary> <shared dir>
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { check, parseArgs, startServer, tempDir } from "./lib/server.mjs";

const { bin, shared } = parseArgs("hostile_template_test.mjs <sniper binary> <shared dir>");
const dir = tempDir("sniper-hostile-template-");

function synth(name, template) {
  const tpl = path.join(dir, `${name}.jinja`);
  writeFileSync(tpl, template);
  const out = path.join(dir, `${name}.gguf`);
  execFileSync(bin, [
    "synth", "--arch", "qwen3", "--dim", "64", "--layers", "2", "--heads", "2", "--kv-heads", "1",
    "--head-dim", "32", "--ff", "128", "--type", "q8_0",
    "--vocab-from", path.join(shared, "tokenizer/ggml-vocab-qwen2.gguf"), "--chat-template", tpl, "-o", out,
  ], { stdio: ["ignore", "ignore", "inherit"] });
  return out;
}

const rep = (s, n) => s.repeat(n);
// Each branch is one reproduction of the issue (sizes cut where the whole template must stay
// under the 1 MiB template limit; the full-size chains have their own models below).
const cases = {
  concat: { tpl: `{{ ('a'${rep(" ~ 'a'", 10000)})|length }}`, status: 200 },
  filters: { tpl: `{{ 'a'${rep("|trim", 20000)} }}`, status: 200 },
  or_chain: { tpl: `{{ ${rep("false or ", 20000)}true }}`, status: 200 },
  attr_chain: { tpl: `{{ 'x'${rep(".a", 20000)} }}`, status: 400, error: /has no attribute 'a'/ },
  empty_repeat: { tpl: "{{ '' * 9223372036854775807 }}ok", status: 200 },
  empty_list_repeat: { tpl: "{{ ([] * 9223372036854775807)|length }}", status: 200 },
  copies: {
    tpl: "{% set s = 'x' * 60000000 %}{% for i in range(300) %}{% set t = s ~ '' %}{% endfor %}",
    status: 400, error: /limit of 536870912 bytes built, copied or scanned/,
  },
  range_overflow: {
    tpl: "{{ range(-4611686018427387904, 9223372036854775807)|length }}",
    status: 400, error: /exceed the sandbox limit/,
  },
  list_overflow: { tpl: "{{ ([1, 2] * 4611686018427387904)|length }}", status: 400, error: /work limit/ },
  list_of_big: { tpl: "{% set s = 'x' * 60000000 %}{{ [s] * 100 }}", status: 400, error: /exceeds the template limit/ },
  replace: {
    tpl: "{{ ('x' * 1000).replace('x', 'y' * 1000000) }}", status: 400, error: /exceeds the template limit/,
  },
  percent: {
    tpl: "{% set s = 'x' * 60000000 %}{{ ('%s' * 100) % ((s,) * 100) }}", status: 400,
    error: /exceeds the template limit/,
  },
  indent: { tpl: "{{ 'a\\nb\\nc'|indent(60000000) }}", status: 400, error: /exceeds the template limit/ },
  deep_values: {
    tpl: "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}",
    status: 400, error: /nested deeper than the limit of 512 levels/,
  },
};
let hostile = "{%- set q = messages[-1]['content'] -%}\n";
for (const [name, c] of Object.entries(cases)) {
  hostile += `{%- ${hostile.includes("{%- if") ? "elif" : "if"} q == '${name}' -%}${c.tpl}\n`;
}
// A render that runs for seconds within its limits: the SIGTERM check below.
hostile += "{%- elif q == 'slow' -%}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n";
hostile += "{%- else -%}<|im_start|>user\n{{ q }}<|im_end|>\n<|im_start|>assistant\n{%- endif -%}";

const models = {
  hostile: synth("hostile", hostile),
  trim: synth("trim", `{{ 'a'${rep("|trim", 200000)} }}<|im_start|>assistant\n`),
  or: synth("or", `{{ ${rep("false or ", 200000)}true }}`),
};

async function chat(url, model, content) {
  const res = await fetch(url + "/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content }], max_tokens: 1, temperature: 0 }),
  });
  const text = await res.text();
  return { status: res.status, text };
}

async function expectAlive(url) {
  const r = await chat(url, "hostile", "hello");
  check(r.status === 200, `a normal request after a hostile one: ${r.status} ${r.text.slice(0, 300)}`);
}

{
  const server = await startServer(bin, [
    "--model", `hostile=${models.hostile}`, "--model", `trim=${models.trim}`, "--model", `or=${models.or}`,
    "--max-loaded", "2", "--ctx", "512",
  ]);
  const { url } = server;
  await expectAlive(url);
  for (const [name, c] of Object.entries(cases)) {
    const t0 = Date.now();
    const r = await chat(url, "hostile", name);
    const s = (Date.now() - t0) / 1000;
    check(r.status === c.status, `${name}: HTTP ${r.status} (want ${c.status}): ${r.text.slice(0, 300)}`);
    if (c.error) check(c.error.test(r.text), `${name}: the error names the limit: ${r.text.slice(0, 300)}`);
    check(r.text.length < 16384, `${name}: the answer is short (${r.text.length} bytes)`);
    console.log(`${name}: HTTP ${r.status} in ${s.toFixed(2)} s`);
    await expectAlive(url);
  }
  // The full-size chains.
  const trim = await chat(url, "trim", "x");
  check(trim.status === 200, `200,000 filters render: ${trim.status} ${trim.text.slice(0, 300)}`);
  const or = await chat(url, "or", "x");
  check(or.status >= 400 && /at most 1048576/.test(or.text), `the 1.8 MB template is refused by size: ${or.status} ${or.text.slice(0, 300)}`);
  await expectAlive(url);
  const health = await fetch(url + "/health");
  check(health.ok, `/health after the hostile requests: ${health.status}`);
  check((await server.stop()) === 0, "serve exits 0 on SIGTERM");
}

{
  // How long the slow render runs on its own (it ends at a limit)...
  const server = await startServer(bin, ["--model", `hostile=${models.hostile}`, "--ctx", "512"]);
  let t0 = Date.now();
  const alone = await chat(server.url, "hostile", "slow");
  const renderS = (Date.now() - t0) / 1000;
  check(alone.status === 400 && /limit/.test(alone.text), `the slow render ends at a limit: ${alone.status} ${alone.text.slice(0, 300)}`);
  // ...and how soon SIGTERM stops the server while it runs.
  const pending = chat(server.url, "hostile", "slow").catch(() => null);
  await new Promise((r) => setTimeout(r, 300));
  t0 = Date.now();
  const code = await server.stop();
  const stopS = (Date.now() - t0) / 1000;
  await pending;
  console.log(`slow render alone: ${renderS.toFixed(2)} s; serve stopped ${stopS.toFixed(2)} s after SIGTERM mid-render`);
  check(code === 0, `serve exits 0 on SIGTERM during a render (code ${code})`);
  check(stopS < Math.max(0.5, renderS / 2), `SIGTERM stops a render at once: ${stopS.toFixed(2)} s vs ${renderS.toFixed(2)} s`);
}
{
  // `sniper chat`: Ctrl-C (SIGINT) while the template renders stops the render, the message is
  // not sent, and the chat goes on (here: to the end of its input, exit 0).
  const proc = spawn(bin, ["chat", models.hostile, "--ctx", "512", "-n", "1"], { stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  const exited = new Promise((r) => proc.on("exit", (code) => r(code)));
  const waitErr = async (re, ms) => {
    const deadline = Date.now() + ms;
    while (!re.test(err) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return re.test(err);
  };
  proc.stderr.on("data", (d) => { err += d; });
  proc.stdout.on("data", () => {});
  check(await waitErr(/sniper chat:/, 60000), `chat starts: ${err.slice(0, 500)}`);
  proc.stdin.write("slow\n");
  // A Ctrl-C that comes before chat has read the line is taken by the line reader (as at its
  // prompt): send it again until the render answers, timing from the last one.
  let t0 = 0;
  let stopped = false;
  for (let i = 0; i < 20 && !stopped; i++) {
    await new Promise((r) => setTimeout(r, 300));
    t0 = Date.now();
    proc.kill("SIGINT");
    stopped = await waitErr(/stopped before the reply began/, 1500);
  }
  const stopS = (Date.now() - t0) / 1000;
  check(stopped, `Ctrl-C stops the chat's render: ${err.slice(-500)}`);
  console.log(`chat: a render stopped ${stopS.toFixed(2)} s after Ctrl-C`);
  check(stopS < 3, `Ctrl-C stops the chat's render at once: ${stopS.toFixed(2)} s`);
  check(!/cancelled|error/i.test(err), `no error for a render stopped by Ctrl-C: ${err.slice(-500)}`);
  proc.stdin.end();
  check((await exited) === 0, "chat exits 0 at the end of its input");
}
console.log("hostile_template_test: ok");
