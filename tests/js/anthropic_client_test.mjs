// SPDX-License-Identifier: MIT
// The official `@anthropic-ai/sdk` npm client, unmodified, against `sniper serve`'s
// POST /v1/messages on a synthetic Qwen3 model (real tokenizer and chat template, random
// weights), authenticated with --api-key through the client's x-api-key header:
//  - messages.create non-streaming: a message with a text block, stop_reason, usage;
//    max_tokens cuts -> stop_reason "max_tokens"; a stop sequence -> "stop_sequence";
//  - streaming: raw events in Anthropic's order (message_start, content_block_start/delta/stop,
//    message_delta, message_stop) and the SDK's messages.stream() helper's finalMessage();
//    stream == non-stream at temperature 0;
//  - system as text blocks, a multi-turn conversation with tool_use / tool_result blocks and tools;
//  - errors in Anthropic's form: unknown model -> NotFoundError 404, missing max_tokens ->
//    BadRequestError 400, a wrong key -> AuthenticationError 401.
// usage: node anthropic_client_test.mjs <sniper binary> <shared dir>
import Anthropic from "@anthropic-ai/sdk";
import { check, parseArgs, startServer, synthQwen3, tempDir } from "./lib/server.mjs";

const { bin, shared } = parseArgs("anthropic_client_test.mjs <sniper binary> <shared dir>");
const dir = tempDir("sniper-anthropic-");
const modelPath = synthQwen3(bin, shared, dir);
const KEY = "anthropic-test-key";
const server = await startServer(bin, ["-m", modelPath, "--api-key", KEY]);
const MODEL = "qwen3-synth";
const client = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0, timeout: 60000 });

async function expectError(promise, cls, status, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof cls, `${what}: expected ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    check(e.status === status, `${what}: expected status ${status}, got ${e.status}`);
    return e;
  }
  check(false, `${what}: succeeded but should have failed with ${status}`);
}

function textOf(msg) {
  return msg.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

try {
  const base = {
    model: MODEL,
    max_tokens: 16,
    temperature: 0,
    system: [{ type: "text", text: "You are terse." }],
    messages: [{ role: "user", content: "Tell me a story." }],
  };
  const msg = await client.messages.create(base);
  check(msg.type === "message" && msg.role === "assistant" && msg.id.startsWith("msg_"), `message ${JSON.stringify(msg)}`);
  check(msg.model === MODEL, `model ${msg.model}`);
  check(msg.content.length >= 1 && msg.content.some((b) => b.type === "text"), `content ${JSON.stringify(msg.content)}`);
  check(["end_turn", "max_tokens"].includes(msg.stop_reason), `stop_reason ${msg.stop_reason}`);
  check(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0 && msg.usage.output_tokens <= 16, `usage ${JSON.stringify(msg.usage)}`);
  console.log(`message: ${JSON.stringify(textOf(msg))} (${msg.stop_reason})`);

  const short = await client.messages.create({ ...base, max_tokens: 2 });
  check(short.stop_reason === "max_tokens" && short.usage.output_tokens === 2, `max_tokens 2: ${short.stop_reason} ${JSON.stringify(short.usage)}`);

  // A stop sequence taken from the text the model produces at temperature 0.
  const full = textOf(msg);
  const words = full.split(/\s+/).filter((w) => w.length >= 2);
  if (words.length >= 2) {
    const stop = words[1];
    const stopped = await client.messages.create({ ...base, stop_sequences: [stop] });
    check(stopped.stop_reason === "stop_sequence" && stopped.stop_sequence === stop, `stop_sequences [${stop}]: ${stopped.stop_reason} ${stopped.stop_sequence}`);
    check(!textOf(stopped).includes(stop), "the stop sequence is not part of the text");
  }

  // Raw stream events.
  const events = [];
  let streamed = "";
  for await (const ev of await client.messages.create({ ...base, stream: true })) {
    events.push(ev.type);
    if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") streamed += ev.delta.text;
  }
  check(events[0] === "message_start", `first event ${events[0]}`);
  check(events.at(-1) === "message_stop" && events.at(-2) === "message_delta", `last events ${events.slice(-2)}`);
  const starts = events.filter((e) => e === "content_block_start").length;
  const stops = events.filter((e) => e === "content_block_stop").length;
  check(starts >= 1 && starts === stops, `block start/stop ${starts}/${stops}`);
  check(streamed === full, `stream != non-stream:\n${JSON.stringify(streamed)}\n${JSON.stringify(full)}`);

  // The SDK's stream helper assembles the same message.
  const final = await client.messages.stream(base).finalMessage();
  check(textOf(final) === full, `stream().finalMessage() text ${JSON.stringify(textOf(final))}`);
  check(final.stop_reason === msg.stop_reason && final.usage.output_tokens === msg.usage.output_tokens, `finalMessage ${JSON.stringify(final)}`);

  // Tools and a tool round trip in the history.
  const tools = [{ name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
  const conv = await client.messages.create({
    model: MODEL, max_tokens: 8, tools,
    messages: [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: [{ type: "text", text: "Checking." }, { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] },
    ],
  });
  check(conv.type === "message" && ["end_turn", "max_tokens", "tool_use"].includes(conv.stop_reason), `tool conversation ${JSON.stringify(conv)}`);
  for (const b of conv.content) {
    if (b.type === "tool_use") check(typeof b.input === "object" && b.id && b.name, `tool_use block ${JSON.stringify(b)}`);
  }

  // Errors.
  await expectError(client.messages.create({ ...base, model: "claude-nope" }), Anthropic.NotFoundError, 404, "unknown model");
  const e400 = await expectError(client.messages.create({ model: MODEL, messages: base.messages }), Anthropic.BadRequestError, 400, "missing max_tokens");
  check(e400.error && e400.error.type === "error" && e400.error.error.type === "invalid_request_error", `400 body ${JSON.stringify(e400.error)}`);
  await expectError(client.messages.create({ ...base, messages: [{ role: "robot", content: "x" }] }), Anthropic.BadRequestError, 400, "bad role");
  const wrong = new Anthropic({ apiKey: "wrong", baseURL: server.url, maxRetries: 0 });
  await expectError(wrong.messages.create(base), Anthropic.AuthenticationError, 401, "wrong key");
  console.log("anthropic client test passed");
} finally {
  const code = await server.stop();
  if (code !== 0) {
    console.error(server.stderr());
    check(false, `sniper serve exited with ${code}`);
  }
}
