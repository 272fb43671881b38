// SPDX-License-Identifier: MIT
#include "agent/paged_reader.h"

#include <algorithm>
#include <filesystem>

namespace sniper::agent {

namespace {
// Tokens of the fixed instructions around a page or the notes (system prompt, labels).
constexpr size_t kOverheadTokens = 160;
}  // namespace

Result<PagingBudget> paging_budget(int context_tokens, int note_tokens, int answer_tokens, size_t question_chars) {
  const size_t question_tokens = question_chars / kCharsPerToken + 1;
  const size_t fixed = kOverheadTokens + question_tokens;
  const size_t ctx = static_cast<size_t>(std::max(context_tokens, 0));
  // A note request holds a page and the question and leaves room for the note; the answer
  // request holds the notes and the question and leaves room for the answer.
  const size_t note = static_cast<size_t>(std::max(note_tokens, 1));
  const size_t answer = static_cast<size_t>(std::max(answer_tokens, 1));
  if (ctx < fixed + note + 64 || ctx < fixed + answer + note) {
    return make_error(
        "a context of %d tokens leaves no room for a page: the question and instructions take about %zu, "
        "a note %d and the answer %d (raise doc_context_tokens)",
        context_tokens, fixed, note_tokens, answer_tokens);
  }
  PagingBudget b;
  b.page_chars = (ctx - fixed - note) * kCharsPerToken;
  b.note_chars = note * kCharsPerToken;
  b.notes_chars = (ctx - fixed - answer) * kCharsPerToken;
  return b;
}

Result<PagedDocument> PagedDocument::open_file(const std::string& path, size_t page_chars) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return make_error("%s is not a readable regular file", path.c_str());
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return make_error("cannot stat %s: %s", path.c_str(), ec.message().c_str());
  auto file = std::make_shared<std::ifstream>(path, std::ios::binary);
  if (!*file) return make_error("cannot open %s", path.c_str());
  PagedDocument doc;
  doc.file_ = file;
  doc.read_ = [file, path](uint64_t offset, size_t n, std::string* out) -> Status {
    out->resize(n);
    file->clear();
    file->seekg(static_cast<std::streamoff>(offset));
    file->read(out->data(), static_cast<std::streamsize>(n));
    out->resize(static_cast<size_t>(std::max<std::streamsize>(file->gcount(), 0)));
    if (file->bad())
      return make_error("read error in %s at byte %llu", path.c_str(), static_cast<unsigned long long>(offset));
    return ok_status();
  };
  SNIPER_TRY(doc.scan(size, page_chars));
  return doc;
}

PagedDocument PagedDocument::from_text(std::string text, size_t page_chars) {
  PagedDocument doc;
  doc.text_ = std::make_shared<std::string>(std::move(text));
  std::shared_ptr<std::string> t = doc.text_;
  doc.read_ = [t](uint64_t offset, size_t n, std::string* out) -> Status {
    const size_t at = static_cast<size_t>(std::min<uint64_t>(offset, t->size()));
    out->assign(*t, at, n);
    return ok_status();
  };
  const Status st = doc.scan(doc.text_->size(), page_chars);
  (void)st;  // reading memory cannot fail
  return doc;
}

Status PagedDocument::scan(uint64_t size, size_t page_chars) {
  page_chars = std::max<size_t>(page_chars, 8);
  std::string buf;
  uint64_t at = 0;
  while (at < size) {
    if (size - at <= page_chars) {
      at = size;
    } else {
      SNIPER_TRY(read_(at, page_chars + 1, &buf));  // one byte more: is the break a continuation byte?
      if (buf.size() < page_chars + 1)
        return make_error("the document ended early at byte %llu of %llu",
                          static_cast<unsigned long long>(at + buf.size()), static_cast<unsigned long long>(size));
      size_t len = page_chars;
      const size_t nl = buf.rfind('\n', page_chars - 1);
      if (nl != std::string::npos && nl + 1 >= page_chars / 2) {
        len = nl + 1;
      } else {
        while (len > 1 && (static_cast<unsigned char>(buf[len]) & 0xC0) == 0x80) --len;  // not inside a UTF-8 sequence
      }
      at += len;
    }
    breaks_.push_back(at);
  }
  return ok_status();
}

Result<std::string> PagedDocument::page(size_t i) const {
  if (i >= n_pages()) return make_error("page %zu of a %zu-page document", i + 1, n_pages());
  std::string out;
  SNIPER_TRY(read_(breaks_[i], static_cast<size_t>(breaks_[i + 1] - breaks_[i]), &out));
  return out;
}

}  // namespace sniper::agent
