// SPDX-License-Identifier: MIT
#include "hub/model_store.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "hub/hub_files.h"

namespace sniper::hub {

namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const GetenvFn& getenv_fn, const char* name) {
  const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<std::string> sniper_home(const GetenvFn& getenv_fn) {
  std::string home = env_or_empty(getenv_fn, "SNIPER_HOME");
  if (!home.empty()) return home;
  const std::string user_home = env_or_empty(getenv_fn, "HOME");
  if (user_home.empty())
    return make_error("neither SNIPER_HOME nor HOME is set: set SNIPER_HOME to the model store directory");
  return user_home + "/.cache/sniper";
}

Result<std::vector<StoreEntry>> ModelStore::list() const {
  std::vector<StoreEntry> out;
  const fs::path models = fs::path(home_) / "models";
  std::error_code ec;
  if (!fs::exists(models, ec)) return out;
  // models/<owner>/<name>/<file...>
  for (fs::recursive_directory_iterator it(models, fs::directory_options::none, ec), end; it != end; it.increment(ec)) {
    if (ec) return make_error("cannot read the model store '%s': %s", models.c_str(), ec.message().c_str());
    if (it.depth() < 2) continue;
    const fs::path& p = it->path();
    std::error_code lec;
    const bool is_link = fs::is_symlink(it->symlink_status(lec));
    if (!is_link && !it->is_regular_file(lec)) continue;
    const fs::path rel = p.lexically_relative(models);
    auto part = rel.begin();
    const std::string owner = part->string();
    ++part;
    const std::string name = part->string();
    ++part;
    fs::path file_rel;
    for (; part != rel.end(); ++part) file_rel /= *part;
    StoreEntry e;
    e.repo = owner + "/" + name;
    e.file = file_rel.generic_string();
    e.path = p.string();
    if (ends_with(e.file, ".part")) {
      e.partial = true;
      e.file.resize(e.file.size() - 5);
    }
    if (is_link) e.link_target = fs::read_symlink(p, lec).string();
    e.size = fs::file_size(p, lec);  // follows the link; 0 for a dangling one
    if (lec) e.size = 0;
    e.tag = quant_tag(e.file);
    out.push_back(std::move(e));
  }
  if (ec) return make_error("cannot read the model store '%s': %s", models.c_str(), ec.message().c_str());
  std::sort(out.begin(), out.end(), [](const StoreEntry& a, const StoreEntry& b) {
    return a.repo != b.repo ? a.repo < b.repo : a.file < b.file;
  });
  return out;
}

Status ModelStore::make_parent_dirs(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error("cannot create the directory '%s': %s", dir.c_str(), ec.message().c_str());
  return ok_status();
}

std::vector<std::string> foreign_cache_candidates(const std::string& repo, const std::string& file,
                                                  const GetenvFn& getenv_fn) {
  std::vector<fs::path> hub_roots;
  const std::string home = env_or_empty(getenv_fn, "HOME");
  if (auto v = env_or_empty(getenv_fn, "LLAMA_CACHE"); !v.empty()) hub_roots.emplace_back(v);
  if (auto v = env_or_empty(getenv_fn, "HF_HUB_CACHE"); !v.empty()) hub_roots.emplace_back(v);
  if (auto v = env_or_empty(getenv_fn, "HUGGINGFACE_HUB_CACHE"); !v.empty()) hub_roots.emplace_back(v);
  if (auto v = env_or_empty(getenv_fn, "HF_HOME"); !v.empty()) hub_roots.push_back(fs::path(v) / "hub");
  if (auto v = env_or_empty(getenv_fn, "XDG_CACHE_HOME"); !v.empty())
    hub_roots.push_back(fs::path(v) / "huggingface" / "hub");
  if (!home.empty()) hub_roots.push_back(fs::path(home) / ".cache" / "huggingface" / "hub");
  std::string folder = "models--" + repo;
  for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at + 2))
    folder.replace(at, 1, "--");

  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::path& root : hub_roots) {
    const fs::path snapshots = root / folder / "snapshots";
    if (!fs::is_directory(snapshots, ec)) continue;
    for (fs::directory_iterator it(snapshots, ec), end; !ec && it != end; it.increment(ec)) {
      out.push_back((it->path() / file).string());
    }
  }
  // llama.cpp before its move to the hub layout: <cache>/<owner>_<name>_<file name>.
  fs::path flat = env_or_empty(getenv_fn, "LLAMA_CACHE");
  if (flat.empty() && !home.empty()) flat = fs::path(home) / ".cache" / "llama.cpp";
  if (!flat.empty()) {
    std::string name = repo + "_" + fs::path(file).filename().string();
    std::replace(name.begin(), name.end(), '/', '_');
    out.push_back((flat / name).string());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<uint64_t> free_disk_bytes(const std::string& dir) {
  fs::path p = dir;
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  if (p.empty()) p = ".";
  struct statvfs sv {};
  if (::statvfs(p.c_str(), &sv) != 0) return make_error("cannot statvfs '%s': %s", p.c_str(), std::strerror(errno));
  return static_cast<uint64_t>(sv.f_bavail) * static_cast<uint64_t>(sv.f_frsize);
}

}  // namespace sniper::hub
