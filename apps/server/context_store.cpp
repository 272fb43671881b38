// SPDX-License-Identifier: MIT
#include "server/context_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace sniper::server {

namespace fs = std::filesystem;

Status ContextStore::validate_name(const std::string& name) {
  if (name.empty() || name.size() > 64) {
    return make_error("name must be 1 to 64 characters long, got %zu", name.size());
  }
  if (name[0] == '.') return make_error("name must not start with '.'");
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return make_error("name may only contain A-Z a-z 0-9 . _ - (got '%s')", name.c_str());
  }
  return ok_status();
}

std::string ContextStore::default_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/sniper/contexts";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] != '\0' ? home : "/tmp") + "/.cache/sniper/contexts";
}

Status ContextStore::save(const std::string& name, const SessionState& state, ContextCompression compression) const {
  SNIPER_TRY(validate_name(name));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return make_error("cannot create the context directory '%s': %s", dir_.c_str(), ec.message().c_str());
  return write_session_state_file(path_of(name), state, compression);
}

bool ContextStore::exists(const std::string& name) const {
  std::error_code ec;
  return validate_name(name).ok() && fs::is_regular_file(path_of(name), ec);
}

Result<SessionState> ContextStore::load(const std::string& name) const {
  SNIPER_TRY(validate_name(name));
  if (!exists(name)) return make_error("not found: no saved context named '%s'", name.c_str());
  return read_session_state_file(path_of(name));
}

Result<bool> ContextStore::remove(const std::string& name) const {
  SNIPER_TRY(validate_name(name));
  std::error_code ec;
  const bool removed = fs::remove(path_of(name), ec);
  if (ec) return make_error("cannot delete context '%s': %s", name.c_str(), ec.message().c_str());
  return removed;
}

uint64_t ContextStore::file_bytes(const std::string& name) const {
  std::error_code ec;
  const auto n = fs::file_size(path_of(name), ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

std::vector<ContextInfo> ContextStore::list() const {
  std::vector<ContextInfo> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".ctx" || !entry.is_regular_file(ec)) continue;
    ContextInfo info;
    info.name = p.stem().string();
    if (!validate_name(info.name).ok()) continue;
    info.bytes = static_cast<uint64_t>(entry.file_size(ec));
    // n_tokens lives at byte 56 of the header (engine/session_state.h).
    std::ifstream f(p, std::ios::binary);
    char header[64];
    if (!f.read(header, sizeof(header))) continue;
    std::memcpy(&info.n_tokens, header + 56, sizeof(int64_t));
    const auto mtime = fs::last_write_time(p, ec);
    if (!ec) {
      const auto sys = std::chrono::time_point_cast<std::chrono::seconds>(mtime - fs::file_time_type::clock::now() +
                                                                          std::chrono::system_clock::now());
      info.created = sys.time_since_epoch().count();
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const ContextInfo& a, const ContextInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace sniper::server
