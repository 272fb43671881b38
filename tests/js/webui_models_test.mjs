// SPDX-License-Identifier: MIT
// The web UI with several models behind one server (`sniper serve --model a=... --model b=...`),
// in headless Debian chromium driven by playwright-core:
//  - a model picker lists both models (one model: no picker, the name alone, as js_webui checks);
//    the choice goes into the request's `model`, survives a reload, and is named in the reply;
//  - one speed and one time to first token per reply, the server's own (the response's
//    `timings`), and the live panel's "last reply" figures are the same numbers;
//  - figures that do not apply to a model in RAM (expert cache hit rate, SSD reads) say "n/a".
// usage: node webui_models_test.mjs <sniper binary> <shared dir>
import { chromium } from "playwright-core";
import { copyFileSync } from "node:fs";
import path from "node:path";
import { check, parseArgs, startServer, synthQwen3, tempDir } from "./lib/server.mjs";

const { bin, shared } = parseArgs("webui_models_test.mjs <sniper binary> <shared dir>");
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const dir = tempDir("sniper-webui-models-");
const first = synthQwen3(bin, shared, dir);
const second = path.join(dir, "second.gguf");
copyFileSync(first, second);
const server = await startServer(bin, ["--model", `alpha=${first}`, "--model", `beta=${second}`, "--ctx", "1024",
                                       "--max-loaded", "2"]);
let browser = null, failed = false;
const pageErrors = [];
try {
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 860 } })).newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  const bodies = [];
  page.on("request", (r) => { if (r.url().endsWith("/v1/chat/completions")) bodies.push(JSON.parse(r.postData() || "{}")); });
  await page.goto(server.url + "/");

  // The picker: both models, the first chosen; the plain name is hidden.
  await page.waitForFunction(() => !document.getElementById("model-select").hidden, null, { timeout: 10000 });
  const options = await page.$$eval("#model-select option", (os) => os.map((o) => o.value));
  check(JSON.stringify(options) === JSON.stringify(["alpha", "beta"]), `picker options ${JSON.stringify(options)}`);
  check(await page.$eval("#model-name", (e) => e.hidden), "the plain model name is still shown beside the picker");
  await page.selectOption("#model-select", "beta");
  await page.waitForFunction(() => /qwen3/.test(document.getElementById("model-info").textContent) ||
                                   /loads on the first message/.test(document.getElementById("model-info").textContent));

  // A reply from beta, greedy and long enough to have a decode speed.
  await page.click("#open-settings");
  await page.fill("#s-max", "24");
  await page.fill("#s-temp", "0");
  await page.click("#s-save");
  await page.fill("#input", "Say something.");
  await page.click("#send");
  await page.waitForFunction(() => {
    const s = document.querySelector("#messages .msg.assistant:last-of-type .stats");
    return s && /\d+ tokens/.test(s.textContent);
  }, null, { timeout: 60000 });
  check(bodies.length === 1 && bodies[0].model === "beta", `request model ${JSON.stringify(bodies.map((b) => b.model))}`);
  const stats = await page.textContent("#messages .msg.assistant:last-of-type .stats");
  console.log(`reply stats: ${stats}`);
  check(stats.startsWith("beta \u00b7 "), `the reply does not name its model: ${stats}`);
  const decode = stats.match(/([\d.]+) tok\/s decode/), ttft = stats.match(/first token (\d+) ms/);
  check(decode && ttft, `the reply has no server decode speed or time to first token: ${stats}`);
  check((stats.match(/tok\/s/g) || []).length === 1, `more than one speed in the reply: ${stats}`);

  // The live panel's last-reply figures are the reply's (after its next /metrics poll).
  await page.waitForFunction((want) => document.getElementById("m-speed").textContent.startsWith(want + " tok/s decode"),
                             decode[1], { timeout: 10000 });
  const panelTtft = parseInt(await page.textContent("#m-ttft"), 10);
  check(Math.abs(panelTtft - Number(ttft[1])) <= 1, `panel TTFT ${panelTtft} ms vs reply ${ttft[1]} ms`);

  // A model in RAM: no expert cache, no SSD reads.
  check((await page.textContent("#m-hit")).startsWith("n/a"), `hit rate ${await page.textContent("#m-hit")}`);
  check((await page.textContent("#m-ssd")).startsWith("n/a"), `SSD ${await page.textContent("#m-ssd")}`);

  // The choice survives a reload.
  await page.reload();
  await page.waitForFunction(() => !document.getElementById("model-select").hidden, null, { timeout: 10000 });
  check(await page.$eval("#model-select", (s) => s.value) === "beta", "the picker forgot the model after a reload");
  check(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
  console.log("ok: model picker, one speed and TTFT per reply (the server's), n/a where nothing streams");
} catch (e) {
  failed = true;
  console.error(e);
} finally {
  if (browser) await browser.close();
  const code = await server.stop();
  if (code !== 0) { console.error(`server exited ${code}`); failed = true; }
}
if (failed) process.exit(1);
