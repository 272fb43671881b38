// SPDX-License-Identifier: MIT
// The official `ollama` npm client against `sniper serve --model a=... --model b=...` (two
// synthetic Qwen3 models, --max-loaded 1): list shows both (details read from the files, before
// either is loaded), chat reaches each by "NAME" or "NAME:latest" (the answer names it), ps shows
// only the loaded one (the second request swapped the first out), show works for the unloaded
// one (loading it), and an unknown model is Ollama's 404.
// usage: node ollama_models_test.mjs <sniper binary> <shared dir>
import fs from "node:fs";
import path from "node:path";
import { Ollama } from "ollama";
import { check, parseArgs, startServer, synthQwen3, tempDir } from "./lib/server.mjs";

const { bin, shared } = parseArgs("ollama_models_test.mjs <sniper binary> <shared dir>");
const dir = tempDir("sniper-ollama-models-");
const a = synthQwen3(bin, shared, dir);
const b = path.join(dir, "b.gguf");
fs.copyFileSync(a, b);
const server = await startServer(bin, ["--model", `alpha=${a}`, "--model", `beta=${b}`, "--max-loaded", "1", "--ctx", "1024"]);
const ollama = new Ollama({ host: server.url });
const messages = [{ role: "user", content: "Say hello." }];
const opts = { temperature: 0, num_predict: 4 };

try {
  const tags = await ollama.list();
  const names = tags.models.map((m) => m.name).sort();
  check(JSON.stringify(names) === JSON.stringify(["alpha:latest", "beta:latest"]), `list: ${JSON.stringify(tags)}`);
  for (const m of tags.models) check(m.size > 0 && m.details.family === "qwen3", `list details ${JSON.stringify(m)}`);
  let ps = await ollama.ps();
  check(ps.models.length === 0, `nothing loaded yet: ${JSON.stringify(ps)}`);

  const ra = await ollama.chat({ model: "alpha", messages, options: opts, think: false });
  check(ra.model === "alpha" && ra.done && ra.eval_count > 0, `chat alpha: ${JSON.stringify(ra)}`);
  ps = await ollama.ps();
  check(ps.models.length === 1 && ps.models[0].name === "alpha:latest", `ps after alpha: ${JSON.stringify(ps)}`);

  const rb = await ollama.chat({ model: "beta:latest", messages, options: opts, think: false });
  check(rb.model === "beta:latest" && rb.done && rb.eval_count > 0, `chat beta: ${JSON.stringify(rb)}`);
  // Same weights, greedy: the same answer from either model.
  check(rb.message.content === ra.message.content, `alpha and beta differ: ${ra.message.content} / ${rb.message.content}`);
  ps = await ollama.ps();
  check(ps.models.length === 1 && ps.models[0].name === "beta:latest", `ps after beta (max-loaded 1): ${JSON.stringify(ps)}`);
  check(ps.models[0].context_length === 1024, `ps context_length ${ps.models[0].context_length}`);

  const show = await ollama.show({ model: "alpha:latest" });
  check(show.model_info["general.architecture"] === "qwen3", `show alpha: ${JSON.stringify(show.model_info)}`);

  try {
    await ollama.chat({ model: "gamma", messages });
    check(false, "unknown model succeeded");
  } catch (e) {
    check(e.status_code === 404 && e.message.includes("model 'gamma' not found"), `unknown model: ${e.status_code} ${e.message}`);
  }
  console.log("ollama models test passed");
} finally {
  const code = await server.stop();
  if (code !== 0) {
    console.error(server.stderr());
    check(false, `sniper serve exited with ${code}`);
  }
}
