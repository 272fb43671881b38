// SPDX-License-Identifier: MIT
// Progress lines: drawn in place only when enabled (a terminal), with tokens done, rate and ETA;
// nothing at all otherwise; a stop flag ends a prompt's evaluation.
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace sniper::cli {
namespace {

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  return out;
}

TEST(Progress, PromptLineShowsTokensRateAndEta) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(/*enabled=*/true, f, /*delay_s=*/0);
    PromptProgress cb = prompt_progress(line);
    EXPECT_TRUE(cb(64, 128));
    EXPECT_TRUE(cb(128, 128));  // done: the line is erased
  }
  const std::string out = read_all(f);
  std::fclose(f);
  EXPECT_NE(out.find("\rprompt: 64 / 128 tokens (50%), "), std::string::npos) << out;
  EXPECT_NE(out.find(" tok/s, ETA "), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K");
}

TEST(Progress, DisabledWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(/*enabled=*/false, f, 0);
    PromptProgress cb = prompt_progress(line);
    EXPECT_TRUE(cb(1, 4));
    line.update("loading x", true);
    LoadProgress load = load_progress(line, "m.gguf");
    EXPECT_FALSE(static_cast<bool>(load));
  }
  EXPECT_EQ(read_all(f), "");
  std::fclose(f);
}

TEST(Progress, NothingBeforeTheDelay) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(true, f, /*delay_s=*/3600);
    line.update("too early", true);
  }
  EXPECT_EQ(read_all(f), "");
  std::fclose(f);
}

TEST(Progress, StopFlagEndsThePrompt) {
  ProgressLine line(false);
  std::atomic<bool> stop{false};
  PromptProgress cb = prompt_progress(line, &stop);
  EXPECT_TRUE(cb(1, 10));
  stop = true;
  EXPECT_FALSE(cb(2, 10));
}

TEST(Progress, EtaFormat) {
  EXPECT_EQ(format_eta(5), "0:05");
  EXPECT_EQ(format_eta(125), "2:05");
  EXPECT_EQ(format_eta(3723), "1:02:03");
  EXPECT_EQ(format_eta(-1), "--:--");
}

}  // namespace
}  // namespace sniper::cli
