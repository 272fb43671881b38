// SPDX-License-Identifier: MIT
// `sniper pull` against hostile hub replies (issue 40 findings 4 and 10). Two servers on
// loopback are two origins: "hub" (HF_ENDPOINT) and "elsewhere" (another port). Checks:
// - a Link rel="next" to elsewhere is refused before elsewhere is contacted (no Authorization
//   reaches it); to gopher:// or file:// too, and nothing of /etc/passwd shows in the error;
// - a redirect of a file to elsewhere (the CDN hop) is followed without the token, and the
//   download completes; a redirect to ftp://, file:// or gopher:// is refused, not followed;
// - an error body from elsewhere is not echoed (only its origin and status);
// - the hub itself gets the token;
// - split parts of 2^63 bytes, sizes summing past 2^64, and names with NUL, control characters,
//   "..", backslashes or an absolute path are refused with clear errors, before any download.
// Before the fix: the Link and redirect targets received "Authorization: Bearer" and gopher,
// file and ftp targets were fetched (the start of /etc/passwd appeared in the error).
// usage: node pull_trust_test.mjs <sniper binary> <shared dir>
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { check, parseArgs, tempDir } from "./lib/server.mjs";

const { bin } = parseArgs("pull_trust_test.mjs <sniper binary> <shared dir>");
const dir = tempDir("sniper-pull-trust-");
const home = path.join(dir, "home");
mkdirSync(home);
const TOKEN = "hf_s3cret_token";

// A server that answers with `route(req, url)` -> {status, headers, body} and logs requests.
function server(route) {
  const s = { requests: [] };
  s.http = http.createServer((req, res) => {
    s.requests.push({ url: req.url, auth: req.headers["authorization"] || "" });
    const url = new URL(req.url, s.url);
    const r = route(req, url) || { status: 404, body: '{"error":"Not found"}' };
    res.writeHead(r.status, { "content-type": "application/json", ...(r.headers || {}) });
    res.end(r.body || "");
  });
  return new Promise((resolve) => s.http.listen(0, "127.0.0.1", () => {
    s.url = `http://127.0.0.1:${s.http.address().port}`;
    resolve(s);
  }));
}

const data = Buffer.from("GGUF fake model bytes for the pull trust test\n");
const sha = createHash("sha256").update(data).digest("hex");
const entry = (p, size = data.length, oid = sha) => ({ type: "file", oid: "0".repeat(40), size: 134, path: p,
  lfs: { oid, size, pointerSize: 134 } });

let hub, elsewhere;
// Per-repository behavior of the hub: listing pages, and where resolve/ redirects.
const repos = {};
// Listings with sizes past 2^53, written by hand (JSON.stringify cannot keep them exact).
const rawEntry = (p, size) =>
  `{"type":"file","oid":"${"0".repeat(40)}","size":134,"path":"${p}","lfs":{"oid":"${sha}","size":${size},"pointerSize":134}}`;
const rawBodies = {
  "test/huge": `[${rawEntry("h-Q4_K_M-00001-of-00002.gguf", "9223372036854775808")},` +
               `${rawEntry("h-Q4_K_M-00002-of-00002.gguf", "9223372036854775808")}]`,
  "test/sum": `[${[1, 2, 3, 4].map((i) => rawEntry(`s-Q4_K_M-0000${i}-of-00004.gguf`, "4611686018427387904")).join(",")}]`,
};
elsewhere = await server((req, url) => {
  if (url.pathname === "/cdn/ok.gguf") return { status: 200, headers: { "content-type": "application/octet-stream" }, body: data };
  if (url.pathname === "/cdn/denied.gguf") return { status: 403, body: "SECRET-BODY-FROM-ELSEWHERE /srv/internal/path" };
  if (url.pathname.startsWith("/api/")) return { status: 200, body: JSON.stringify([entry("page2-Q4_K_M.gguf")]) };
  return null;
});
hub = await server((req, url) => {
  const m = url.pathname.match(/^\/api\/models\/(test\/[^/]+)\/tree\/main$/);
  if (m && rawBodies[m[1]]) return { status: 200, body: rawBodies[m[1]] };
  if (m && repos[m[1]]) {
    const r = repos[m[1]];
    return { status: 200, headers: r.link ? { link: `<${r.link}>; rel="next"` } : {}, body: JSON.stringify(r.files) };
  }
  const f = url.pathname.match(/^\/(test\/[^/]+)\/resolve\/main\/(.+)$/);
  if (f && repos[f[1]] && repos[f[1]].location) return { status: 302, headers: { location: repos[f[1]].location }, body: "redirect" };
  return null;
});

function run(args, extraEnv = {}) {
  const env = { PATH: process.env.PATH, HOME: home, SNIPER_HOME: path.join(dir, "store"), HF_ENDPOINT: hub.url,
                HF_TOKEN: TOKEN, SNIPER_PULL_RETRIES: "0", ...extraEnv };
  return new Promise((resolve) => {
    const p = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 60000);
    p.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}
const expectFail = (r, re, what) => {
  check(r.code !== 0, `${what}: should fail but exited 0\n${r.err}`);
  check(re.test(r.err), `${what}: stderr does not match ${re}:\n${r.err}`);
};
const noTokenElsewhere = (what) =>
  check(elsewhere.requests.every((q) => q.auth === ""), `${what}: Authorization reached elsewhere: ${JSON.stringify(elsewhere.requests)}`);

// 1. Pagination to another origin: refused before it is contacted.
{
  repos["test/link-origin"] = { files: [entry("a-Q4_K_M.gguf")], link: `${elsewhere.url}/api/models/test/x/tree/main?cursor=1` };
  const before = elsewhere.requests.length;
  const r = await run(["pull", "test/link-origin"]);
  expectFail(r, /next page is on another origin.*refused/, "Link to another origin");
  check(elsewhere.requests.length === before, "elsewhere was not contacted");
  check(hub.requests.some((q) => q.url.startsWith("/api/models/test/link-origin") && q.auth === `Bearer ${TOKEN}`),
        "the hub itself got the token");
  console.log("ok: Link rel=next to another origin refused");
}

// 2. Pagination to gopher:// and file://: refused, nothing fetched.
for (const link of ["gopher://127.0.0.1:1/_GET%20/", "file:///etc/passwd", "ftp://127.0.0.1/x"]) {
  repos["test/link-scheme"] = { files: [entry("a-Q4_K_M.gguf")], link };
  const r = await run(["pull", "test/link-scheme"]);
  expectFail(r, /only https.*allowed|only https and http/, `Link to ${link}`);
  check(!/root:/.test(r.err), `nothing of /etc/passwd in the error:\n${r.err}`);
  console.log(`ok: Link rel=next to ${link.split(":")[0]}:// refused`);
}

// 3. The CDN hop to another origin: followed, without the token; the download completes.
{
  repos["test/cdn"] = { files: [entry("ok-Q4_K_M.gguf")], location: `${elsewhere.url}/cdn/ok.gguf` };
  const r = await run(["pull", "test/cdn"]);
  check(r.code === 0, `pull through a redirect to another origin: exit ${r.code}\n${r.err}`);
  check(elsewhere.requests.some((q) => q.url === "/cdn/ok.gguf"), "the CDN was asked for the file");
  noTokenElsewhere("redirect to the CDN");
  console.log("ok: redirect to another origin followed without the token");
}

// 4. Redirects to other schemes: refused, not followed.
for (const location of ["ftp://127.0.0.1/model.gguf", "file:///etc/passwd", "gopher://127.0.0.1:1/_x"]) {
  repos["test/redir-scheme"] = { files: [entry("r-Q4_K_M.gguf")], location };
  const r = await run(["pull", "test/redir-scheme"]);
  expectFail(r, /redirect.*only https.*allowed|redirect.*only https and http/, `redirect to ${location}`);
  check(!/root:/.test(r.err), `nothing of /etc/passwd in the error:\n${r.err}`);
  console.log(`ok: redirect to ${location.split(":")[0]}:// refused`);
}

// 5. An error from another origin: its origin and status, never its body.
{
  repos["test/denied"] = { files: [entry("d-Q4_K_M.gguf")], location: `${elsewhere.url}/cdn/denied.gguf` };
  const r = await run(["pull", "test/denied"]);
  expectFail(r, /HTTP 403/, "403 from another origin");
  check(!/SECRET-BODY|\/srv\/internal/.test(r.err), `the foreign body is not echoed:\n${r.err}`);
  check(r.err.includes(new URL(elsewhere.url).host), `the error names the origin:\n${r.err}`);
  noTokenElsewhere("403 from the CDN");
  console.log("ok: foreign error bodies are not echoed");
}

// 6. Sizes and names from the hub (finding 10), all refused before any download.
{
  const cdnBefore = elsewhere.requests.length;
  expectFail(await run(["pull", "test/huge:Q4_K_M"]), /size 9223372036854775808, more than the largest file size/,
             "2^63-byte parts");
  expectFail(await run(["pull", "test/sum:Q4_K_M"]), /add up to more than 2\^64 bytes/, "sizes summing past 2^64");
  for (const [name, re] of [["evil\u0000.gguf", /evil\\x00\.gguf/], ["a\u001b[2J-Q4_K_M.gguf", /control character 0x1b/],
                            ["../escape-Q4_K_M.gguf", /'\.\.' component/], ["/srv/hub/abs-Q4_K_M.gguf", /absolute path/],
                            ["dir\\win-Q4_K_M.gguf", /backslash/]]) {
    repos["test/names"] = { files: [entry(name)] };
    const r = await run(["pull", "test/names"]);
    expectFail(r, re, `hub name ${JSON.stringify(name)}`);
    check(!r.err.includes("/srv/hub"), `absolute server paths are not printed:\n${r.err}`);
  }
  check(elsewhere.requests.length === cdnBefore, "nothing was downloaded for the refused listings");
  console.log("ok: hub sizes and names checked");
}

hub.http.close();
elsewhere.http.close();
console.log("pull_trust_test: ok");
