// SPDX-License-Identifier: MIT
// The start-up agreement's pieces (dist/rank_identity.h): the comparison names the first rank that
// differs, its host and the field; the fingerprint follows the file's bytes and size.
#include "dist/rank_identity.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sniper {
namespace {

RankIdentity same(const std::string& host) {
  RankIdentity id;
  id.host = host;
  id.file_bytes = 1000;
  id.fingerprint = 0x1234;
  id.flags = "parallel=experts";
  id.build = "protocol 1, kernels avx2";
  return id;
}

TEST(CompareIdentities, AgreeingRanksPass) { EXPECT_EQ(compare_identities({same("a"), same("b"), same("c")}), ""); }

TEST(CompareIdentities, DifferentFileNamesRankHostAndBothFiles) {
  std::vector<RankIdentity> ids = {same("a"), same("b"), same("c")};
  ids[2].fingerprint = 0x9999;
  const std::string msg = compare_identities(ids);
  EXPECT_NE(msg.find("rank 2 (host c) has a different model file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0 (host a)"), std::string::npos) << msg;
  ids[2] = same("c");
  ids[1].file_bytes = 999;
  EXPECT_NE(compare_identities(ids).find("rank 1 (host b) has a different model file: 999 bytes"), std::string::npos);
}

TEST(CompareIdentities, FlagsBuildAndLoadErrorsAreNamed) {
  std::vector<RankIdentity> ids = {same("a"), same("b")};
  ids[1].flags = "parallel=layers";
  EXPECT_NE(compare_identities(ids).find("rank 1 (host b) runs with 'parallel=layers'"), std::string::npos);
  ids[1] = same("b");
  ids[1].build = "protocol 2, kernels avx2";
  EXPECT_NE(compare_identities(ids).find("rank 1 (host b) runs build 'protocol 2"), std::string::npos);
  // A load failure on any rank (rank 0 too) comes first: the other fields mean nothing then.
  ids[0].error = "cannot open 'x.gguf'";
  EXPECT_NE(compare_identities(ids).find("rank 0 (host a) could not load the model: cannot open"), std::string::npos);
}

TEST(CompareIdentities, WireFormRoundTripsAndTruncates) {
  RankIdentity id = same("host-1");
  id.error = std::string(1000, 'x');
  const RankIdentity back = from_wire(to_wire(id));
  EXPECT_EQ(back.host, "host-1");
  EXPECT_EQ(back.flags, id.flags);
  EXPECT_EQ(back.build, id.build);
  EXPECT_EQ(back.fingerprint, id.fingerprint);
  EXPECT_EQ(back.error.size(), sizeof(WireIdentity::error) - 1);
}

TEST(FileFingerprint, FollowsBytesAndSize) {
  const std::string dir = ::testing::TempDir();
  const std::string a = dir + "/fp_a.bin", b = dir + "/fp_b.bin";
  std::vector<char> bytes(6 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 2654435761u >> 13);
  auto write = [&](const std::string& path, const std::vector<char>& data) {
    std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  };
  write(a, bytes);
  write(b, bytes);
  auto fa = file_fingerprint(a), fb = file_fingerprint(b);
  ASSERT_TRUE(fa.ok() && fb.ok());
  EXPECT_EQ(*fa, *fb);
  bytes[100] ^= 1;  // in the header region
  write(b, bytes);
  EXPECT_NE(*file_fingerprint(b), *fa);
  bytes[100] ^= 1;
  bytes.push_back(0);  // one byte longer
  write(b, bytes);
  EXPECT_NE(*file_fingerprint(b), *fa);
  auto missing = file_fingerprint(dir + "/fp_missing.bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("fp_missing.bin"), std::string::npos);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

}  // namespace
}  // namespace sniper
