// SPDX-License-Identifier: MIT
// The official `ollama` npm client (ollama-js), unmodified, against `sniper serve` on a synthetic
// Qwen3 model (real tokenizer and chat template, random weights), with --api-key sent as a
// Bearer header through the client's `headers` option:
//  - version, list (tags: the model as NAME:latest with details), show, ps (expires_at moves
//    with keep_alive; keep_alive 0 unloads the model, the next request loads it again);
//  - chat and generate, non-streaming and streaming (NDJSON parts, the final part carries
//    done_reason and the counts/durations; stream == non-stream at temperature 0);
//  - think: false (no thinking returned);
//  - format: "json" and format: <JSON schema> (grammar-constrained: the output parses, and
//    validates against the schema);
//  - embed (a batch) and the older embeddings (issue 42): unit vectors of the model's width, the
//    same vector from both routes;
//  - errors in Ollama's form: unknown model -> 404, bad options -> 400, a wrong key -> 401.
// usage: node ollama_client_test.mjs <sniper binary> <shared dir>
import { Ollama } from "ollama";
import { check, parseArgs, startServer, synthQwen3, tempDir } from "./lib/server.mjs";

const { bin, shared } = parseArgs("ollama_client_test.mjs <sniper binary> <shared dir>");
const dir = tempDir("sniper-ollama-");
const model = synthQwen3(bin, shared, dir);
const KEY = "ollama-test-key";
const NAME = "qwen3-synth";
// With --keep-alive the model is not pinned (as a plain `-m` is): keep_alive can unload it.
const server = await startServer(bin, ["--model", `${NAME}=${model}`, "--keep-alive", "5m", "--api-key", KEY, "--ctx", "2048"]);
const ollama = new Ollama({ host: server.url, headers: { Authorization: `Bearer ${KEY}` } });

async function expectStatus(promise, status, what, needle) {
  try {
    await promise;
  } catch (e) {
    check(e.status_code === status, `${what}: expected status ${status}, got ${e.status_code} (${e.message})`);
    if (needle) check(e.message.includes(needle), `${what}: message ${JSON.stringify(e.message)} lacks ${JSON.stringify(needle)}`);
    return;
  }
  check(false, `${what}: succeeded but should have failed with ${status}`);
}

function checkFinal(r, what) {
  check(r.done === true, `${what}: done is ${r.done}`);
  check(["stop", "length"].includes(r.done_reason), `${what}: done_reason ${r.done_reason}`);
  for (const k of ["total_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration", "load_duration"]) {
    check(typeof r[k] === "number" && r[k] >= 0, `${what}: ${k} is ${r[k]}`);
  }
  check(r.prompt_eval_count > 0 && r.eval_count > 0, `${what}: counts ${r.prompt_eval_count} / ${r.eval_count}`);
  check(r.total_duration >= r.eval_duration, `${what}: total_duration < eval_duration`);
}

try {
  const v = await ollama.version();
  check(typeof v.version === "string" && /^\d+\.\d+\.\d+/.test(v.version), `version ${JSON.stringify(v)}`);

  const tags = await ollama.list();
  check(tags.models.length === 1, `list: ${JSON.stringify(tags)}`);
  const tag = tags.models[0];
  check(tag.name === `${NAME}:latest` && tag.model === `${NAME}:latest`, `list name ${tag.name}`);
  check(tag.size > 0 && tag.details.format === "gguf" && tag.details.family === "qwen3", `list details ${JSON.stringify(tag)}`);
  check(typeof tag.details.quantization_level === "string" && tag.details.quantization_level.length > 0, "quantization_level");

  const show = await ollama.show({ model: NAME });
  check(show.capabilities.includes("completion") && show.capabilities.includes("thinking"), `show capabilities ${show.capabilities}`);
  check(show.model_info["general.architecture"] === "qwen3", `show model_info ${JSON.stringify(show.model_info)}`);
  check(show.template.length > 0, "show template is empty");

  // Chat, non-streaming and streaming, temperature 0: identical text.
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }];
  const opts = { temperature: 0, num_predict: 12, seed: 7 };
  const chat = await ollama.chat({ model: NAME, messages, options: opts, think: false });
  check(chat.model === NAME && chat.message.role === "assistant", `chat ${JSON.stringify(chat)}`);
  check(typeof chat.message.content === "string" && chat.message.content.length > 0, "chat content is empty");
  check(!chat.message.thinking, `think:false returned thinking ${JSON.stringify(chat.message.thinking)}`);
  checkFinal(chat, "chat");
  check(chat.eval_count <= 12, `num_predict 12 but eval_count ${chat.eval_count}`);
  let streamed = "", parts = 0, last = null;
  for await (const part of await ollama.chat({ model: NAME, messages, options: opts, think: false, stream: true })) {
    parts++;
    if (!part.done) streamed += part.message.content;
    last = part;
  }
  check(parts >= 2, `chat stream gave ${parts} parts`);
  checkFinal(last, "chat stream");
  check(streamed === chat.message.content, `stream != non-stream:\n${JSON.stringify(streamed)}\n${JSON.stringify(chat.message.content)}`);
  console.log(`chat: ${JSON.stringify(chat.message.content)} (${chat.eval_count} tokens, ${chat.done_reason})`);

  // Generate, non-streaming and streaming.
  const gen = await ollama.generate({ model: NAME, prompt: "Once upon a time", options: opts, think: false });
  check(typeof gen.response === "string" && gen.response.length > 0, `generate ${JSON.stringify(gen)}`);
  checkFinal(gen, "generate");
  let gstream = "";
  let glast = null;
  for await (const part of await ollama.generate({ model: NAME, prompt: "Once upon a time", options: opts, think: false, stream: true })) {
    gstream += part.response;
    glast = part;
  }
  checkFinal(glast, "generate stream");
  check(gstream === gen.response, `generate stream != non-stream`);
  const raw = await ollama.generate({ model: NAME, prompt: "<|im_start|>user\nhi<|im_end|>\n", raw: true, options: opts });
  checkFinal(raw, "generate raw");

  // format: "json": any JSON object; it parses whenever generation ended on its own.
  for (const seed of [3]) {  // a seed that ends early: masking a 151k vocabulary is slow on CI (docs/apis.md)
    const r = await ollama.chat({ model: NAME, messages, format: "json", think: false, options: { seed, num_predict: 1500 } });
    check(r.done_reason === "stop", `format json seed ${seed}: done_reason ${r.done_reason} (output ${JSON.stringify(r.message.content).slice(0, 200)})`);
    let parsed;
    try { parsed = JSON.parse(r.message.content); } catch (e) { check(false, `format json seed ${seed}: does not parse: ${r.message.content}`); }
    check(parsed !== null && typeof parsed === "object" && !Array.isArray(parsed), `format json: not an object: ${r.message.content}`);
    console.log(`format json (seed ${seed}, ${r.eval_count} tokens): ${r.message.content.slice(0, 120)}`);
  }
  // format: a JSON schema, streaming: the concatenated parts parse and validate.
  const schema = {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 10 },
      age: { type: "integer" },
      mood: { enum: ["happy", "sad"] },
      tags: { type: "array", items: { type: "boolean" }, maxItems: 3 },
    },
    required: ["name", "age", "mood"],
    additionalProperties: false,
  };
  for (const seed of [4, 5]) {
    let text = "", end = null;
    for await (const part of await ollama.generate({ model: NAME, prompt: "Describe a person as JSON.", format: schema, stream: true, options: { seed, num_predict: 400 } })) {
      text += part.response;
      end = part;
    }
    check(end.done_reason === "stop", `schema seed ${seed}: done_reason ${end.done_reason}: ${text}`);
    const p = JSON.parse(text);
    check(typeof p.name === "string" && [...p.name].length <= 10, `schema: name ${JSON.stringify(p.name)}`);
    check(Number.isInteger(p.age), `schema: age ${p.age}`);
    check(["happy", "sad"].includes(p.mood), `schema: mood ${p.mood}`);
    check(p.tags === undefined || (Array.isArray(p.tags) && p.tags.length <= 3 && p.tags.every((t) => typeof t === "boolean")), `schema: tags ${JSON.stringify(p.tags)}`);
    check(Object.keys(p).every((k) => k in schema.properties), `schema: extra keys in ${text}`);
    console.log(`format schema (seed ${seed}): ${text}`);
  }

  // ps and keep_alive: expires_at follows the last request's keep_alive.
  await ollama.generate({ model: NAME, prompt: "x", keep_alive: "1h", options: { num_predict: 1 } });
  let ps = await ollama.ps();
  check(ps.models.length === 1 && ps.models[0].name === `${NAME}:latest`, `ps ${JSON.stringify(ps)}`);
  const ahead = (new Date(ps.models[0].expires_at) - Date.now()) / 1000;
  check(ahead > 3500 && ahead <= 3600, `keep_alive 1h: expires in ${ahead} s`);
  check(ps.models[0].context_length === 2048, `ps context_length ${ps.models[0].context_length}`);
  const load = await ollama.generate({ model: NAME, prompt: "", keep_alive: 0 });
  check(load.done && load.done_reason === "unload", `empty prompt with keep_alive 0: ${JSON.stringify(load)}`);
  for (let i = 0; i < 50; i++) {  // the pool's thread unloads it
    ps = await ollama.ps();
    if (ps.models.length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  check(ps.models.length === 0, `keep_alive 0 did not unload: ${JSON.stringify(ps)}`);
  // The next request loads it again; keep_alive -1: never expires.
  await ollama.generate({ model: `${NAME}:latest`, prompt: "x", keep_alive: -1, options: { num_predict: 1 } });
  ps = await ollama.ps();
  check(ps.models.length === 1 && new Date(ps.models[0].expires_at) - Date.now() > 86400e3 * 365, `keep_alive -1: ${JSON.stringify(ps)}`);

  // Embeddings (issue 42): the model has no pooling_type, so the last token's state, normalised.
  const emb = await ollama.embed({ model: NAME, input: ["hello world", "The sky is blue."] });
  check(emb.model === NAME && emb.embeddings.length === 2, `embed: ${JSON.stringify(emb).slice(0, 200)}`);
  for (const v of emb.embeddings) {
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    check(v.length === 64 && Math.abs(norm - 1) < 1e-5, `embed: ${v.length} floats of norm ${norm}`);
  }
  check(emb.prompt_eval_count > 2 && emb.total_duration > 0, `embed counts ${emb.prompt_eval_count} / ${emb.total_duration}`);
  const old = await ollama.embeddings({ model: NAME, prompt: "hello world" });
  check(old.embedding.length === 64 && old.embedding.every((x, i) => x === emb.embeddings[0][i]), "embeddings == embed's first vector");
  await expectStatus(ollama.embed({ model: NAME, input: [""] }), 400, "empty embed input", "input[0] is an empty string");

  // Errors in Ollama's form.
  await expectStatus(ollama.chat({ model: "nope", messages }), 404, "unknown model", "model 'nope' not found");
  await expectStatus(ollama.show({ model: "nope" }), 404, "show unknown model");
  await expectStatus(ollama.chat({ model: NAME, messages, options: { temperature: "hot" } }), 400, "bad temperature", "options.temperature must be a number");
  await expectStatus(ollama.generate({ model: NAME, prompt: "x", format: { type: "object", properties: { a: { type: "string", pattern: "x" } } } }), 400, "unsupported schema", "'pattern' is not supported");
  await expectStatus(ollama.chat({ model: NAME, messages, keep_alive: "soon" }), 400, "bad keep_alive", "keep_alive");
  await expectStatus(new Ollama({ host: server.url, headers: { Authorization: "Bearer wrong" } }).list(), 401, "wrong key", "invalid API key");
  // Model management has no counterpart here: the client shows the server's message (issue 42).
  await expectStatus(ollama.pull({ model: "llama3" }), 501, "pull", "not supported by sniper serve");
  await expectStatus(ollama.delete({ model: "llama3" }), 501, "delete", "not supported by sniper serve");
  await expectStatus(ollama.create({ model: "mine", from: NAME }), 501, "create", "not supported by sniper serve");
  console.log("ollama client test passed");
} finally {
  const code = await server.stop();
  if (code !== 0) {
    console.error(server.stderr());
    check(false, `sniper serve exited with ${code}`);
  }
}
