// SPDX-License-Identifier: MIT
// How much memory this process may use, from the places Linux keeps the answer: the cgroup v2
// memory.max of the process's cgroup and its ancestors, the cgroup v1 memory.limit_in_bytes of
// the memory controller's cgroup and its ancestors, and MemAvailable in /proc/meminfo. The
// effective limit is the smallest of those that exist; page cache counts against cgroup limits,
// which is why the streaming I/O layer drops the pages it reads.
// Also parses human-written sizes ("4G", "512MiB", "1.5GiB", "1024").
// Every parser takes file contents as strings so it can be tested without a cgroup.
// Invariant: a limit of kNoMemoryLimit means "no limit found"; parse_size never overflows silently.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sniper {

inline constexpr uint64_t kNoMemoryLimit = UINT64_MAX;

struct MemoryLimit {
  uint64_t limit_bytes = kNoMemoryLimit;  // kNoMemoryLimit when no source reported a limit
  // Which file gave the minimum, e.g. "cgroup v2 memory.max (/sys/fs/cgroup/a/memory.max)";
  // "none" when no source reported a limit.
  std::string source;
};

// Reads a whole small file; std::nullopt when it does not exist or cannot be read.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// The real reader (plain std::ifstream). Thread-safe.
std::optional<std::string> read_small_file(const std::string& path);

// min(cgroup v2 memory.max, cgroup v1 memory.limit_in_bytes, MemAvailable) over the process's
// cgroups (each ancestor's limit applies too). Never fails: missing files are skipped.
// Thread-safe.
MemoryLimit detect_memory_limit();
// The same, reading files through `read` (for tests), with cgroup file systems mounted at
// `cgroup_root` (normally "/sys/fs/cgroup").
MemoryLimit detect_memory_limit_with(const FileReader& read, const std::string& cgroup_root);

// Current memory charged to this process's cgroup (v2 memory.current, else v1
// memory.usage_in_bytes) in bytes, or 0 when unavailable. Includes page cache. Thread-safe.
uint64_t cgroup_memory_usage_bytes();
uint64_t cgroup_memory_usage_bytes_with(const FileReader& read, const std::string& cgroup_root);
// Peak memory charged to the cgroup (v2 memory.peak, else v1 memory.max_usage_in_bytes), or 0.
uint64_t cgroup_memory_peak_bytes();
uint64_t cgroup_memory_peak_bytes_with(const FileReader& read, const std::string& cgroup_root);

// --- Parsers of the individual files (exposed for tests) ---

// The cgroup v2 path ("0::/a/b" line) from /proc/self/cgroup contents, e.g. "/a/b".
std::optional<std::string> parse_cgroup_v2_path(std::string_view proc_self_cgroup);
// The cgroup v1 memory controller's path ("N:memory:/a/b" or "N:cpu,memory:/a/b" line).
std::optional<std::string> parse_cgroup_v1_memory_path(std::string_view proc_self_cgroup);
// A cgroup limit file ("max\n", "123456\n"): the limit in bytes, or std::nullopt for "max",
// values of 2^62 and above (v1 writes "unlimited" as 2^63 rounded down to a page) and garbage.
std::optional<uint64_t> parse_cgroup_limit(std::string_view text);
// A cgroup counter file ("123456\n") in bytes, or std::nullopt if it is not a number.
std::optional<uint64_t> parse_cgroup_counter(std::string_view text);
// MemAvailable from /proc/meminfo contents ("MemAvailable:   123 kB") in bytes, or nullopt.
std::optional<uint64_t> parse_meminfo_available(std::string_view meminfo);

// Parses a size: an integer number of bytes ("1024"), or a number with a binary unit
// K/M/G/T, optionally followed by "B" or "iB", case-insensitive ("4G", "512M", "1.5GiB",
// "64kb"); all units are powers of 1024; a space may separate number and unit. Fractions
// need a unit and are rounded down to whole bytes. "auto" is not handled here (callers decide).
// An Error names the value and what is allowed.
[[nodiscard]] Result<uint64_t> parse_size(std::string_view text);

// Formats bytes for messages: "1.50 GiB", "512.00 MiB", "17 B".
std::string format_bytes(uint64_t bytes);

}  // namespace sniper
