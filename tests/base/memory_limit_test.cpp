// SPDX-License-Identifier: MIT
#include "base/memory_limit.h"

#include <gtest/gtest.h>

#include <map>

namespace sniper {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// A fake file system for the detection functions.
struct FakeFs {
  std::map<std::string, std::string> files;
  FileReader reader() const {
    return [this](const std::string& path) -> std::optional<std::string> {
      auto it = files.find(path);
      if (it == files.end()) return std::nullopt;
      return it->second;
    };
  }
};

TEST(MemoryLimit, ParsesCgroupPaths) {
  const std::string v2_only = "0::/user.slice/session-1.scope\n";
  EXPECT_EQ(parse_cgroup_v2_path(v2_only).value(), "/user.slice/session-1.scope");
  EXPECT_FALSE(parse_cgroup_v1_memory_path(v2_only).has_value());

  const std::string hybrid = "12:pids:/\n9:cpu,cpuacct:/x\n4:cpuset,memory:/process_api/abc\n1:name=systemd:/\n0::/\n";
  EXPECT_EQ(parse_cgroup_v1_memory_path(hybrid).value(), "/process_api/abc");
  EXPECT_EQ(parse_cgroup_v2_path(hybrid).value(), "/");
  // "memory" must be a whole controller name, not a substring.
  EXPECT_FALSE(parse_cgroup_v1_memory_path("3:notmemory:/a\n3:memoryx:/b").has_value());
  EXPECT_FALSE(parse_cgroup_v2_path("").has_value());
  EXPECT_FALSE(parse_cgroup_v1_memory_path("garbage without colons").has_value());
}

TEST(MemoryLimit, ParsesLimitValues) {
  EXPECT_EQ(parse_cgroup_limit("4294967296\n").value(), 4 * kGiB);
  EXPECT_FALSE(parse_cgroup_limit("max\n").has_value());
  EXPECT_FALSE(parse_cgroup_limit("9223372036854771712\n").has_value());  // v1 "unlimited"
  EXPECT_FALSE(parse_cgroup_limit("").has_value());
  EXPECT_FALSE(parse_cgroup_limit("12abc").has_value());
  EXPECT_FALSE(parse_cgroup_limit("-1").has_value());
  EXPECT_FALSE(parse_cgroup_limit("99999999999999999999999").has_value());  // overflows u64
  EXPECT_EQ(parse_cgroup_counter(" 123\n").value(), 123u);
}

TEST(MemoryLimit, ParsesMemAvailable) {
  const std::string meminfo =
      "MemTotal:       24000000 kB\nMemFree:        20000000 kB\nMemAvailable:   22000000 kB\nBuffers: 1 kB\n";
  EXPECT_EQ(parse_meminfo_available(meminfo).value(), uint64_t{22000000} * 1024);
  EXPECT_FALSE(parse_meminfo_available("MemTotal: 5 kB\n").has_value());
  EXPECT_FALSE(parse_meminfo_available("MemAvailable: lots kB\n").has_value());
}

TEST(MemoryLimit, TakesMinimumOverCgroupAncestorsAndMeminfo) {
  FakeFs fs;
  fs.files["/proc/self/cgroup"] = "0::/a/b\n";
  fs.files["/proc/meminfo"] = "MemAvailable: 16777216 kB\n";  // 16 GiB
  fs.files["/cg/a/b/memory.max"] = "max\n";
  fs.files["/cg/a/memory.max"] = std::to_string(6 * kGiB) + "\n";
  MemoryLimit m = detect_memory_limit_with(fs.reader(), "/cg");
  EXPECT_EQ(m.limit_bytes, 6 * kGiB);
  EXPECT_NE(m.source.find("cgroup v2 memory.max (/cg/a/memory.max)"), std::string::npos) << m.source;

  fs.files["/proc/meminfo"] = "MemAvailable: 1048576 kB\n";  // 1 GiB < 6 GiB
  m = detect_memory_limit_with(fs.reader(), "/cg");
  EXPECT_EQ(m.limit_bytes, kGiB);
  EXPECT_NE(m.source.find("MemAvailable"), std::string::npos) << m.source;
}

TEST(MemoryLimit, ReadsCgroupV1AndFallsBackToMountRoot) {
  FakeFs fs;
  // The process's v1 path does not exist under the mount (cgroup namespace): the root's
  // limit applies.
  fs.files["/proc/self/cgroup"] = "4:memory:/docker/abc\n0::/\n";
  fs.files["/cg/memory/memory.limit_in_bytes"] = std::to_string(512 * kMiB) + "\n";
  fs.files["/cg/memory/memory.usage_in_bytes"] = "1000\n";
  fs.files["/cg/memory/memory.max_usage_in_bytes"] = "2000\n";
  const MemoryLimit m = detect_memory_limit_with(fs.reader(), "/cg");
  EXPECT_EQ(m.limit_bytes, 512 * kMiB);
  EXPECT_NE(m.source.find("cgroup v1 memory.limit_in_bytes"), std::string::npos) << m.source;
  EXPECT_EQ(cgroup_memory_usage_bytes_with(fs.reader(), "/cg"), 1000u);
  EXPECT_EQ(cgroup_memory_peak_bytes_with(fs.reader(), "/cg"), 2000u);

  // v2 counters win when present; the leaf's counter is read, not the root's.
  fs.files["/proc/self/cgroup"] = "0::/x\n";
  fs.files["/cg/x/memory.current"] = "300\n";
  fs.files["/cg/memory.current"] = "999\n";
  fs.files["/cg/x/memory.peak"] = "400\n";
  EXPECT_EQ(cgroup_memory_usage_bytes_with(fs.reader(), "/cg"), 300u);
  EXPECT_EQ(cgroup_memory_peak_bytes_with(fs.reader(), "/cg"), 400u);
}

TEST(MemoryLimit, HybridLayoutV2UnderUnified) {
  FakeFs fs;
  fs.files["/proc/self/cgroup"] = "0::/svc\n";
  fs.files["/cg/unified/svc/memory.max"] = "1073741824\n";
  EXPECT_EQ(detect_memory_limit_with(fs.reader(), "/cg").limit_bytes, kGiB);
}

TEST(MemoryLimit, NoSourcesMeansNoLimit) {
  FakeFs fs;
  const MemoryLimit m = detect_memory_limit_with(fs.reader(), "/cg");
  EXPECT_EQ(m.limit_bytes, kNoMemoryLimit);
  EXPECT_EQ(m.source, "none");
  EXPECT_EQ(cgroup_memory_usage_bytes_with(fs.reader(), "/cg"), 0u);
  EXPECT_EQ(cgroup_memory_peak_bytes_with(fs.reader(), "/cg"), 0u);
}

TEST(MemoryLimit, RealSystemGivesSomeLimit) {
  // Every Linux system has /proc/meminfo, so a finite limit below 2^62 must come out.
  const MemoryLimit m = detect_memory_limit();
  EXPECT_GT(m.limit_bytes, 0u);
  EXPECT_LT(m.limit_bytes, uint64_t{1} << 62);
  EXPECT_FALSE(m.source.empty());
}

TEST(ParseSize, AcceptsBytesAndBinaryUnits) {
  EXPECT_EQ(parse_size("1024").value(), 1024u);
  EXPECT_EQ(parse_size("0").value(), 0u);
  EXPECT_EQ(parse_size("4G").value(), 4 * kGiB);
  EXPECT_EQ(parse_size("4g").value(), 4 * kGiB);
  EXPECT_EQ(parse_size("512M").value(), 512 * kMiB);
  EXPECT_EQ(parse_size("512MiB").value(), 512 * kMiB);
  EXPECT_EQ(parse_size("512mb").value(), 512 * kMiB);
  EXPECT_EQ(parse_size("1.5GiB").value(), 3 * kGiB / 2);
  EXPECT_EQ(parse_size(" 2 T ").value(), uint64_t{2} << 40);
  EXPECT_EQ(parse_size("64K").value(), 65536u);
  EXPECT_EQ(parse_size("100B").value(), 100u);
  EXPECT_EQ(parse_size("0.1K").value(), 102u);  // 102.4 rounded down
  EXPECT_EQ(parse_size("18446744073709551615").value(), UINT64_MAX);
}

TEST(ParseSize, RejectsWithMessageNamingTheValue) {
  for (const char* bad : {"", "auto", "-4G", "4X", "4GG", "4Gi", "1.5", "1.G", ".5G", "4 G B", "18446744073709551616",
                          "16777216T", "1.1234567891G"}) {
    const Result<uint64_t> r = parse_size(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "' was accepted as " << r.value();
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "'"), std::string::npos) << r.error().message;
  }
}

TEST(FormatBytes, PicksUnit) {
  EXPECT_EQ(format_bytes(17), "17 B");
  EXPECT_EQ(format_bytes(1536 * kMiB), "1.50 GiB");
  EXPECT_EQ(format_bytes(512 * kMiB), "512.00 MiB");
}

}  // namespace
}  // namespace sniper
