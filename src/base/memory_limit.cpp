// SPDX-License-Identifier: MIT
// Memory limit detection from cgroups and /proc/meminfo, and the size parser. See memory_limit.h.
#include "base/memory_limit.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace sniper {

namespace {

constexpr uint64_t kUnlimitedThreshold = uint64_t{1} << 62;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Parses a non-empty run of decimal digits that is all of `s`; nullopt on overflow or garbage.
std::optional<uint64_t> parse_u64(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// Calls fn(line) for each line of `text`.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// "/a/b" -> {"/a/b", "/a", ""}: the cgroup and its ancestors, leaf first, as path suffixes.
std::vector<std::string> cgroup_chain(const std::string& path) {
  std::vector<std::string> chain;
  std::string p = path;
  while (!p.empty() && p.back() == '/') p.pop_back();
  while (true) {
    chain.push_back(p);
    if (p.empty()) break;
    const size_t slash = p.rfind('/');
    p = slash == std::string::npos ? std::string() : p.substr(0, slash);
  }
  return chain;
}

struct CgroupDirs {
  std::vector<std::string> v2;  // directories holding memory.max etc., leaf first
  std::vector<std::string> v1;  // directories holding memory.limit_in_bytes etc., leaf first
};

CgroupDirs cgroup_dirs(const FileReader& read, const std::string& root) {
  CgroupDirs dirs;
  const std::optional<std::string> self = read("/proc/self/cgroup");
  if (!self) return dirs;
  if (const auto v2 = parse_cgroup_v2_path(*self)) {
    // Unified hierarchy at <root>, or the hybrid layout's v2 mount at <root>/unified.
    for (const std::string& mount : {root, root + "/unified"}) {
      for (const std::string& p : cgroup_chain(*v2)) dirs.v2.push_back(mount + p);
    }
  }
  if (const auto v1 = parse_cgroup_v1_memory_path(*self)) {
    for (const std::string& p : cgroup_chain(*v1)) dirs.v1.push_back(root + "/memory" + p);
  }
  return dirs;
}

// The first readable counter among `names` in `dirs` (leaf first), or 0.
uint64_t first_counter(const FileReader& read, const std::vector<std::string>& dirs, const char* name) {
  for (const std::string& dir : dirs) {
    if (const auto text = read(dir + "/" + name)) {
      if (const auto v = parse_cgroup_counter(*text)) return *v;
    }
  }
  return 0;
}

}  // namespace

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::optional<std::string> parse_cgroup_v2_path(std::string_view proc_self_cgroup) {
  std::optional<std::string> out;
  for_each_line(proc_self_cgroup, [&](std::string_view line) {
    if (line.substr(0, 3) == "0::") out = std::string(trim(line.substr(3)));
  });
  return out;
}

std::optional<std::string> parse_cgroup_v1_memory_path(std::string_view proc_self_cgroup) {
  std::optional<std::string> out;
  for_each_line(proc_self_cgroup, [&](std::string_view line) {
    // "hierarchy-id:controller[,controller...]:path"
    const size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) return;
    const size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) return;
    std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    while (!controllers.empty()) {
      const size_t comma = controllers.find(',');
      if (controllers.substr(0, comma) == "memory") {
        out = std::string(trim(line.substr(c2 + 1)));
        return;
      }
      if (comma == std::string_view::npos) break;
      controllers.remove_prefix(comma + 1);
    }
  });
  return out;
}

std::optional<uint64_t> parse_cgroup_limit(std::string_view text) {
  const std::optional<uint64_t> v = parse_cgroup_counter(text);
  if (!v || *v >= kUnlimitedThreshold) return std::nullopt;
  return v;
}

std::optional<uint64_t> parse_cgroup_counter(std::string_view text) { return parse_u64(trim(text)); }

std::optional<uint64_t> parse_meminfo_available(std::string_view meminfo) {
  std::optional<uint64_t> out;
  for_each_line(meminfo, [&](std::string_view line) {
    constexpr std::string_view kKey = "MemAvailable:";
    if (line.substr(0, kKey.size()) != kKey) return;
    std::string_view rest = trim(line.substr(kKey.size()));
    uint64_t mult = 1;
    if (rest.size() >= 2 && (rest.substr(rest.size() - 2) == "kB" || rest.substr(rest.size() - 2) == "KB")) {
      mult = 1024;
      rest = trim(rest.substr(0, rest.size() - 2));
    }
    const std::optional<uint64_t> v = parse_u64(rest);
    if (v && *v <= UINT64_MAX / mult) out = *v * mult;
  });
  return out;
}

MemoryLimit detect_memory_limit_with(const FileReader& read, const std::string& cgroup_root) {
  MemoryLimit best;
  best.source = "none";
  auto consider = [&](uint64_t bytes, std::string source) {
    if (bytes < best.limit_bytes) {
      best.limit_bytes = bytes;
      best.source = std::move(source);
    }
  };
  const CgroupDirs dirs = cgroup_dirs(read, cgroup_root);
  for (const std::string& dir : dirs.v2) {
    const std::string file = dir + "/memory.max";
    if (const auto text = read(file)) {
      if (const auto v = parse_cgroup_limit(*text)) consider(*v, "cgroup v2 memory.max (" + file + ")");
    }
  }
  for (const std::string& dir : dirs.v1) {
    const std::string file = dir + "/memory.limit_in_bytes";
    if (const auto text = read(file)) {
      if (const auto v = parse_cgroup_limit(*text)) consider(*v, "cgroup v1 memory.limit_in_bytes (" + file + ")");
    }
  }
  if (const auto text = read("/proc/meminfo")) {
    if (const auto v = parse_meminfo_available(*text)) consider(*v, "MemAvailable (/proc/meminfo)");
  }
  return best;
}

MemoryLimit detect_memory_limit() { return detect_memory_limit_with(read_small_file, "/sys/fs/cgroup"); }

uint64_t cgroup_memory_usage_bytes_with(const FileReader& read, const std::string& cgroup_root) {
  const CgroupDirs dirs = cgroup_dirs(read, cgroup_root);
  const uint64_t v2 = first_counter(read, dirs.v2, "memory.current");
  return v2 != 0 ? v2 : first_counter(read, dirs.v1, "memory.usage_in_bytes");
}

uint64_t cgroup_memory_usage_bytes() { return cgroup_memory_usage_bytes_with(read_small_file, "/sys/fs/cgroup"); }

uint64_t cgroup_memory_peak_bytes_with(const FileReader& read, const std::string& cgroup_root) {
  const CgroupDirs dirs = cgroup_dirs(read, cgroup_root);
  const uint64_t v2 = first_counter(read, dirs.v2, "memory.peak");
  return v2 != 0 ? v2 : first_counter(read, dirs.v1, "memory.max_usage_in_bytes");
}

uint64_t cgroup_memory_peak_bytes() { return cgroup_memory_peak_bytes_with(read_small_file, "/sys/fs/cgroup"); }

Result<uint64_t> parse_size(std::string_view text) {
  const std::string shown(text);
  const std::string_view s = trim(text);
  auto bad = [&](const char* why) {
    return make_error(
        "size '%s' is invalid: %s (expected bytes like 1024, or a number with unit K, M, G or T, "
        "optionally followed by B or iB, e.g. 4G, 512MiB, 1.5GiB)",
        shown.c_str(), why);
  };
  if (s.empty()) return bad("it is empty");
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  const std::string_view int_digits = s.substr(0, i);
  std::string_view frac_digits;
  if (i < s.size() && s[i] == '.') {
    const size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    frac_digits = s.substr(start, i - start);
    if (frac_digits.empty()) return bad("no digits after the decimal point");
  }
  if (int_digits.empty()) return bad(s[0] == '-' ? "it is negative" : "it does not start with a digit");
  std::string unit;
  for (char c : trim(s.substr(i))) unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  int shift = 0;
  if (!unit.empty()) {
    switch (unit[0]) {
      case 'b': shift = unit == "b" ? 0 : -1; break;
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: shift = -1;
    }
    if (shift > 0 && !(unit.size() == 1 || unit.substr(1) == "b" || unit.substr(1) == "ib")) shift = -1;
    if (shift < 0) return bad("unknown unit");
  }
  if (!frac_digits.empty() && shift == 0) return bad("a fraction needs a unit (bytes are whole)");
  if (frac_digits.size() > 9) return bad("more than 9 digits after the decimal point");
  const std::optional<uint64_t> whole = parse_u64(int_digits);
  if (!whole) return bad("it is larger than 2^64-1 bytes");
  // value = (whole + frac / 10^n) * 2^shift, computed exactly in 128 bits, rounded down.
  unsigned __int128 value = static_cast<unsigned __int128>(*whole) << shift;
  if (!frac_digits.empty()) {
    uint64_t frac = 0;
    uint64_t denom = 1;
    for (char c : frac_digits) {
      frac = frac * 10 + static_cast<uint64_t>(c - '0');
      denom *= 10;
    }
    value += (static_cast<unsigned __int128>(frac) << shift) / denom;
  }
  if (value > UINT64_MAX) return bad("it is larger than 2^64-1 bytes");
  return static_cast<uint64_t>(value);
}

std::string format_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f %s", v, kUnits[u]);
  return buf;
}

}  // namespace sniper
