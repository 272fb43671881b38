// SPDX-License-Identifier: MIT
// PagedDocument / paging_budget (agent/paged_reader.h): pages cover the document exactly and in
// order, never exceed page_chars, break after a newline when one is in the page's second half,
// never split a UTF-8 sequence; a file and the same text in memory give the same pages; a
// context too small for a page is a clear error.
#include "agent/paged_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

namespace sniper::agent {
namespace {

std::string sample_text(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const char* pieces[] = {"word ", "longer-word ", "\n", "é", "日本", "x", "  ", "€"};
  std::string s;
  while (s.size() < n) s += pieces[rng() % 8];
  return s;
}

TEST(PagedReader, PagesCoverTheTextWithinTheLimitAndKeepUtf8Whole) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (size_t page_chars : {size_t{16}, size_t{100}, size_t{997}}) {
      const std::string text = sample_text(20000 + seed * 13, seed);
      PagedDocument doc = PagedDocument::from_text(text, page_chars);
      EXPECT_EQ(doc.size_bytes(), text.size());
      std::string joined;
      for (size_t i = 0; i < doc.n_pages(); ++i) {
        auto page = doc.page(i);
        ASSERT_TRUE(page.ok());
        ASSERT_LE(page->size(), page_chars);
        ASSERT_FALSE(page->empty());
        // Never starts inside a UTF-8 sequence.
        EXPECT_NE(static_cast<unsigned char>((*page)[0]) & 0xC0, 0x80) << "page " << i;
        if (i + 1 < doc.n_pages() && page->find('\n', page_chars / 2) != std::string::npos) {
          EXPECT_EQ(page->back(), '\n') << "page " << i;
        }
        joined += *page;
      }
      EXPECT_EQ(joined, text);
      EXPECT_GE(doc.n_pages(), text.size() / page_chars);
      EXPECT_FALSE(doc.page(doc.n_pages()).ok());
    }
  }
}

TEST(PagedReader, FileGivesTheSamePagesAsText) {
  char path[] = "/tmp/sniper-paged-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const std::string text = sample_text(50000, 9);
  std::ofstream(path, std::ios::binary) << text;
  auto file = PagedDocument::open_file(path, 1000);
  ASSERT_TRUE(file.ok()) << file.error().message;
  PagedDocument mem = PagedDocument::from_text(text, 1000);
  ASSERT_EQ(file->n_pages(), mem.n_pages());
  for (size_t i = 0; i < mem.n_pages(); ++i) EXPECT_EQ(*file->page(i), *mem.page(i));
  std::remove(path);
  auto missing = PagedDocument::open_file(path, 1000);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(path), std::string::npos);
  EXPECT_EQ(PagedDocument::from_text("", 100).n_pages(), 0u);
}

TEST(PagedReader, BudgetFitsTheContextOrSaysWhy) {
  auto b = paging_budget(4096, 256, 512, 90);
  ASSERT_TRUE(b.ok());
  // A note request (page + question + note) and the answer request (notes + question + answer)
  // stay inside 4096 tokens at kCharsPerToken.
  EXPECT_LE(b->page_chars / kCharsPerToken + 90 / kCharsPerToken + 256, 4096u);
  EXPECT_LE(b->notes_chars / kCharsPerToken + 90 / kCharsPerToken + 512, 4096u);
  EXPECT_GT(b->page_chars, 8000u);
  auto tiny = paging_budget(300, 256, 512, 90);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message.find("300 tokens"), std::string::npos) << tiny.error().message;
}

}  // namespace
}  // namespace sniper::agent
