// SPDX-License-Identifier: MIT
#include "server/model_sources.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "server/server_options.h"

namespace sniper::server {

namespace fs = std::filesystem;

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

Status check_name(const std::string& name) {
  if (name.empty()) return make_error("a model name must not be empty");
  for (char c : name) {
    if (c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      return make_error("the model name '%s' must not contain '/' or whitespace", name.c_str());
    }
  }
  return Status();
}

}  // namespace

bool parse_split_stem(const std::string& stem, std::string* base, int* part, int* n_parts) {
  // ...-NNNNN-of-NNNNN: llama-gguf-split's naming (five digits each).
  constexpr size_t kTail = 5 + 4 + 5;  // "00001" "-of-" "00003"
  if (stem.size() < kTail + 2 || stem[stem.size() - kTail - 1] != '-') return false;
  const std::string tail = stem.substr(stem.size() - kTail);
  const std::string a = tail.substr(0, 5), of = tail.substr(5, 4), b = tail.substr(9);
  if (of != "-of-" || !all_digits(a) || !all_digits(b)) return false;
  const int p = std::stoi(a), n = std::stoi(b);
  if (p < 1 || n < 1 || p > n) return false;
  *base = stem.substr(0, stem.size() - kTail - 1);
  *part = p;
  *n_parts = n;
  return true;
}

Result<std::vector<ModelSource>> scan_models_dir(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return make_error("--models %s: cannot read the directory: %s", dir.c_str(), ec.message().c_str());
  std::map<std::string, ModelSource> by_name;
  std::map<std::string, std::string> first_file;  // name -> the file that gave it (for errors)
  std::map<std::string, uint64_t> split_bytes;    // split models: all parts' bytes
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return make_error("--models %s: %s", dir.c_str(), ec.message().c_str());
    const fs::path p = it->path();
    if (p.extension() != ".gguf" || !it->is_regular_file(ec)) continue;
    const std::string stem = p.stem().string();
    std::string name = stem, base;
    int part = 0, n_parts = 0;
    const bool split = parse_split_stem(stem, &base, &part, &n_parts);
    if (split) {
      split_bytes[base] += file_size_or_zero(p);
      if (part != 1) continue;
      name = base;
    }
    if (by_name.count(name) != 0) {
      return make_error("--models %s: '%s' and '%s' both give the model name '%s'", dir.c_str(),
                        first_file[name].c_str(), p.filename().c_str(), name.c_str());
    }
    first_file[name] = p.filename().string();
    by_name[name] = ModelSource{name, p.string(), split ? 0 : file_size_or_zero(p)};
  }
  std::vector<ModelSource> out;
  for (auto& [name, src] : by_name) {
    if (auto s = split_bytes.find(name); s != split_bytes.end() && src.size_bytes == 0) src.size_bytes = s->second;
    out.push_back(src);
  }
  if (out.empty()) return make_error("--models %s: no *.gguf file in the directory", dir.c_str());
  return out;
}

Result<ModelSource> parse_model_spec(const std::string& spec) {
  std::error_code ec;
  // A path that exists is a path, even with '=' in it.
  const size_t eq = fs::is_regular_file(spec, ec) ? std::string::npos : spec.find('=');
  ModelSource src;
  if (eq == std::string::npos) {
    src.path = spec;
    src.name = model_id_from_path(spec);
  } else {
    src.name = spec.substr(0, eq);
    src.path = spec.substr(eq + 1);
  }
  if (src.path.empty()) return make_error("--model '%s': the path is empty (NAME=PATH)", spec.c_str());
  Status st = check_name(src.name);
  if (!st.ok()) return make_error("--model '%s': %s", spec.c_str(), st.error().message.c_str());
  if (!fs::is_regular_file(src.path, ec)) return make_error("--model '%s': no file %s", spec.c_str(), src.path.c_str());
  src.size_bytes = file_size_or_zero(src.path);
  std::string base;
  int part = 0, n_parts = 0;
  const std::string stem = fs::path(src.path).stem().string();
  if (parse_split_stem(stem, &base, &part, &n_parts)) {
    if (eq == std::string::npos) src.name = base;
    src.size_bytes = 0;
    const fs::path dir = fs::path(src.path).parent_path();
    for (int i = 1; i <= n_parts; ++i) {
      char tail[32];
      std::snprintf(tail, sizeof(tail), "-%05d-of-%05d.gguf", i, n_parts);
      src.size_bytes += file_size_or_zero(dir / (base + tail));
    }
  }
  return src;
}

Status check_unique_names(const std::vector<ModelSource>& sources) {
  if (sources.empty()) return make_error("no model given: pass -m PATH, --model NAME=PATH or --models DIR");
  std::map<std::string, std::string> seen;
  for (const ModelSource& s : sources) {
    auto [it, fresh] = seen.emplace(s.name, s.path);
    if (!fresh) {
      return make_error("two models are named '%s' (%s and %s); name them with --model NAME=PATH", s.name.c_str(),
                        it->second.c_str(), s.path.c_str());
    }
  }
  return Status();
}

}  // namespace sniper::server
