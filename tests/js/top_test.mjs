// SPDX-License-Identifier: MIT
// `sniper top` against a real `sniper serve` (stories260K, --api-key): `--once` prints one plain
// frame (no ANSI escape codes) with the model, residency, slots, request and token counts after a
// completion; a wrong key and an unreachable server exit 1 with a message; bad flags exit 2.
// usage: node top_test.mjs <sniper binary> <shared dir>
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { check, parseArgs, startServer } from "./lib/server.mjs";

const { bin, shared } = parseArgs("top_test.mjs <sniper binary> <shared dir>");
const top = (...args) => spawnSync(bin, ["top", ...args], { encoding: "utf8", timeout: 30000 });
const key = "top-key";
const server = await startServer(bin, ["-m", path.join(shared, "models/stories260K.gguf"), "--api-key", key, "--slots", "2"]);
let failed = false;
try {
  const res = await fetch(server.url + "/v1/completions", {
    method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` },
    body: JSON.stringify({ prompt: "Once upon a time", max_tokens: 8, temperature: 0 }),
  });
  check(res.ok, `completion returned ${res.status}`);
  const usage = (await res.json()).usage;

  const r = top("--url", server.url + "/", "--once", "--api-key", key);
  check(r.status === 0, `top --once exit ${r.status}: ${r.stderr}`);
  const frame = r.stdout;
  console.log(frame);
  check(!frame.includes("\x1b"), "--once output contains ANSI escape codes");
  check(/^model\s+stories260K/m.test(frame), "frame lacks the model line");
  check(/residency (resident|stream|mmap)/.test(frame), "frame lacks the residency");
  check(/^slots\s+\[[#.]+\] 0\/2 busy/m.test(frame), "frame lacks 'slots ... 0/2 busy'");
  check(/^requests\s+ok 1 /m.test(frame), "frame lacks 'requests ok 1'");
  check(new RegExp(`^tokens\\s+in ${usage.prompt_tokens}\\s+out ${usage.completion_tokens}\\s`, "m").test(frame),
    `frame lacks 'tokens in ${usage.prompt_tokens} out ${usage.completion_tokens}'`);
  for (const label of ["memory", "speed", "TTFT", "experts", "SSD", "io queue"]) {
    check(new RegExp(`^${label}\\s`, "m").test(frame), `frame lacks the ${label} line`);
  }

  const wrongKey = top("--url", server.url, "--once", "--api-key", "nope");
  check(wrongKey.status === 1 && /HTTP 401/.test(wrongKey.stderr), `wrong key: exit ${wrongKey.status} ${wrongKey.stderr}`);
  const badFlag = top("--interval", "0");
  check(badFlag.status === 2 && /--interval/.test(badFlag.stderr), `bad --interval: exit ${badFlag.status} ${badFlag.stderr}`);

  // A port nobody listens on: bind one, close it, point top at it.
  const port = await new Promise((resolve) => { const s = createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); }); });
  const down = top("--url", `http://127.0.0.1:${port}`, "--once");
  check(down.status === 1 && /cannot reach http:\/\/127\.0\.0\.1:\d+\/metrics/.test(down.stderr), `unreachable: exit ${down.status} ${down.stderr}`);
  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code}`);
  console.log("PASS top_test");
} catch (e) {
  failed = true;
  console.error("FAIL:", e && e.stack ? e.stack : e);
  console.error("--- server stderr (tail) ---\n" + server.stderr().slice(-4000));
} finally {
  await server.stop();
  if (failed) process.exitCode = 1;
}
