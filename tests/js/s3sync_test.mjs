// SPDX-License-Identifier: MIT
// Context files in S3-compatible object storage (issue 23 point 6), against a real S3 server on
// loopback (the npm package s3rver) behind a small proxy that
//   - verifies every request's SigV4 signature with the official signer (@smithy/signature-v4,
//     the one @aws-sdk/client-s3 uses) and the body against x-amz-content-sha256, answering 403
//     SignatureDoesNotMatch / 400 XAmzContentSHA256Mismatch like AWS (s3rver checks only the key id);
//   - on demand cuts an upload or a download of a .ctx object midway, or flips a byte of one.
// Covers: `sniper context push|pull|list` round trip, checked with @aws-sdk/client-s3 reading what
// Sniper wrote (bytes, metadata, manifest); the server's POST /v1/context/upload|download then
// /v1/context/load; wrong key id and wrong secret (403 with S3's code); an unreachable endpoint; a
// push cut midway leaves no manifest (pull refuses, list omits it, even over an older complete
// push); a multipart push (small parts) gives the same object, and one cut midway leaves nothing; a pull cut midway or corrupted in transit or at rest leaves no file; a context of another
// model is refused.
// usage: node s3sync_test.mjs <sniper binary> <shared dir>
import S3rver from "s3rver";
import { S3Client, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { SignatureV4 } from "@smithy/signature-v4";
import { spawn } from "node:child_process";
import { createHash, createHmac } from "node:crypto";
import http from "node:http";
import { readFileSync, readdirSync, existsSync, copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { check, parseArgs, startServer, tempDir } from "./lib/server.mjs";

const { bin, shared } = parseArgs("s3sync_test.mjs <sniper binary> <shared dir>");
const stories = path.join(shared, "models/stories260K.gguf");
const otherModel = path.join(shared, "models/stories260K-Q8_0.gguf");
const dir = tempDir("sniper-s3sync-");
const KEY = "S3RVER", SECRET = "S3RVER", REGION = "us-east-1", BUCKET = "ctx-bucket";

// The hash class @smithy/signature-v4 expects (SHA-256, HMAC when given a secret).
class NodeSha256 {
  constructor(secret) { this.h = secret ? createHmac("sha256", secret) : createHash("sha256"); }
  update(data) { this.h.update(data); }
  async digest() { return new Uint8Array(this.h.digest()); }
}
const signer = new SignatureV4({ credentials: { accessKeyId: KEY, secretAccessKey: SECRET }, region: REGION, service: "s3",
                                 sha256: NodeSha256, uriEscapePath: false });

function s3Error(res, status, code, message) {
  res.writeHead(status, { "content-type": "application/xml" });
  res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
}

// Recomputes the request's signature with the official signer; "" when it matches, else why not.
async function verifySignature(req, upstreamHost) {
  const auth = req.headers["authorization"] || "";
  const m = auth.match(/^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/);
  if (!m) return `malformed Authorization header '${auth}'`;
  if (m[1] !== KEY) return "";  // an unknown key id is s3rver's to refuse (InvalidAccessKeyId)
  const signed = m[4].split(";");
  for (const h of ["host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"]) {
    if (req.headers[h] !== undefined && !signed.includes(h)) return `header ${h} is not signed (SignedHeaders=${m[4]})`;
  }
  const headers = {};
  for (const h of signed) if (h !== "x-amz-date") headers[h] = req.headers[h];
  const url = new URL(req.url, `http://${req.headers.host}`);
  const query = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const d = req.headers["x-amz-date"] || "";
  const date = new Date(`${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`);
  const out = await signer.sign({ method: req.method, protocol: "http:", hostname: url.hostname, port: Number(url.port),
                                  path: url.pathname, query, headers, body: undefined },
                                { signingDate: date, signableHeaders: new Set(signed) });
  const want = out.headers["authorization"].match(/Signature=([0-9a-f]{64})/)[1];
  return want === m[5] ? "" : `signature ${m[5]} but the official signer computes ${want} (signed headers ${m[4]})`;
}

// The proxy: mode is "" (pass through), "cut-put", "cut-get" or "flip-get" (the .ctx data object only).
const proxy = { mode: "", signed: 0, upstream: 0, tokens: new Set() };
const proxyServer = http.createServer(async (req, res) => {
  const isData = req.url.split("?")[0].endsWith(".ctx");
  const chunks = [];
  let received = 0;
  const declared = Number(req.headers["content-length"] || 0);
  req.on("data", (c) => {
    chunks.push(c);
    received += c.length;
    if (proxy.mode === "cut-put" && isData && req.method === "PUT" && received >= declared / 2) req.socket.destroy();
  });
  await new Promise((r) => req.on("end", r).on("close", r));
  if (req.socket.destroyed) return;
  const body = Buffer.concat(chunks);
  const why = await verifySignature(req);
  if (why) return s3Error(res, 403, "SignatureDoesNotMatch", why);
  proxy.signed++;
  if (req.headers["x-amz-security-token"]) proxy.tokens.add(req.headers["x-amz-security-token"]);
  const claimed = req.headers["x-amz-content-sha256"] || "";
  if (/^[0-9a-f]{64}$/.test(claimed) && createHash("sha256").update(body).digest("hex") !== claimed) {
    return s3Error(res, 400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.");
  }
  const up = http.request({ host: "127.0.0.1", port: proxy.upstream, method: req.method, path: req.url, headers: req.headers }, (ur) => {
    const parts = [];
    ur.on("data", (c) => parts.push(c));
    ur.on("end", () => {
      let out = Buffer.concat(parts);
      const get = req.method === "GET" && isData && ur.statusCode === 200;
      if (get && proxy.mode === "flip-get") out[out.length >> 1] ^= 0x40;
      res.writeHead(ur.statusCode, ur.headers);
      if (get && proxy.mode === "cut-get") {
        res.write(out.subarray(0, out.length >> 1));
        setTimeout(() => res.socket.destroy(), 50);
        return;
      }
      res.end(out);
    });
  });
  up.on("error", (e) => s3Error(res, 502, "ProxyError", String(e)));
  up.end(body);
});

// Runs the CLI asynchronously (the proxy and s3rver live in this process's event loop).
function sniper(args, env = {}) {
  return new Promise((resolve) => {
    const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 60000);
    p.on("close", (code) => {
      clearTimeout(timer);
      // Under ci-asan a sanitizer report fails the test even where a failure is expected.
      check(!/AddressSanitizer|LeakSanitizer|runtime error:/.test(err), `sniper ${args.join(" ")}: sanitizer report:\n${err}`);
      resolve({ code, out, err });
    });
  });
}
function expectFail(r, what, ...needles) {
  check(r.code !== 0, `${what}: succeeded but should have failed; stdout: ${r.out}`);
  for (const n of needles) check(r.err.includes(n), `${what}: stderr lacks '${n}':\n${r.err}`);
}
const noTemps = (d) => !existsSync(d) || readdirSync(d).every((f) => !f.startsWith("."));

async function main() {
  const s3dir = path.join(dir, "s3");
  mkdirSync(s3dir);
  const s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: s3dir, configureBuckets: [{ name: BUCKET }] });
  proxy.upstream = (await s3.run()).port;
  await new Promise((r) => proxyServer.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${proxyServer.address().port}`;
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: KEY, AWS_SECRET_ACCESS_KEY: SECRET, AWS_REGION: REGION,
                               AWS_ENDPOINT_URL: endpoint });
  delete process.env.AWS_ENDPOINT_URL_S3;
  delete process.env.AWS_SESSION_TOKEN;
  const sdk = new S3Client({ endpoint: `http://127.0.0.1:${proxy.upstream}`, region: REGION, forcePathStyle: true,
                             credentials: { accessKeyId: KEY, secretAccessKey: SECRET } });
  const getObject = async (key) => {
    const o = await sdk.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return { body: Buffer.from(await o.Body.transformToByteArray()), meta: o.Metadata || {} };
  };
  const exists = async (key) => {
    try { await sdk.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })); return true; } catch (e) {
      if (e.$metadata?.httpStatusCode === 404) return false;
      throw e;
    }
  };

  // A saved context from the server (a few hundred tokens, so a cut lands mid-object).
  const storeA = path.join(dir, "a"), storeB = path.join(dir, "b");
  const server = await startServer(bin, ["-m", stories, "--context-dir", storeA]);
  try {
    const prompt = "Once upon a time there was a little girl named Lily who loved to play in the park. ".repeat(12);
    let r = await fetch(`${server.url}/v1/context/save`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "demo", prompt }) });
    check(r.ok, `save: ${r.status} ${await r.text()}`);
    const local = readFileSync(path.join(storeA, "demo.ctx"));
    const sha = createHash("sha256").update(local).digest("hex");
    console.log(`saved demo: ${local.length} bytes`);

    // Round trip through the CLI, checked with the official SDK.
    const remote = "s3://" + BUCKET + "/team/contexts";
    let c = await sniper(["context", "push", "demo", "--remote", remote, "--context-dir", storeA]);
    check(c.code === 0, `push failed: ${c.err}`);
    check(c.out.includes(sha), `push output lacks the sha256: ${c.out}`);
    const obj = await getObject("team/contexts/demo.ctx");
    check(obj.body.equals(local), "the object differs from the local context file");
    check(obj.meta.sha256 === sha, `x-amz-meta-sha256 is ${obj.meta.sha256}, want ${sha}`);
    const manifest = JSON.parse((await getObject("team/contexts/demo.ctx.json")).body.toString());
    check(manifest.format === "sniper-context" && manifest.name === "demo" && manifest.bytes === local.length &&
          manifest.sha256 === sha && /^[0-9a-f]{16}$/.test(manifest.model_fingerprint) && manifest.n_tokens > 100,
          `manifest ${JSON.stringify(manifest)}`);
    c = await sniper(["context", "list", "--remote", remote]);
    check(c.code === 0 && /^demo\s+\d+ bytes/m.test(c.out), `list: ${c.code} ${c.out} ${c.err}`);
    c = await sniper(["context", "pull", "demo", "--remote", remote, "--context-dir", storeB, "-m", stories]);
    check(c.code === 0, `pull failed: ${c.err}`);
    check(readFileSync(path.join(storeB, "demo.ctx")).equals(local), "the pulled file differs from the pushed one");
    check(proxy.signed >= 6, `only ${proxy.signed} requests passed signature verification`);
    console.log(`round trip ok (${proxy.signed} requests, every signature verified by @smithy/signature-v4)`);

    // The server's endpoints: upload, download (into its own store), load.
    const post = async (route, body) => {
      const res = await fetch(`${server.url}${route}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      return { status: res.status, json: await res.json() };
    };
    let s = await post("/v1/context/upload", { name: "demo", remote: `s3://${BUCKET}/srv` });
    check(s.status === 200 && s.json.sha256 === sha && s.json.bytes === local.length, `upload ${JSON.stringify(s)}`);
    check((await getObject("srv/demo.ctx")).body.equals(local), "server upload: object differs");
    s = await post("/v1/context/download", { name: "demo", remote: `s3://${BUCKET}/srv` });
    check(s.status === 200 && s.json.sha256 === sha, `download ${JSON.stringify(s)}`);
    s = await post("/v1/context/load", { name: "demo" });
    check(s.status === 200 && s.json.n_tokens === manifest.n_tokens, `load after download ${JSON.stringify(s)}`);
    s = await post("/v1/context/download", { name: "nothing", remote: `s3://${BUCKET}/srv` });
    check(s.status === 404 && s.json.error.code === "context_not_found", `download missing ${JSON.stringify(s)}`);
    s = await post("/v1/context/upload", { name: "../x", remote: `s3://${BUCKET}/srv` });
    check(s.status === 400 && s.json.error.param === "name", `upload bad name ${JSON.stringify(s)}`);
    s = await post("/v1/context/upload", { name: "demo", remote: "http://elsewhere/x" });
    check(s.status === 400 && s.json.error.param === "remote", `upload bad remote ${JSON.stringify(s)}`);
    s = await post("/v1/context/upload", { name: "demo" });
    check(s.status === 400 && s.json.error.param === "remote", `upload without remote ${JSON.stringify(s)}`);

    // Wrong credentials: an unknown key id (s3rver) and a wrong secret (the verifying proxy).
    c = await sniper(["context", "pull", "demo", "--remote", remote, "--context-dir", storeB], { AWS_ACCESS_KEY_ID: "WRONGKEY" });
    expectFail(c, "unknown key id", "403", "InvalidAccessKeyId", "AWS_ACCESS_KEY_ID");
    c = await sniper(["context", "push", "demo", "--remote", remote, "--context-dir", storeA], { AWS_SECRET_ACCESS_KEY: "wrong" });
    expectFail(c, "wrong secret", "403", "SignatureDoesNotMatch");
    c = await sniper(["context", "list", "--remote", remote], { AWS_ENDPOINT_URL: "http://127.0.0.1:1" });
    expectFail(c, "unreachable endpoint", "http://127.0.0.1:1");
    // Temporary credentials: AWS_SESSION_TOKEN travels as a signed x-amz-security-token.
    c = await sniper(["context", "list", "--remote", remote], { AWS_SESSION_TOKEN: "session-token-1" });
    check(c.code === 0 && proxy.tokens.has("session-token-1"), `session token: ${c.err} ${[...proxy.tokens]}`);
    c = await sniper(["context", "list", "--remote", remote], { AWS_ACCESS_KEY_ID: "" });
    expectFail(c, "no credentials", "AWS_ACCESS_KEY_ID");

    // A context of another model is refused before its data is downloaded.
    c = await sniper(["context", "pull", "demo", "--remote", remote, "--context-dir", path.join(dir, "m"), "-m", otherModel]);
    expectFail(c, "other model", "another model");
    check(!existsSync(path.join(dir, "m", "demo.ctx")), "a context of another model was written");

    // A push cut midway leaves no manifest: fresh name, and over the complete push of "demo".
    copyFileSync(path.join(storeA, "demo.ctx"), path.join(storeA, "cut.ctx"));
    proxy.mode = "cut-put";
    for (const name of ["cut", "demo"]) {
      c = await sniper(["context", "push", name, "--remote", remote, "--context-dir", storeA]);
      expectFail(c, `push ${name} cut midway`, `s3://${BUCKET}/team/contexts/${name}.ctx`);
    }
    proxy.mode = "";
    for (const name of ["cut", "demo"]) {
      check(!(await exists(`team/contexts/${name}.ctx.json`)), `a cut push of ${name} left a manifest`);
      c = await sniper(["context", "pull", name, "--remote", remote, "--context-dir", path.join(dir, "c")]);
      expectFail(c, `pull after a cut push of ${name}`, "manifest", "missing");
    }
    c = await sniper(["context", "list", "--remote", remote]);
    check(c.code === 0 && !/^(cut|demo)\s/m.test(c.out), `list shows an incomplete context:\n${c.out}`);
    check(!existsSync(path.join(dir, "c", "demo.ctx")) && noTemps(path.join(dir, "c")), "a refused pull left a file");
    c = await sniper(["context", "push", "demo", "--remote", remote, "--context-dir", storeA]);
    check(c.code === 0, `push again: ${c.err}`);

    // Multipart (64 KiB parts here; 64 MiB by default): the same object, and a cut part leaves
    // neither an object nor a manifest.
    const parts = { SNIPER_S3_PART_BYTES: "65536" };
    const before = proxy.signed;
    c = await sniper(["context", "push", "demo", "--remote", `s3://${BUCKET}/mp`, "--context-dir", storeA], parts);
    check(c.code === 0, `multipart push: ${c.err}`);
    check(proxy.signed - before >= 1 + 1 + 4 + 1 + 1, `multipart push made only ${proxy.signed - before} requests`);
    const mp = await getObject("mp/demo.ctx");
    check(mp.body.equals(local) && mp.meta.sha256 === sha, "the multipart object differs from the local file");
    c = await sniper(["context", "pull", "demo", "--remote", `s3://${BUCKET}/mp`, "--context-dir", path.join(dir, "mp")]);
    check(c.code === 0 && readFileSync(path.join(dir, "mp", "demo.ctx")).equals(local), `multipart pull: ${c.err}`);
    proxy.mode = "cut-put";
    c = await sniper(["context", "push", "cut", "--remote", `s3://${BUCKET}/mp`, "--context-dir", storeA], parts);
    proxy.mode = "";
    expectFail(c, "multipart push cut midway", "part");
    check(!(await exists("mp/cut.ctx")) && !(await exists("mp/cut.ctx.json")), "a cut multipart push left an object");
    c = await sniper(["context", "push", "demo", "--remote", remote, "--context-dir", storeA], { SNIPER_S3_PART_BYTES: "12" });
    expectFail(c, "bad part size", "SNIPER_S3_PART_BYTES");

    // A pull cut midway, or corrupted in transit, or corrupted at rest: refused, no file left.
    for (const mode of ["cut-get", "flip-get"]) {
      proxy.mode = mode;
      const d = path.join(dir, mode);
      c = await sniper(["context", "pull", "demo", "--remote", remote, "--context-dir", d]);
      expectFail(c, `pull ${mode}`, "s3://" + BUCKET);
      if (mode === "flip-get") expectFail(c, "pull flip-get", "corrupt", "sha256");
      check(!existsSync(path.join(d, "demo.ctx")) && noTemps(d), `pull ${mode} left a file: ${existsSync(d) ? readdirSync(d) : []}`);
    }
    proxy.mode = "";
    const tampered = Buffer.from(local);
    tampered[tampered.length - 100] ^= 1;
    await sdk.send(new PutObjectCommand({ Bucket: BUCKET, Key: "team/contexts/demo.ctx", Body: tampered }));
    c = await sniper(["context", "pull", "demo", "--remote", remote, "--context-dir", storeB]);
    expectFail(c, "pull tampered", "corrupt", "sha256");
    check(readFileSync(path.join(storeB, "demo.ctx")).equals(local), "a refused pull replaced the verified local file");
    check(noTemps(storeB), "a refused pull left a temp file");
    const code = await server.stop();
    check(code === 0, `sniper serve exited with ${code}`);

    // The server's own credentials and endpoint: refused (502 remote_forbidden) or unreachable
    // (502 remote_unreachable), never a 200.
    for (const [env, want] of [[{ AWS_ACCESS_KEY_ID: "WRONGKEY" }, "remote_forbidden"],
                               [{ AWS_ENDPOINT_URL: "http://127.0.0.1:1" }, "remote_unreachable"]]) {
      const saved = { ...process.env };
      Object.assign(process.env, env);
      const bad = await startServer(bin, ["-m", stories, "--context-dir", storeA]);
      Object.assign(process.env, saved);
      try {
        const res = await fetch(`${bad.url}/v1/context/upload`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "demo", remote }) });
        const j = await res.json();
        check(res.status === 502 && j.error.code === want, `server upload with ${JSON.stringify(env)}: ${res.status} ${JSON.stringify(j)}`);
        if (want === "remote_forbidden") check(j.error.message.includes("InvalidAccessKeyId"), j.error.message);
      } finally {
        await bad.stop();
      }
    }
  } catch (e) {
    console.error("--- server stderr (tail) ---\n" + server.stderr().slice(-4000));
    throw e;
  } finally {
    await server.stop();
    proxyServer.close();
    await s3.close();
  }
}

try {
  await main();
  console.log("PASS s3sync_test");
} catch (e) {
  console.error("FAIL:", e && e.stack ? e.stack : e);
  process.exitCode = 1;
}
