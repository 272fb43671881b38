// SPDX-License-Identifier: MIT
// /doc <file|url> <question>: a question about a document longer than the model's context. The
// document is cut into pages that fit doc_context_tokens (agent/paged_reader.h); for each page
// the model writes a short note of what bears on the question ("page 3/12" shows progress);
// then one answer request holds the question and the notes. Memory stays bounded: a file is
// read one page at a time, a web page is fetched up to a cap, each note is cut to its budget,
// and when the notes outgrow the answer request's room they are condensed into one note first.
#include <cstdio>

#include "agent/agent.h"
#include "agent/html_text.h"
#include "agent/paged_reader.h"
#include "agent/text_util.h"
#include "agent/web_search.h"

namespace sniper::agent {

namespace {

constexpr const char* kNoteSystem =
    "You are reading a long document one page at a time to answer a question later. Write short notes of the "
    "facts on this page that help answer the question (names, numbers, quotes). If nothing on the page helps, "
    "reply exactly: nothing relevant.";
constexpr const char* kCondenseSystem =
    "Condense these notes on a document into shorter notes that keep every fact relevant to the question and the "
    "page numbers they came from.";
constexpr size_t kMaxFetchBytes = 8u << 20;

bool is_url(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }

std::string cut(std::string s, size_t n) {
  if (s.size() <= n) return s;
  size_t len = n;
  while (len > 0 && (static_cast<unsigned char>(s[len]) & 0xC0) == 0x80) --len;
  s.resize(len);
  return s + " [cut]";
}

}  // namespace

void Agent::doc_command(const std::string& args) {
  const size_t sp = args.find(' ');
  const std::string source = args.substr(0, sp);
  const std::string question = sp == std::string::npos ? "" : trim(args.substr(sp + 1));
  if (source.empty() || question.empty()) {
    out() << "usage: /doc <file|url> <question>\n";
    return;
  }
  const int answer_tokens = config_.max_tokens > 0 ? config_.max_tokens : 512;
  auto budget = paging_budget(config_.doc_context_tokens, config_.doc_note_tokens, answer_tokens, question.size());
  if (!budget.ok()) {
    out() << "error: " << budget.error().message << "\n";
    return;
  }
  auto open = [&]() -> Result<PagedDocument> {
    if (!is_url(source))
      return PagedDocument::open_file(source[0] == '/' ? source : io_.cwd + "/" + source, budget->page_chars);
    SNIPER_ASSIGN_OR_RETURN(std::string body, fetch_url(source, config_.search_timeout_s, kMaxFetchBytes));
    const bool html = body.find("<html") != std::string::npos || body.find("<HTML") != std::string::npos ||
                      body.find("<body") != std::string::npos;
    return PagedDocument::from_text(html ? html_to_text(body, kMaxFetchBytes) : std::move(body), budget->page_chars);
  };
  Result<PagedDocument> doc = open();
  if (!doc.ok()) {
    out() << "error: " << doc.error().message << "\n";
    return;
  }
  const size_t n_pages = doc->n_pages();
  if (n_pages == 0) {
    out() << "error: " << source << " is empty\n";
    return;
  }
  std::vector<std::string> notes;
  size_t notes_chars = 0;
  for (size_t i = 0; i < n_pages; ++i) {
    if (cancelled()) {
      PoolResult stopped;
      stopped.result.failure = FailureKind::kCancelled;
      print_status(stopped);
      return;
    }
    const std::string label = "page " + std::to_string(i + 1) + "/" + std::to_string(n_pages);
    out() << dim(label) << "\n";
    out().flush();
    auto page = doc->page(i);
    if (!page.ok()) {
      out() << "error: " << page.error().message << "\n";
      return;
    }
    PoolResult r = ask(Tier::kPrimary, kNoteSystem,
                       "Question: " + question + "\n\nPage " + std::to_string(i + 1) + " of " +
                           std::to_string(n_pages) + " of " + source + ":\n" + *page,
                       config_.doc_note_tokens);
    if (!r.result.ok()) {
      print_status(r);
      return;
    }
    std::string note = trim(r.result.content);
    if (note.empty() || note.rfind("nothing relevant", 0) == 0) continue;
    note = "[page " + std::to_string(i + 1) + "] " + cut(note, budget->note_chars);
    notes_chars += note.size() + 1;
    notes.push_back(std::move(note));
    if (notes_chars > budget->notes_chars) {
      // Too many notes for the answer request: fold them into one (the condensing request holds
      // at most notes_chars + one note, which fits like the answer request).
      std::string all;
      for (const std::string& n : notes) all += n + "\n";
      PoolResult c =
          ask(Tier::kPrimary, kCondenseSystem, "Question: " + question + "\n\nNotes:\n" + all, config_.doc_note_tokens);
      if (!c.result.ok()) {
        print_status(c);
        return;
      }
      notes.assign(1, "[pages 1-" + std::to_string(i + 1) + "] " + cut(trim(c.result.content), budget->note_chars));
      notes_chars = notes[0].size() + 1;
    }
  }
  std::string user = "Question: " + question + "\n\nNotes taken while reading " + source + " (" +
                     std::to_string(n_pages) + " pages):\n";
  if (notes.empty()) user += "(no page had anything relevant)\n";
  for (const std::string& n : notes) user += n + "\n";
  user += "\nAnswer the question from these notes and cite the pages, e.g. [page 3].";
  nlohmann::json messages = nlohmann::json::array();
  messages.push_back({{"role", "system"}, {"content", config_.system_prompt}});
  messages.push_back({{"role", "user"}, {"content", user}});
  ChatRequest req = chat_request(messages);
  req.max_tokens = answer_tokens;
  PoolResult r = stream_answer(Tier::kPrimary, req);
  if (r.result.content.empty() && !r.result.ok()) return;
  conversation_.add("user", "About " + source + ": " + question);
  conversation_.add("assistant", r.result.content);
  remember(question, r.result.content, "doc", r);
}

}  // namespace sniper::agent
