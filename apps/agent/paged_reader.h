// SPDX-License-Identifier: MIT
// Paged reading of a document longer than the model's context (/doc): the document (a file, read
// a page at a time, or a fetched web page's text) is cut into pages that fit the context with the
// question and a note; the agent asks for notes on each page, then answers from the notes.
// Invariants: a page is at most page_chars bytes and never splits a UTF-8 sequence; pages cover
// the document exactly, in order; a file is never held in memory whole (page_breaks scans it in
// page-sized reads, page() reads one page). Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

// Characters per token assumed when sizing pages (conservative: English text averages ~4, code
// and other scripts less).
inline constexpr size_t kCharsPerToken = 3;

// What one /doc run may send: pages, notes per page and all notes together, in bytes, for a
// context of context_tokens, notes of at most note_tokens and an answer of answer_tokens. Errors
// when the context leaves no room for a page (names the numbers).
struct PagingBudget {
  size_t page_chars = 0;   // document text per note request
  size_t note_chars = 0;   // one page's note is cut to this
  size_t notes_chars = 0;  // all notes in the answer request (more are condensed first)
};
[[nodiscard]] Result<PagingBudget> paging_budget(int context_tokens, int note_tokens, int answer_tokens,
                                                 size_t question_chars);

// The document as pages: read(offset, n, out) must fill *out with up to n bytes at offset
// (fewer only at the end). Breaks fall after the last newline in the second half of a page
// when there is one, else before a UTF-8 continuation byte.
class PagedDocument {
 public:
  using ReadFn = std::function<Status(uint64_t offset, size_t n, std::string* out)>;
  // A file read page by page (errors name the path).
  [[nodiscard]] static Result<PagedDocument> open_file(const std::string& path, size_t page_chars);
  // Text already in memory (a fetched page's text).
  static PagedDocument from_text(std::string text, size_t page_chars);

  size_t n_pages() const { return breaks_.size() - 1; }
  uint64_t size_bytes() const { return breaks_.back(); }
  // Page i in [0, n_pages()).
  [[nodiscard]] Result<std::string> page(size_t i) const;

 private:
  PagedDocument() = default;
  [[nodiscard]] Status scan(uint64_t size, size_t page_chars);
  ReadFn read_;
  std::vector<uint64_t> breaks_{0};  // page i is [breaks_[i], breaks_[i + 1])
  std::shared_ptr<std::ifstream> file_;
  std::shared_ptr<std::string> text_;
};

}  // namespace sniper::agent
