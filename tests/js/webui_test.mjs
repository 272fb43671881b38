// SPDX-License-Identifier: MIT
// The web UI (GET /) in headless Debian chromium driven by playwright-core, against `sniper serve`
// with a synthetic Qwen3 model (real chat template, random weights):
//  - the page loads with no script errors and names the model;
//  - a sent message streams: the assistant bubble's text grows over >= 2 observations, then the
//    reply completes with a stats line; the request carries temperature, max_tokens and
//    chat_template_kwargs.enable_thinking from the settings / thinking toggle;
//  - the live panel shows numbers from /metrics;
//  - Stop aborts a long generation: the bubble stops growing, says "stopped", and the server
//    frees its slot and counts the request as cancelled;
//  - conversations persist in localStorage across a reload; switching and deleting work;
//  - rendering: a scripted SSE reply (page.route) with reasoning_content and markdown renders a
//    collapsed <details>, headings, lists, links, a code block with a copy button; model output
//    with HTML / javascript: links is escaped (no XSS);
//  - media, against a second server with the gemma4v fixture (syn-gemma4moe-small + --mmproj): the
//    reference 96x64 PNG attached with the button, pasted and dropped shows decoded thumbnails; a
//    WAV is refused by name (the projector has no audio); the request carries the image as an
//    image_url data URL equal to the file; the reply completes; a corrupt PNG gets the server's
//    error and the next image turn works; the thumbnail survives a reload;
//  - audio, against a third server with the gemma4a reference case (syn-gemma4e-small + the
//    projector synth writes, the 2 s tone WAV): attached with the button it shows an audio player,
//    goes as an input_audio part holding the file's base64, and the streamed reply equals
//    `sniper run --audio` on the same plain-format prompt.
// Screenshots go to argv[3] (or $SNIPER_SCREENSHOT), default ./webui.png; a second one with the
// rendered markdown goes next to it (-markdown.png).
// usage: node webui_test.mjs <sniper binary> <shared dir> [screenshot.png]
import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { check, fetchMetrics, parseArgs, startServer, synthQwen3, tempDir } from "./lib/server.mjs";

const { bin, shared, rest } = parseArgs("webui_test.mjs <sniper binary> <shared dir> [screenshot.png]");
const shot = path.resolve(rest[0] || process.env.SNIPER_SCREENSHOT || "webui.png");
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";

const dir = tempDir("sniper-webui-");
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const server = await startServer(bin, ["-m", synthQwen3(bin, shared, dir), "--ctx", "2048"]);
let browser = null, failed = false, mmServer = null;
const pageErrors = [];
try {
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const context = await browser.newContext({ viewport: { width: 1400, height: 860 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  const chatBodies = [];
  page.on("request", (r) => {
    if (r.url().endsWith("/v1/chat/completions")) chatBodies.push(JSON.parse(r.postData() || "{}"));
  });

  await page.goto(server.url + "/");
  check((await page.title()) === "Sniper", `title ${await page.title()}`);
  await page.waitForFunction(() => document.getElementById("model-name").textContent === "qwen3-synth", null, { timeout: 10000 });

  // Settings: temperature 0, 120 max tokens, a system prompt.
  async function setSettings({ maxTokens, temperature, system }) {
    await page.click("#open-settings");
    await page.fill("#s-max", String(maxTokens));
    await page.fill("#s-temp", String(temperature));
    await page.fill("#s-system", system);
    await page.click("#s-save");
    await page.waitForFunction(() => !document.getElementById("settings").open);
  }
  await setSettings({ maxTokens: 120, temperature: 0, system: "You are terse." });
  await page.check("#thinking-toggle");

  // Records the last assistant bubble's text length at each DOM change.
  const startRecorder = () => page.evaluate(() => {
    window.__lengths = [];
    const obs = new MutationObserver(() => {
      const c = document.querySelector("#messages .msg.assistant.streaming .content");
      if (c) window.__lengths.push(c.textContent.length);
    });
    obs.observe(document.getElementById("messages"), { childList: true, subtree: true, characterData: true });
    window.__stopRecorder = () => obs.disconnect();
  });
  const idle = () => page.waitForFunction(() => !document.querySelector(".msg.streaming") && !document.getElementById("send").hidden,
    null, { timeout: 60000 });

  await startRecorder();
  await page.fill("#input", "Hello <b>there</b>, write **one** line.");
  await page.press("#input", "Enter");
  await page.waitForSelector(".msg.assistant.streaming", { timeout: 10000 });
  await idle();
  const lengths = await page.evaluate(() => { window.__stopRecorder(); return window.__lengths; });
  const growth = [...new Set(lengths.filter((n) => n > 0))];
  check(growth.length >= 2 && growth.every((n, i) => i === 0 || n > growth[i - 1]),
    `assistant text did not grow over >= 2 observations: ${JSON.stringify(lengths.slice(0, 40))}`);
  const reply = await page.textContent("#messages .msg.assistant:last-of-type .content");
  check(reply.length > 0, "assistant reply is empty");
  const stats = await page.textContent("#messages .msg.assistant:last-of-type .stats");
  check(/\d+ tokens/.test(stats), `stats line ${JSON.stringify(stats)}`);
  const userHtml = await page.innerHTML("#messages .msg.user .body");
  check(userHtml.includes("&lt;b&gt;there&lt;/b&gt;"), `user text not escaped: ${userHtml}`);
  const body0 = chatBodies[0];
  check(body0 && body0.stream === true && body0.temperature === 0 && body0.max_tokens === 120, `request ${JSON.stringify(body0)}`);
  check(body0.chat_template_kwargs && body0.chat_template_kwargs.enable_thinking === true, "thinking toggle not sent");
  check(body0.messages[0].role === "system" && body0.messages[0].content === "You are terse.", "system prompt not sent");
  console.log(`streamed ${growth.length} distinct lengths; final ${reply.length} chars; stats: ${stats}`);

  // Live panel: numbers from /metrics (the generated-token counter moved, RSS is shown).
  await page.waitForFunction(() => /^\d+(\.\d+)? (KiB|MiB|GiB)/.test(document.getElementById("m-rss").textContent) &&
    /^0 \/ 1/.test(document.getElementById("m-slots").textContent) && /^\d/.test(document.getElementById("m-live").textContent) &&
    /^1 ok/.test(document.getElementById("m-req").textContent) && /^\d/.test(document.getElementById("m-speed").textContent),
    null, { timeout: 10000 });
  const panel = await page.evaluate(() => ["m-live", "m-speed", "m-rss", "m-slots", "m-hit", "m-ssd", "m-req"]
    .map((id) => document.getElementById(id).textContent).join(" | "));
  check(/^[1-9]/.test(panel.split(" | ")[1]), `decode speed of the last request not shown: ${panel}`);
  console.log(`live panel: ${panel}`);

  // Stop a long generation (thinking off this time).
  await page.uncheck("#thinking-toggle");
  await setSettings({ maxTokens: 1900, temperature: 0.9, system: "You are terse." });
  await page.fill("#input", "Tell me a very long story.");
  await page.click("#send");
  await page.waitForFunction(() => {
    const c = document.querySelector(".msg.assistant.streaming .content");
    return c && c.textContent.length > 40;
  }, null, { timeout: 30000 });
  await page.click("#stop");
  await idle();
  const stoppedStats = await page.textContent("#messages .msg.assistant:last-of-type .stats");
  check(stoppedStats.includes("stopped"), `stats after stop: ${stoppedStats}`);
  const stoppedLen = (await page.textContent("#messages .msg.assistant:last-of-type .content")).length;
  check(chatBodies[1].chat_template_kwargs.enable_thinking === false, "thinking off not sent");
  let m = null;
  for (let i = 0; i < 100; i++) {  // the server notices the closed connection at its next token
    m = await fetchMetrics(server.url);
    if (m.get("sniper_slots_busy") === 0 && m.sum("sniper_requests_total", { status: "cancelled" }) >= 1) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  check(m.get("sniper_slots_busy") === 0, "the server still generates after Stop");
  check(m.sum("sniper_requests_total", { status: "cancelled" }) >= 1, "the stopped request is not counted as cancelled");
  const generated = m.get("sniper_generated_tokens_total");
  check(generated < 1500, `server generated ${generated} tokens: Stop did not cut the 1900-token request short`);
  check((await page.textContent("#messages .msg.assistant:last-of-type .content")).length === stoppedLen, "text grew after Stop");
  console.log(`stopped after ${stoppedLen} chars; server generated ${generated} tokens in total`);

  await page.waitForFunction(() => /^0 \/ 1/.test(document.getElementById("m-slots").textContent) &&
    /1 cancelled/.test(document.getElementById("m-req").textContent), null, { timeout: 10000 });
  await page.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);

  // Conversations: a second one, reload, switch, delete.
  await setSettings({ maxTokens: 8, temperature: 0, system: "" });
  await page.click("#new-chat");
  await page.fill("#input", "Second conversation here");
  await page.press("#input", "Enter");
  await page.waitForSelector(".msg.assistant.streaming", { timeout: 10000 }).catch(() => {});
  await idle();
  const titles = () => page.$$eval("#conv-list li .title", (els) => els.map((e) => e.textContent));
  let t = await titles();
  check(t.length === 2 && t[0] === "Second conversation here" && t[1].startsWith("Hello <b>there</b>"), `titles ${JSON.stringify(t)}`);
  await page.reload();
  await page.waitForSelector("#conv-list li");
  t = await titles();
  check(t.length === 2 && t[0] === "Second conversation here", `titles after reload ${JSON.stringify(t)}`);
  check((await page.textContent("#messages .msg.user .body")) === "Second conversation here", "current conversation not restored");
  await page.click("#conv-list li:nth-child(2) .title");
  check((await page.$$("#messages .msg.user")).length === 2, "switching did not show the first conversation's 2 user messages");
  await page.click("#conv-list li:nth-child(1) .del", { force: true });
  t = await titles();
  check(t.length === 1 && t[0].startsWith("Hello"), `titles after delete ${JSON.stringify(t)}`);
  await page.reload();
  await page.waitForSelector("#conv-list li");
  check((await titles()).length === 1, "delete did not persist");

  // Rendering paths with a scripted stream: thinking, markdown, code + copy, escaping.
  const md = "# Plan\n\nSome **bold**, *italic* and `x<y` code.\n\n- one\n- two\n\n1. first\n2. second\n\n" +
    "[safe](https://example.com) [evil](javascript:alert(1)) <img src=x onerror=\"window.__xss=1\">\n\n" +
    "```js\nconst a = \"<script>window.__xss=2</script>\";\n```\n";
  const events = [{ role: "assistant", content: "" }, { reasoning_content: "Let me " }, { reasoning_content: "think <i>hard</i>." },
    ...md.match(/[\s\S]{1,7}/g).map((s) => ({ content: s }))];
  const sse = events.map((d) => `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta: d, finish_reason: null }] })}\n\n`).join("") +
    `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n` +
    `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 5, completion_tokens: 42, total_tokens: 47 } })}\n\n` +
    "data: [DONE]\n\n";
  await page.route("**/v1/chat/completions", (route) => route.fulfill({ status: 200, contentType: "text/event-stream", body: sse }));
  await page.click("#new-chat");
  await page.fill("#input", "Show me markdown");
  await page.press("#input", "Enter");
  await idle();
  await page.unroute("**/v1/chat/completions");
  const last = "#messages .msg.assistant:last-of-type";
  const r = await page.evaluate((sel) => {
    const el = document.querySelector(sel);
    const d = el.querySelector("details.think");
    return {
      details: !!d && !d.hidden, open: d && d.open, think: d && d.querySelector(".think-body").innerHTML,
      h1: el.querySelector(".content h1")?.textContent, strong: el.querySelector(".content strong")?.textContent,
      em: el.querySelector(".content em")?.textContent, code: el.querySelector(".content p code")?.textContent,
      ul: el.querySelectorAll(".content ul li").length, ol: el.querySelectorAll(".content ol li").length,
      links: [...el.querySelectorAll(".content a")].map((a) => a.getAttribute("href")),
      pre: el.querySelector(".content pre code")?.textContent, copy: !!el.querySelector(".content pre button.copy"),
      img: el.querySelectorAll("img, script").length, xss: window.__xss, stats: el.querySelector(".stats").textContent,
    };
  }, last);
  check(r.details && r.open === false, `thinking not a collapsed <details>: ${JSON.stringify(r)}`);
  check(r.think.includes("&lt;i&gt;hard&lt;/i&gt;"), `reasoning not escaped: ${r.think}`);
  check(r.h1 === "Plan" && r.strong === "bold" && r.em === "italic" && r.code === "x<y", `inline markdown: ${JSON.stringify(r)}`);
  check(r.ul === 2 && r.ol === 2, `lists: ${r.ul} ${r.ol}`);
  check(JSON.stringify(r.links) === JSON.stringify(["https://example.com"]), `links ${JSON.stringify(r.links)}`);
  check(r.pre === "const a = \"<script>window.__xss=2</script>\";" && r.copy, `code block: ${JSON.stringify(r.pre)} copy ${r.copy}`);
  check(r.img === 0 && r.xss === undefined, "model output injected markup");
  check(r.stats.includes("42 tokens"), `stats ${r.stats}`);
  await page.click(`${last} .content pre button.copy`);
  await page.waitForFunction((sel) => document.querySelector(sel + " .content pre button.copy").textContent === "copied", last);
  await page.click(`${last} details.think summary`);
  const mdShot = shot.replace(/\.png$/, "") + "-markdown.png";
  await page.screenshot({ path: mdShot });
  console.log(`screenshot: ${mdShot}`);

  // Media against the gemma4v fixture.
  mmServer = await startServer(bin, ["-m", `${shared}/models/syn-gemma4moe-small.gguf`, "--mmproj",
    `${shared}/models/mm/syn-gemma4v-small.mmproj.gguf`, "--ctx", "512"]);
  const png = `${shared}/reference/mm/syn-gemma4v-small/img.png`;
  const pngB64 = fs.readFileSync(png).toString("base64");
  const mpage = await context.newPage();
  mpage.on("pageerror", (e) => pageErrors.push(String(e)));
  const mmBodies = [];
  mpage.on("request", (r) => { if (r.url().endsWith("/v1/chat/completions")) mmBodies.push(JSON.parse(r.postData() || "{}")); });
  await mpage.goto(mmServer.url + "/");
  await mpage.waitForFunction(() => document.getElementById("model-info").textContent.includes("reads images"), null, { timeout: 10000 });
  await mpage.click("#open-settings");
  await mpage.fill("#s-max", "6");
  await mpage.fill("#s-temp", "0");
  await mpage.click("#s-save");
  const thumbs = (sel) => mpage.$$eval(sel, (els) => els.map((e) => [e.naturalWidth, e.naturalHeight]));
  await mpage.setInputFiles("#file-input", png);
  await mpage.waitForFunction(() => document.querySelectorAll("#attachments img.thumb").length === 1 &&
    document.querySelector("#attachments img.thumb").naturalWidth > 0);
  check(JSON.stringify(await thumbs("#attachments img.thumb")) === "[[96,64]]", `thumbnail ${JSON.stringify(await thumbs("#attachments img.thumb"))}`);
  // Paste and drop the same bytes as files.
  await mpage.evaluate(async () => {
    const blob = await (await fetch(document.querySelector("#attachments img.thumb").src)).blob();
    const transfer = (name) => { const dt = new DataTransfer(); dt.items.add(new File([blob], name, { type: "image/png" })); return dt; };
    document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer("pasted.png"), bubbles: true, cancelable: true }));
    document.getElementById("messages").dispatchEvent(new DragEvent("drop", { dataTransfer: transfer("dropped.png"), bubbles: true, cancelable: true }));
  });
  await mpage.waitForFunction(() => document.querySelectorAll("#attachments img.thumb").length === 3);
  const names = await mpage.$$eval("#attachments .att .name", (els) => els.map((e) => e.textContent));
  check(JSON.stringify(names) === JSON.stringify(["img.png", "pasted.png", "dropped.png"]), `attachments ${JSON.stringify(names)}`);
  await mpage.click("#attachments .att:nth-child(3) .remove");
  await mpage.click("#attachments .att:nth-child(2) .remove");
  // Audio: this projector reads no audio, so the UI refuses it by name and keeps the image.
  const wav = Buffer.concat([Buffer.from("RIFF"), Buffer.alloc(4), Buffer.from("WAVEfmt "), Buffer.alloc(24)]);
  await mpage.setInputFiles("#file-input", { name: "note.wav", mimeType: "audio/wav", buffer: wav });
  await mpage.waitForFunction(() => document.getElementById("composer-note").textContent.includes("cannot read audio"));
  check((await mpage.$$("#attachments .att")).length === 1, "the refused audio was attached");
  const mmIdle = () => mpage.waitForFunction(() => !document.querySelector(".msg.streaming") && !document.getElementById("send").hidden,
    null, { timeout: 60000 });
  await mpage.fill("#input", "What is in this image?");
  await mpage.press("#input", "Enter");
  await mmIdle();
  const sent = mmBodies[0].messages[mmBodies[0].messages.length - 1].content;
  check(Array.isArray(sent) && sent.length === 2 && sent[0].type === "text" && sent[0].text === "What is in this image?" &&
    sent[1].type === "image_url" && sent[1].image_url.url === "data:image/png;base64," + pngB64, `image request ${JSON.stringify(sent).slice(0, 200)}`);
  check((await mpage.$$("#messages .msg.error")).length === 0, `error bubble: ${await mpage.textContent("#messages")}`);
  check(/\d+ tokens/.test(await mpage.textContent("#messages .msg.assistant:last-of-type .stats")), "image reply has no stats");
  check(JSON.stringify(await thumbs("#messages .msg.user img.thumb")) === "[[96,64]]", "no thumbnail in the conversation");
  check((await mpage.$$("#attachments .att")).length === 0, "attachments not cleared after sending");
  // A corrupt PNG: the server's 400 shows as an error; the next image turn works.
  await mpage.setInputFiles("#file-input", { name: "bad.png", mimeType: "image/png", buffer: Buffer.from("\x89PNG\r\n\x1a\nnot really") });
  await mpage.waitForSelector("#attachments .att");
  await mpage.fill("#input", "And this one?");
  await mpage.press("#input", "Enter");
  await mmIdle();
  const err = await mpage.textContent("#messages .msg.error");
  check(/png/i.test(err) && /400/.test(err), `corrupt PNG error: ${err}`);
  await mpage.setInputFiles("#file-input", png);
  await mpage.waitForSelector("#attachments .att");
  await mpage.fill("#input", "Describe it again.");
  await mpage.press("#input", "Enter");
  await mmIdle();
  check((await mpage.$$("#messages .msg.error")).length === 0, "the image turn after the error failed");
  const userTexts = await mpage.$$eval("#messages .msg.user", (els) => els.map((e) => e.textContent));
  check(userTexts.length === 3 && userTexts[1].includes("refused by the server") && !userTexts[2].includes("refused"),
    `the refused turn is not marked: ${JSON.stringify(userTexts)}`);
  const urls = mmBodies[2].messages.flatMap((m) => Array.isArray(m.content) ? m.content : []).filter((p) => p.type === "image_url").map((p) => p.image_url.url);
  check(mmBodies[2].messages.length === 3 && urls.length === 2 && urls.every((u) => u === "data:image/png;base64," + pngB64),
    `the refused turn was sent again: ${mmBodies[2].messages.length} messages, ${urls.length} images`);
  const mediaShot = shot.replace(/\.png$/, "") + "-media.png";
  await mpage.screenshot({ path: mediaShot });
  console.log(`screenshot: ${mediaShot}`);
  await mpage.reload();
  await mpage.waitForSelector("#messages .msg.user img.thumb");
  await mpage.waitForFunction(() => [...document.querySelectorAll("#messages .msg.user img.thumb")].filter((i) => i.naturalWidth === 96).length === 2);
  console.log(`media: ${mmBodies.length} image requests; reply ${JSON.stringify(await mpage.textContent("#messages .msg.assistant:last-of-type .stats"))}`);
  check((await mmServer.stop()) === 0, "the media server did not exit cleanly");

  // Audio against the gemma4a reference case (syn-gemma4e-small + the projector synth writes for
  // tests/media/reference/gemma4e-gemma4a-q8_0, its 2 s tone): the WAV attached with the button shows
  // an audio player, goes as an input_audio part holding the file's base64, and the streamed reply
  // is what `sniper run --audio` generates for the same plain-format prompt.
  const lmA = `${shared}/models/syn-gemma4e-small.gguf`;
  const projA = path.join(dir, "gemma4a.gguf");
  execFileSync(bin, ["synth", "--mmproj", "gemma4a", "--type", "q8_0", "--seed", "22", "--layers", "3", "--for", lmA,
    "-o", projA], { stdio: ["ignore", "ignore", "inherit"] });
  const toneWav = path.join(dir, "tone.wav");
  execFileSync("/usr/bin/python3", ["-c", "import sys; sys.path.insert(0, sys.argv[1]); import audio_signals as a\n" +
    "open(sys.argv[2], 'wb').write(a.wav(a.tone(32000)))", path.join(repoRoot, "scripts/mm"), toneWav]);
  mmServer = await startServer(bin, ["-m", lmA, "--mmproj", projA, "--ctx", "512"]);
  const apage = await context.newPage();
  apage.on("pageerror", (e) => pageErrors.push(String(e)));
  const audioReplies = [];
  apage.on("response", (r) => { if (r.url().endsWith("/v1/chat/completions")) audioReplies.push(r); });
  const audioBodies = [];
  apage.on("request", (r) => { if (r.url().endsWith("/v1/chat/completions")) audioBodies.push(JSON.parse(r.postData() || "{}")); });
  await apage.goto(mmServer.url + "/");
  await apage.waitForFunction(() => document.getElementById("model-info").textContent.includes("reads audio"), null, { timeout: 10000 });
  await apage.click("#open-settings");
  await apage.fill("#s-max", "6");
  await apage.fill("#s-temp", "0");
  await apage.fill("#s-system", "");
  await apage.click("#s-save");
  await apage.setInputFiles("#file-input", toneWav);
  await apage.waitForSelector("#attachments audio");
  await apage.fill("#input", "Transcribe.");
  await apage.press("#input", "Enter");
  await apage.waitForFunction(() => !document.querySelector(".msg.streaming") && !document.getElementById("send").hidden,
    null, { timeout: 60000 });
  check((await apage.$$("#messages .msg.error")).length === 0, `audio turn error: ${await apage.textContent("#messages")}`);
  check((await apage.$$("#messages .msg.user audio")).length === 1, "no audio player in the conversation");
  const aMsgs = audioBodies[0].messages;
  const aParts = aMsgs[aMsgs.length - 1].content;
  const toneB64 = fs.readFileSync(toneWav).toString("base64");
  check(Array.isArray(aParts) && aParts.some((p) => p.type === "input_audio" && p.input_audio.format === "wav" &&
    p.input_audio.data === toneB64), `audio request ${JSON.stringify(aParts).slice(0, 200)}`);
  // The plain format the server renders for a model without a chat template (generation_prologue.cpp).
  let plain = "";
  for (const m of aMsgs) {
    const text = typeof m.content === "string" ? m.content
      : m.content.map((p) => p.type === "text" ? p.text : "<__media__>").join("");
    plain += (m.role === "user" ? "User: " : m.role === "assistant" ? "Assistant: " : "System: ") + text + "\n";
  }
  plain += "Assistant:";
  const want = execFileSync(bin, ["run", "-m", lmA, "--mmproj", projA, "--audio", toneWav, "-p", plain, "-n", "6",
    "--temp", "0", "--no-echo"], { stdio: ["ignore", "pipe", "ignore"] }).toString().replace(/\n$/, "");  // run ends with a newline
  let streamed = "";
  // Chromium hands the event stream's body over read as Latin-1 (no charset on
  // text/event-stream): its bytes are the characters' codes, read again as UTF-8.
  let audioSse = await audioReplies[0].text();
  if (![...audioSse].some((ch) => ch.codePointAt(0) > 0xff)) audioSse = Buffer.from(audioSse, "latin1").toString("utf8");
  for (const line of audioSse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta;
    if (delta && typeof delta.content === "string") streamed += delta.content;
  }
  check(want.length > 0 && streamed === want, `audio reply ${JSON.stringify(streamed)} != run --audio ${JSON.stringify(want)}`);
  console.log(`audio: reply ${JSON.stringify(streamed)} equals run --audio's`);
  check((await mmServer.stop()) === 0, "the audio server did not exit cleanly");

  check(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
  const code = await server.stop();
  check(code === 0, `sniper serve exited with ${code} after SIGTERM`);
  console.log("PASS webui_test");
} catch (e) {
  failed = true;
  console.error("FAIL:", e && e.stack ? e.stack : e);
  if (pageErrors.length) console.error("page errors:", pageErrors);
  console.error("--- server stderr (tail) ---\n" + server.stderr().slice(-4000));
  if (mmServer) console.error("--- media server stderr (tail) ---\n" + mmServer.stderr().slice(-4000));
} finally {
  if (browser) await browser.close();
  await server.stop();
  if (mmServer) await mmServer.stop();
  if (failed) process.exitCode = 1;
}
