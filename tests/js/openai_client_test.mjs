// SPDX-License-Identifier: MIT
// The official `openai` npm client against `sniper serve`:
//  - stories260K (no chat template): models.list, completions non-stream and stream (temperature 0
//    is deterministic: same text twice, stream == non-stream), usage counts, BadRequestError 400
//    for max_tokens -1, NotFoundError 404 (code model_not_found) for an unknown model;
//  - a synthetic Qwen3 model (real tokenizer and chat template) served with --api-key: chat
//    non-stream and stream (deltas, usage chunk with stream_options.include_usage, stream ==
//    non-stream at temperature 0, enable_thinking via chat_template_kwargs), wrong and missing
//    key -> AuthenticationError 401;
//  - the gemma4v fixture served with --mmproj (issue 39): a chat with an image_url data-URL part
//    (a real PNG), the same image again reuses the cache (timings.prompt_n 1), /v1/models names
//    "vision", an https URL and a non-image are BadRequestError 400 and the server goes on;
//  - a synthetic Qwen3 embedding model (pooling_type mean, issue 42): embeddings.create with the
//    client's default (it asks for base64 and decodes it) and with encoding_format "float", a
//    batch of inputs, each equal to `sniper embed`'s vector; usage; an empty input is
//    BadRequestError 400.
// usage: node openai_client_test.mjs <sniper binary> <shared dir>
import OpenAI from "openai";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { check, parseArgs, startServer, synthQwen3, tempDir } from "./lib/server.mjs";

const { bin, shared } = parseArgs("openai_client_test.mjs <sniper binary> <shared dir>");
const stories = path.join(shared, "models/stories260K.gguf");
const servers = [];

async function expectError(promise, cls, status, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof cls, `${what}: expected ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    check(e.status === status, `${what}: expected status ${status}, got ${e.status}`);
    return e;
  }
  check(false, `${what}: the request succeeded but should have failed with ${status}`);
}

async function completionsTests() {
  const server = await startServer(bin, ["-m", stories, "--slots", "2"]);
  servers.push(server);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60000 });

  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  check(ids.includes("stories260K"), `models.list ids ${JSON.stringify(ids)} lack "stories260K"`);
  check(models.data.every((m) => m.object === "model"), "every model has object 'model'");

  const req = { model: "stories260K", prompt: "Once upon a time", max_tokens: 24, temperature: 0 };
  const a = await client.completions.create(req);
  const b = await client.completions.create(req);
  check(a.object === "text_completion", `object is ${a.object}`);
  check(a.choices.length === 1 && typeof a.choices[0].text === "string", "one choice with text");
  const text = a.choices[0].text;
  check(text.trim().length > 0, "completion text is empty");
  check(text === b.choices[0].text, `temperature 0 is not deterministic:\n${JSON.stringify(text)}\n${JSON.stringify(b.choices[0].text)}`);
  check(["length", "stop"].includes(a.choices[0].finish_reason), `finish_reason ${a.choices[0].finish_reason}`);
  check(a.usage && a.usage.prompt_tokens > 0, `usage.prompt_tokens ${a.usage && a.usage.prompt_tokens}`);
  check(a.usage.completion_tokens > 0 && a.usage.completion_tokens <= 24, `usage.completion_tokens ${a.usage.completion_tokens}`);
  check(a.usage.total_tokens === a.usage.prompt_tokens + a.usage.completion_tokens, "total_tokens = prompt + completion");
  console.log(`completion: ${JSON.stringify(text)}`);

  const stream = await client.completions.create({ ...req, stream: true });
  let streamed = "", chunks = 0, finish = null;
  for await (const chunk of stream) {
    chunks++;
    const c = chunk.choices[0];
    if (c) { streamed += c.text || ""; finish = c.finish_reason || finish; }
  }
  check(chunks >= 2, `only ${chunks} stream chunks`);
  check(streamed === text, `streamed text differs from non-streamed:\n${JSON.stringify(streamed)}\n${JSON.stringify(text)}`);
  check(finish === a.choices[0].finish_reason, `stream finish_reason ${finish}`);

  const bad = await expectError(client.completions.create({ ...req, max_tokens: -1 }), OpenAI.BadRequestError, 400, "max_tokens -1");
  check(bad.error && typeof bad.error.message === "string" && bad.error.message.length > 0, "400 error has a message");
  const nf = await expectError(client.completions.create({ ...req, model: "no-such-model" }), OpenAI.NotFoundError, 404, "unknown model");
  check(nf.code === "model_not_found", `unknown model: code ${nf.code}`);
  await expectError(client.chat.completions.create({ model: "stories260K", messages: [{ role: "robot", content: "hi" }] }),
    OpenAI.BadRequestError, 400, "bad message role");
  // The server still serves after the errors.
  const c = await client.completions.create(req);
  check(c.choices[0].text === text, "completion after errors differs");

  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code} after SIGTERM`);
}

async function chatTests() {
  const dir = tempDir("sniper-openai-");
  const model = synthQwen3(bin, shared, dir);
  const key = "sk-test-" + Math.random().toString(36).slice(2);
  const server = await startServer(bin, ["-m", model, "--api-key", key, "--ctx", "1024"]);
  servers.push(server);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60000 });

  const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "wrong-key", maxRetries: 0 });
  const auth = await expectError(wrong.models.list(), OpenAI.AuthenticationError, 401, "wrong api key");
  check(auth.type === "authentication_error", `401 type ${auth.type}`);
  await expectError(wrong.chat.completions.create({ messages: [{ role: "user", content: "hi" }], model: "x" }),
    OpenAI.AuthenticationError, 401, "wrong api key on chat");
  const noKey = await fetch(`${server.url}/v1/models`);
  check(noKey.status === 401, `missing api key: status ${noKey.status}`);

  const id = "qwen3-synth";
  const models = await client.models.list();
  check(models.data.some((m) => m.id === id), `models.list lacks ${id}`);

  const req = {
    model: id, temperature: 0, max_tokens: 32,
    messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "Say hello in **bold**." }],
    chat_template_kwargs: { enable_thinking: false },
  };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  check(a.object === "chat.completion", `object ${a.object}`);
  const msg = a.choices[0].message;
  check(msg.role === "assistant", `role ${msg.role}`);
  check(typeof msg.content === "string" && msg.content.length > 0, `content ${JSON.stringify(msg.content)}`);
  check(msg.content === b.choices[0].message.content, "chat at temperature 0 is not deterministic");
  check(a.usage.prompt_tokens > 10 && a.usage.completion_tokens > 0 && a.usage.completion_tokens <= 32,
    `usage ${JSON.stringify(a.usage)}`);
  check(["length", "stop"].includes(a.choices[0].finish_reason), `finish_reason ${a.choices[0].finish_reason}`);

  const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let content = "", reasoning = "", deltas = 0, usage = null, role = null, finish = null;
  for await (const chunk of stream) {
    check(chunk.object === "chat.completion.chunk", `chunk object ${chunk.object}`);
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.role) role = c.delta.role;
    if (c.delta.content) { content += c.delta.content; deltas++; }
    if (c.delta.reasoning_content) reasoning += c.delta.reasoning_content;
    if (c.finish_reason) finish = c.finish_reason;
  }
  check(role === "assistant", `stream role ${role}`);
  check(deltas >= 2, `only ${deltas} content deltas`);
  check(content === msg.content, `streamed chat differs:\n${JSON.stringify(content)}\n${JSON.stringify(msg.content)}`);
  check(reasoning === (msg.reasoning_content || ""), "streamed reasoning differs");
  check(finish === a.choices[0].finish_reason, `stream finish_reason ${finish}`);
  check(usage && usage.completion_tokens === a.usage.completion_tokens && usage.prompt_tokens === a.usage.prompt_tokens,
    `stream usage ${JSON.stringify(usage)} vs ${JSON.stringify(a.usage)}`);

  // Thinking on: the template changes, so the prompt is shorter (no empty <think></think>).
  const think = await client.chat.completions.create({ ...req, chat_template_kwargs: { enable_thinking: true } });
  check(think.usage.prompt_tokens !== a.usage.prompt_tokens,
    `enable_thinking did not change the prompt (${think.usage.prompt_tokens} tokens both ways)`);

  const bad = await expectError(client.chat.completions.create({ ...req, max_tokens: -1 }), OpenAI.BadRequestError, 400, "chat max_tokens -1");
  check(bad.type === "invalid_request_error", `400 type ${bad.type}`);
  await expectError(client.chat.completions.create({ ...req, model: "gpt-4o" }), OpenAI.NotFoundError, 404, "chat unknown model");
  console.log(`chat: ${JSON.stringify(msg.content)}`);

  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code} after SIGTERM`);
}

async function imageTests() {
  const model = path.join(shared, "models/syn-gemma4moe-small.gguf");
  const mmproj = path.join(shared, "models/mm/syn-gemma4v-small.mmproj.gguf");
  const png = fs.readFileSync(path.join(shared, "reference/mm/syn-gemma4v-small/img.png")).toString("base64");
  const server = await startServer(bin, ["-m", model, "--mmproj", mmproj, "--ctx", "512"]);
  servers.push(server);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60000 });
  const models = await client.models.list();
  check(JSON.stringify(models.data[0].capabilities) === JSON.stringify(["completion", "vision"]),
        `capabilities ${JSON.stringify(models.data[0].capabilities)}`);
  const withImage = (url) => ({
    max_tokens: 6, temperature: 0,
    messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }, { type: "text", text: "What is it?" }] }],
  });
  const a = await client.chat.completions.create(withImage(`data:image/png;base64,${png}`));
  const b = await client.chat.completions.create(withImage(`data:image/png;base64,${png}`));
  check(a.usage.prompt_tokens > 48, `an image prompt of ${a.usage.prompt_tokens} tokens`);
  check(a.choices[0].message.content === b.choices[0].message.content, "the same image twice gives the same text");
  check(b.timings && b.timings.prompt_n === 1, `second turn evaluated ${b.timings && b.timings.prompt_n} tokens, not 1`);
  const url = await expectError(client.chat.completions.create(withImage("https://example.com/cat.png")),
                                OpenAI.BadRequestError, 400, "an https image URL");
  check(/does not fetch/.test(url.message), `https URL message: ${url.message}`);
  await expectError(client.chat.completions.create(withImage(`data:image/png;base64,${Buffer.from("not an image").toString("base64")}`)),
                    OpenAI.BadRequestError, 400, "bytes that are no image");
  const c = await client.chat.completions.create(withImage(`data:image/png;base64,${png}`));
  check(c.choices[0].message.content === a.choices[0].message.content, "the server goes on after the 400s");
  console.log(`image chat: ${JSON.stringify(a.choices[0].message.content)}`);
  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code} after SIGTERM`);
}

// `sniper embed`'s vectors of `texts` (one per line).
function cliEmbeddings(model, texts, dir) {
  const file = path.join(dir, "inputs.txt");
  fs.writeFileSync(file, texts.join("\n") + "\n");
  const out = execFileSync(bin, ["embed", model, "-f", file, "-t", "2"], { stdio: ["ignore", "pipe", "ignore"] });
  return JSON.parse(out.toString()).data.map((d) => d.embedding);
}

function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

async function embeddingTests() {
  const dir = tempDir("sniper-openai-embed-");
  const model = synthQwen3(bin, shared, dir, ["--pooling", "mean"], "qwen3-embed.gguf");
  const server = await startServer(bin, ["-m", model, "--slots", "2"]);
  servers.push(server);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60000 });
  const texts = ["The capital of France is Paris.", "Embeddings map text to vectors.", "hello"];
  const want = cliEmbeddings(model, texts, dir);
  const a = await client.embeddings.create({ model: "qwen3-embed", input: texts });  // base64 on the wire
  const b = await client.embeddings.create({ model: "qwen3-embed", input: texts, encoding_format: "float" });
  for (const r of [a, b]) {
    check(r.object === "list" && r.data.length === texts.length, `embeddings: ${JSON.stringify(r).slice(0, 200)}`);
    check(r.usage.prompt_tokens > texts.length && r.usage.total_tokens === r.usage.prompt_tokens, `usage ${JSON.stringify(r.usage)}`);
    r.data.forEach((d, i) => {
      check(d.index === i && d.embedding.length === 64, `embedding ${i}: index ${d.index}, ${d.embedding.length} floats`);
      const c = cosine(d.embedding, want[i]);
      check(c >= 0.99999, `embedding ${i}: cosine ${c} against sniper embed`);
    });
  }
  a.data.forEach((d, i) => check(d.embedding.every((v, j) => v === b.data[i].embedding[j]), `base64 == float for input ${i}`));
  await expectError(client.embeddings.create({ model: "qwen3-embed", input: "" }), OpenAI.BadRequestError, 400, "an empty input");
  console.log(`embeddings: ${a.data.length} x ${a.data[0].embedding.length}, usage ${a.usage.prompt_tokens} tokens`);
  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code} after SIGTERM`);
  fs.rmSync(dir, { recursive: true, force: true });
}

try {
  await embeddingTests();
  await completionsTests();
  await chatTests();
  await imageTests();
  console.log("PASS openai_client_test");
} catch (e) {
  console.error("FAIL:", e && e.stack ? e.stack : e);
  for (const s of servers) console.error("--- server stderr (tail) ---\n" + s.stderr().slice(-4000));
  process.exitCode = 1;
} finally {
  for (const s of servers) await s.stop();
}
