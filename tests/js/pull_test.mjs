// SPDX-License-Identifier: MIT
// `sniper pull`, `list`, `rm` and `-hf` against a Hugging Face-compatible hub on loopback
// (lib/fake_hub.mjs: tree API paged with Link headers, resolve -> 302 -> CDN with Range, LFS
// sha256). Covers: the default choice (Q4_K_M) with progress output, a tag (case-insensitive),
// a split set pulled as one choice, a dropped connection resumed by the automatic retry, a pull
// interrupted for good then resumed by the next pull (Range from the part's size), 404 on the
// repository and on the tag (the message lists the tags), 401 without / with a wrong HF_TOKEN and
// success with the right one, a checksum mismatch (the part is deleted, nothing is renamed), a
// store already filled (no download), reuse of a file from the Hugging Face hub cache (hard link,
// no download), list, rm by tag and by repository, and `run -hf` online and with the hub down.
// usage: node pull_test.mjs <sniper binary> <shared dir>
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, copyFileSync, statSync, readdirSync, writeFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { check, parseArgs, tempDir } from "./lib/server.mjs";
import { FakeHub, sha256File } from "./lib/fake_hub.mjs";

const { bin, shared } = parseArgs("pull_test.mjs <sniper binary> <shared dir>");
const models = path.join(shared, "models");
const dir = tempDir("sniper-pull-");
const home = path.join(dir, "home");        // HOME: no real caches leak in
const store = path.join(dir, "store");      // SNIPER_HOME
mkdirSync(home);

const hub = new FakeHub({ pageSize: 3 });
const REPO = "test/tiny-GGUF";
const split = readFileSync(path.join(models, "syn-llama-Q2_K.gguf"));
const half = split.length >> 1;
hub.addRepo(REPO, [
  { path: "README.md", data: Buffer.from("# tiny\n"), lfs: false },
  { path: "tiny-Q8_0.gguf", source: path.join(models, "stories260K-Q8_0.gguf") },
  { path: "tiny-Q4_K_M.gguf", source: path.join(models, "syn-llama-Q4_K_M.gguf") },
  { path: "Q2_K/tiny-Q2_K-00001-of-00002.gguf", data: split.subarray(0, half) },
  { path: "Q2_K/tiny-Q2_K-00002-of-00002.gguf", data: split.subarray(half) },
  { path: "mmproj-tiny-F16.gguf", data: Buffer.alloc(100) },
]);
hub.addRepo("test/gated", [{ path: "g-Q8_0.gguf", source: path.join(models, "stories260K-Q8_0.gguf") }], { token: "s3cret" });
hub.addRepo("test/corrupt", [{ path: "c-Q8_0.gguf", source: path.join(models, "stories260K-Q8_0.gguf") }]);
hub.setFault("test/corrupt", "c-Q8_0.gguf", { corrupt: true });
await hub.listen();

// The hub is served from this process's event loop, so the child runs asynchronously.
function run(args, extraEnv = {}) {
  const env = { PATH: process.env.PATH, HOME: home, SNIPER_HOME: store, HF_ENDPOINT: hub.url, SNIPER_PULL_RETRIES: "3", ...extraEnv };
  return new Promise((resolve) => {
    const p = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 120000);
    p.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}
const storePath = (p) => path.join(store, "models", REPO, p);
const cdnRequests = (p) => hub.requests.filter((r) => r.url.startsWith(`/cdn/${REPO}/${p}`));
const expectOk = (r, what) => check(r.code === 0, `${what}: exit ${r.code}\nstdout: ${r.out}\nstderr: ${r.err}`);
const expectFail = (r, re, what) => {
  check(r.code !== 0, `${what}: should fail but exited 0\n${r.err}`);
  check(re.test(r.err), `${what}: stderr does not match ${re}:\n${r.err}`);
};

// 1. No tag: Q4_K_M, with progress, through the paged listing and the redirect.
{
  const r = await run(["pull", REPO]);
  expectOk(r, "pull default");
  check(r.out.trim() === storePath("tiny-Q4_K_M.gguf"), `pull prints the path, got '${r.out.trim()}'`);
  check(/Q4_K_M, the default/.test(r.err), `the choice is explained:\n${r.err}`);
  check(/100\.0%/.test(r.err) && /MB\/s/.test(r.err) && /ETA/.test(r.err), `progress shows bytes, rate and ETA:\n${r.err}`);
  check(sha256File(storePath("tiny-Q4_K_M.gguf")) === hub.file(REPO, "tiny-Q4_K_M.gguf").sha256, "Q4_K_M bytes");
  check(hub.requests.some((q) => q.url.includes("cursor=")), "the listing was read across pages");
  check(hub.requests.some((q) => q.url.startsWith(`/${REPO}/resolve/main/tiny-Q4_K_M.gguf`)), "the file came through resolve/");
  check(!existsSync(storePath("tiny-Q4_K_M.gguf") + ".part"), "no part left");
  console.log("ok: default choice Q4_K_M with progress");
}

// 2. Tag, case-insensitive; the connection drops midway and the automatic retry resumes it.
{
  hub.setFault(REPO, "tiny-Q8_0.gguf", { dropAfter: 150000, times: 1 });
  const r = await run(["pull", `${REPO}:q8_0`]);
  expectOk(r, "pull q8_0 with a dropped connection");
  check(/retrying/.test(r.err), `the retry is reported:\n${r.err}`);
  const reqs = cdnRequests("tiny-Q8_0.gguf");
  check(reqs.length === 2, `two CDN requests, got ${reqs.length}`);
  const m = reqs[1].range.match(/^bytes=(\d+)-$/);
  check(m && Number(m[1]) > 0 && Number(m[1]) <= 150000, `the retry resumed with a Range, got '${reqs[1].range}'`);
  check(sha256File(storePath("tiny-Q8_0.gguf")) === hub.file(REPO, "tiny-Q8_0.gguf").sha256, "Q8_0 bytes after resume");
  console.log("ok: tag q8_0, dropped connection resumed by the retry");
}

// 3. A split set, interrupted for good (no retries), then resumed by the next pull.
{
  const p1 = "Q2_K/tiny-Q2_K-00001-of-00002.gguf", p2 = "Q2_K/tiny-Q2_K-00002-of-00002.gguf";
  hub.setFault(REPO, p1, { dropAfter: 100000, times: 1 });
  const r = await run(["pull", `${REPO}:Q2_K`], { SNIPER_PULL_RETRIES: "0" });
  expectFail(r, /partial download .* is kept .* next pull resumes it/, "interrupted pull");
  const part = storePath(p1) + ".part";
  check(existsSync(part) && statSync(part).size > 0, "the part is kept");
  check(!existsSync(storePath(p1)), "an interrupted file never gets its final name");
  const partSize = statSync(part).size;
  const l = await run(["list"]);
  expectOk(l, "list with a partial");
  check(/tiny-Q2_K-00001-of-00002\.gguf .*\(partial\)/.test(l.out), `list marks the partial:\n${l.out}`);
  const r2 = await run(["pull", `${REPO}:Q2_K`]);
  expectOk(r2, "resumed pull");
  check(/2 split parts/.test(r2.err), `the split set is one choice:\n${r2.err}`);
  const last = cdnRequests(p1).at(-1);
  check(last.range === `bytes=${partSize}-`, `resumed from the part's size ${partSize}, got '${last.range}'`);
  check(/resum/.test(r2.err), `the resume is reported:\n${r2.err}`);
  check(Buffer.concat([readFileSync(storePath(p1)), readFileSync(storePath(p2))]).equals(split), "split parts' bytes");
  console.log("ok: split set, interrupted pull resumed by the next one");
}

// 4. 404 on the repository and on the tag (the tags that exist are listed).
{
  expectFail(await run(["pull", "nobody/nothing"]), /nobody\/nothing not found .*404/, "404 repository");
  expectFail(await run(["pull", `${REPO}:Q3_K_S`]), /no file with quant tag 'Q3_K_S'; tags that exist: Q8_0, Q4_K_M, Q2_K/,
             "404 tag");
  expectFail(await run(["pull", "not-a-repo"]), /not a hub repository/, "malformed reference");
  console.log("ok: 404 repository and tag");
}

// 5. A gated repository: 401 without a token, 401 with a wrong one, success with the right one.
{
  expectFail(await run(["pull", "test/gated"]), /401.*HF_TOKEN is not set/, "401 without token");
  expectFail(await run(["pull", "test/gated"], { HF_TOKEN: "wrong" }), /401.*HF_TOKEN was sent but the hub refused it/,
             "401 wrong token");
  expectOk(await run(["pull", "test/gated"], { HF_TOKEN: "s3cret" }), "gated with the token");
  check(hub.requests.some((q) => q.url.startsWith("/api/models/test/gated") && q.auth === "Bearer s3cret"), "Bearer sent");
  console.log("ok: 401 and HF_TOKEN");
}

// 6. Checksum mismatch: the part is deleted and nothing gets the final name.
{
  const r = await run(["pull", "test/corrupt"]);
  expectFail(r, /checksum mismatch for c-Q8_0\.gguf.*download was deleted/, "checksum mismatch");
  const d = path.join(store, "models", "test/corrupt");
  const left = existsSync(d) ? readdirSync(d) : [];
  check(left.length === 0, `nothing left of the corrupt download: ${left}`);
  console.log("ok: checksum mismatch");
}

// 7. A store already filled: no download at all.
{
  const before = hub.requests.filter((q) => q.url.startsWith("/cdn/")).length;
  const r = await run(["pull", `${REPO}:Q8_0`]);
  expectOk(r, "pull of a stored file");
  check(/already in the store/.test(r.err), `reported as stored:\n${r.err}`);
  check(hub.requests.filter((q) => q.url.startsWith("/cdn/")).length === before, "no file request");
  console.log("ok: store already filled");
}

// 8. list, then rm by tag (both split parts) and reuse from the Hugging Face hub cache.
{
  const l = await run(["list"]);
  expectOk(l, "list");
  check(/test\/tiny-GGUF\s+tiny-Q8_0\.gguf\s+370\.3 KiB\s+Q8_0\s+\S+tiny-Q8_0\.gguf/.test(l.out), `list row:\n${l.out}`);
  check(/Q2_K\/tiny-Q2_K-00002-of-00002\.gguf/.test(l.out) && /test\/gated/.test(l.out), `list rows:\n${l.out}`);
  const rm = await run(["rm", `${REPO}:Q2_K`]);
  expectOk(rm, "rm tag");
  check(/2 file\(s\) of test\/tiny-GGUF:Q2_K removed/.test(rm.out), `rm output:\n${rm.out}`);
  check(!existsSync(path.join(store, "models", REPO, "Q2_K")), "rm removes the emptied directory");
  expectFail(await run(["rm", `${REPO}:Q2_K`]), /no file with quant tag 'Q2_K'/, "rm of a missing tag");

  // The HF hub cache holds Q2_K: pull links it instead of downloading.
  const snap = path.join(home, ".cache/huggingface/hub/models--test--tiny-GGUF/snapshots/0123abc/Q2_K");
  mkdirSync(snap, { recursive: true });
  writeFileSync(path.join(snap, "tiny-Q2_K-00001-of-00002.gguf"), split.subarray(0, half));
  writeFileSync(path.join(snap, "tiny-Q2_K-00002-of-00002.gguf"), split.subarray(half));
  const before = hub.requests.filter((q) => q.url.startsWith("/cdn/")).length;
  const r = await run(["pull", `${REPO}:Q2_K`]);
  expectOk(r, "pull reusing the HF cache");
  check(/reused Q2_K\/tiny-Q2_K-00001-of-00002\.gguf from .*huggingface.*SHA-256 verified/.test(r.err), `reuse reported:\n${r.err}`);
  check(hub.requests.filter((q) => q.url.startsWith("/cdn/")).length === before, "no download when reused");
  check(statSync(storePath("Q2_K/tiny-Q2_K-00001-of-00002.gguf")).ino === statSync(path.join(snap, "tiny-Q2_K-00001-of-00002.gguf")).ino,
        "the store hard-links the cached file");
  console.log("ok: list, rm by tag, reuse from the HF hub cache");
}

// 9. run -hf: from the store, then with the hub down (the store's copy is used).
{
  const args = ["run", "-hf", `${REPO}:Q8_0`, "-p", "Once upon a time", "-n", "4", "--temp", "0"];
  const r = await run(args);
  expectOk(r, "run -hf");
  check(r.out.length > 0, "run -hf generated text");
  const deadEnv = { HF_ENDPOINT: "http://127.0.0.1:1" };
  const r2 = await run(args, deadEnv);
  expectOk(r2, "run -hf with the hub down");
  check(/from the store without checking the hub/.test(r2.err), `offline fallback reported:\n${r2.err}`);
  expectFail(await run(["run", "-hf", "test/unknown:Q8_0", "-p", "x", "-n", "1"], deadEnv), /unknown|Couldn't connect|connect/i,
             "run -hf of an unknown model with the hub down");
  expectFail(await run(["run", "-m", "x.gguf", "-hf", REPO, "-p", "x"]), /either -m PATH or -hf/, "-m and -hf together");
  console.log("ok: run -hf online and offline");
}

// 10. rm a whole repository; rm of an unknown repository.
{
  const rm = await run(["rm", REPO]);
  expectOk(rm, "rm repository");
  check(!existsSync(path.join(store, "models", REPO)), "the repository directory is gone");
  check(existsSync(path.join(home, ".cache/huggingface/hub/models--test--tiny-GGUF/snapshots/0123abc/Q2_K/tiny-Q2_K-00001-of-00002.gguf")),
        "rm leaves the other cache alone");
  expectFail(await run(["rm", REPO]), /has no files of test\/tiny-GGUF/, "rm of a missing repository");
  console.log("ok: rm repository");
}

await hub.close();
console.log("pull_test: all passed");
