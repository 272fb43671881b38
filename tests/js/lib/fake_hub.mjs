// SPDX-License-Identifier: MIT
// A Hugging Face-compatible hub on loopback for the `sniper pull` tests and the pull throughput
// measurement. It serves what huggingface.co serves to a client like huggingface_hub or llama.cpp:
//   GET /api/models/{owner}/{name}/tree/main?recursive=...  the file listing, paged (Link: rel="next")
//       [{"type":"file","path","size","oid","lfs":{"oid":<sha256>,"size","pointerSize"}}, {"type":"directory",...}]
//   GET /{owner}/{name}/resolve/main/{path}   302 to /cdn/{owner}/{name}/{path} (the CDN hop)
//   GET /cdn/...                              the bytes, with Range (206 + Content-Range)
// Errors as the hub gives them: 404 {"error":"Repository not found"}, 401 {"error":"Invalid credentials in
// Authorization header"} for a gated repository without the right Bearer token.
// Fault injection per file: dropAfter (cut the connection after N bytes, `times` requests),
// corrupt (serve bytes whose SHA-256 differs from the listing).
// Every request is logged in hub.requests: {method, url, range, auth}; hub.onCdn(repo, path), when set,
// runs as a file request arrives.
// Standalone: node fake_hub.mjs --port P --repo OWNER/NAME FILE... (serves files from disk).
import http from "node:http";
import { createHash } from "node:crypto";
import { closeSync, createReadStream, openSync, readFileSync, readSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Streams a file's SHA-256 (hex).
export function sha256File(file) {
  const h = createHash("sha256");
  const fd = openSync(file, "r");
  const buf = Buffer.alloc(8 << 20);
  for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0;) h.update(buf.subarray(0, n));
  closeSync(fd);
  return h.digest("hex");
}

export class FakeHub {
  constructor({ pageSize = 4 } = {}) {
    this.repos = new Map();  // "owner/name" -> { token, files: [{path, source, size, sha256, lfs, fault}] }
    this.requests = [];
    this.pageSize = pageSize;
  }

  // files: [{path, source (a file on disk) | data (Buffer), lfs = true, sha256 (default: of the content)}]
  addRepo(repo, files, { token = "" } = {}) {
    const entries = files.map((f) => {
      const size = f.data ? f.data.length : statSync(f.source).size;
      const sha = f.sha256 || (f.data ? createHash("sha256").update(f.data).digest("hex") : sha256File(f.source));
      return { path: f.path, source: f.source, data: f.data, size, sha256: sha, lfs: f.lfs !== false, fault: null };
    });
    this.repos.set(repo, { token, files: entries });
  }

  file(repo, p) {
    return this.repos.get(repo).files.find((f) => f.path === p);
  }
  // fault: {dropAfter: bytes, times: n} | {corrupt: true} | null
  setFault(repo, p, fault) {
    this.file(repo, p).fault = fault;
  }

  listen(port = 0) {
    this.server = http.createServer((req, res) => this.handle(req, res));
    return new Promise((resolve) => this.server.listen(port, "127.0.0.1", () => {
      this.port = this.server.address().port;
      this.url = `http://127.0.0.1:${this.port}`;
      resolve(this);
    }));
  }
  close() {
    this.server.closeAllConnections?.();
    return new Promise((resolve) => this.server.close(resolve));
  }

  json(res, status, body, headers = {}) {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  }

  authorized(req, repo) {
    return !repo.token || req.headers["authorization"] === `Bearer ${repo.token}`;
  }

  handle(req, res) {
    const url = new URL(req.url, this.url);
    this.requests.push({ method: req.method, url: req.url, range: req.headers["range"] || "", auth: req.headers["authorization"] || "" });
    let m = url.pathname.match(/^\/api\/models\/([^/]+\/[^/]+)\/tree\/main$/);
    if (m) return this.tree(req, res, decodeURIComponent(m[1]), url);
    m = url.pathname.match(/^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/);
    if (m) {
      const repo = this.repos.get(decodeURIComponent(m[1]));
      if (!repo) return this.json(res, 404, { error: "Repository not found" });
      if (!this.authorized(req, repo)) return this.json(res, 401, { error: "Invalid credentials in Authorization header" });
      const p = decodeURIComponent(m[2]);
      if (!repo.files.find((f) => f.path === p)) return this.json(res, 404, { error: "Entry not found" });
      res.writeHead(302, { location: `/cdn/${m[1]}/${m[2]}?signed=1` });
      return res.end();
    }
    m = url.pathname.match(/^\/cdn\/([^/]+\/[^/]+)\/(.+)$/);
    if (m) return this.cdn(req, res, decodeURIComponent(m[1]), decodeURIComponent(m[2]));
    this.json(res, 404, { error: "Not found" });
  }

  tree(req, res, repoName, url) {
    const repo = this.repos.get(repoName);
    if (!repo) return this.json(res, 404, { error: "Repository not found" });
    if (!this.authorized(req, repo)) return this.json(res, 401, { error: "Invalid credentials in Authorization header" });
    const all = [];
    const dirs = new Set();
    for (const f of repo.files) {
      const d = path.posix.dirname(f.path);
      if (d !== "." && !dirs.has(d)) {
        dirs.add(d);
        all.push({ type: "directory", oid: "0".repeat(40), size: 0, path: d });
      }
      const e = { type: "file", oid: createHash("sha1").update(f.path).digest("hex"), size: f.lfs ? 134 : f.size, path: f.path };
      if (f.lfs) e.lfs = { oid: f.sha256, size: f.size, pointerSize: 134 };
      all.push(e);
    }
    const cursor = Number(url.searchParams.get("cursor") || 0);
    const page = all.slice(cursor, cursor + this.pageSize);
    const headers = {};
    if (cursor + this.pageSize < all.length) {
      headers.link = `<${this.url}/api/models/${repoName}/tree/main?recursive=true&cursor=${cursor + this.pageSize}>; rel="next"`;
    }
    this.json(res, 200, page, headers);
  }

  cdn(req, res, repoName, p) {
    if (this.onCdn) this.onCdn(repoName, p);  // tests: e.g. fill the client's disk as the download starts
    const repo = this.repos.get(repoName);
    const f = repo && repo.files.find((x) => x.path === p);
    if (!f) return this.json(res, 404, { error: "Entry not found" });
    let start = 0;
    const range = req.headers["range"];
    if (range) {
      const rm = range.match(/^bytes=(\d+)-$/);
      if (!rm) return this.json(res, 416, { error: "bad range" });
      start = Number(rm[1]);
      if (start >= f.size) {
        res.writeHead(416, { "content-range": `bytes */${f.size}` });
        return res.end();
      }
    }
    const headers = { "content-type": "application/octet-stream", "content-length": f.size - start, "accept-ranges": "bytes" };
    if (range) headers["content-range"] = `bytes ${start}-${f.size - 1}/${f.size}`;
    res.writeHead(range ? 206 : 200, headers);
    const fault = f.fault;
    let body;
    if (f.data) {
      let data = f.data;
      if (fault && fault.corrupt) {
        data = Buffer.from(data);
        data[data.length >> 1] ^= 0x5a;
      }
      body = data.subarray(start);
    }
    if (fault && fault.dropAfter !== undefined && fault.times > 0) {
      fault.times -= 1;
      const n = Math.max(0, fault.dropAfter - start);
      const chunk = body ? body.subarray(0, n) : readFileSync(f.source).subarray(start, start + n);
      res.write(chunk, () => setTimeout(() => req.socket.destroy(), 20));
      return;
    }
    if (body) return res.end(body);
    const stream = createReadStream(f.source, { start, highWaterMark: 1 << 20 });
    if (fault && fault.corrupt) {
      let flipped = false;
      stream.on("data", (chunk) => {
        if (!flipped) {
          chunk = Buffer.from(chunk);
          chunk[0] ^= 0x5a;
          flipped = true;
        }
        if (!res.write(chunk)) {
          stream.pause();
          res.once("drain", () => stream.resume());
        }
      });
      stream.on("end", () => res.end());
      return;
    }
    stream.pipe(res);
  }
}

// Standalone use (the throughput measurement): node fake_hub.mjs --port P --repo OWNER/NAME FILE...
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  let port = 0, repo = "local/bench";
  const files = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === "--port") port = Number(args[++i]);
    else if (args[i] === "--repo") repo = args[++i];
    else files.push(args[i]);
  }
  const hub = new FakeHub();
  hub.addRepo(repo, files.map((f) => ({ path: path.basename(f), source: f })));
  await hub.listen(port);
  console.log(`fake hub: ${hub.url} serves ${repo}: ${files.map((f) => path.basename(f)).join(", ")}`);
}
