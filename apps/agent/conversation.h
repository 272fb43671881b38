// SPDX-License-Identifier: MIT
// The conversation: system prompt + user/assistant messages, named branches (/branch, /restore),
// saving (/save: markdown, or JSON for *.json) and compaction (/compact replaces the history with
// one summary message). A user message may carry media (/image, /audio): sent as OpenAI content
// parts to a backend that reads that kind, as a text note to one that does not, and as a note in
// transcripts and markdown. Invariants: roles are "user" or "assistant"; the system prompt is kept
// apart and sent first; thread-compatible.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/media_attachment.h"
#include "base/result.h"

namespace sniper::agent {

struct Message {
  std::string role;  // "user" | "assistant"
  std::string content;
  std::vector<Attachment> media;  // user messages only
};

class Conversation {
 public:
  void set_system(std::string system) { system_ = std::move(system); }
  const std::string& system() const { return system_; }

  void add(const std::string& role, const std::string& content, std::vector<Attachment> media = {}) {
    messages_.push_back({role, content, std::move(media)});
  }
  void clear() { messages_.clear(); }
  const std::vector<Message>& messages() const { return messages_; }
  bool empty() const { return messages_.empty(); }

  // OpenAI messages: system (if set), the history, then `extra_user` (with `extra_media`) as a
  // final user message when non-empty (a turn that is not in the history yet). Media of a kind in
  // `allowed` go as content parts, the others as text notes (by default all: tool prompts, /save).
  nlohmann::json to_messages(const std::string& extra_user = "", const std::vector<Attachment>& extra_media = {},
                             const std::set<MediaKind>& allowed = {}) const;

  // The media kinds the history's messages carry.
  std::set<MediaKind> media_kinds() const;

  // Total characters of the history (a cheap size estimate for /stats and /compact).
  size_t char_count() const;

  // Saves a copy of the history under `name` (overwrites).
  void branch(const std::string& name) { branches_[name] = messages_; }
  // Restores the copy named `name`. Returns false if there is none.
  [[nodiscard]] bool restore(const std::string& name);
  std::vector<std::string> branch_names() const;

  // Forgets the oldest messages, about half of them (a whole user/assistant exchange at a time,
  // at least one), so that a conversation that outgrew the model's context fits again. Returns how
  // many were dropped (0 when the history is empty).
  size_t drop_oldest_half();

  // Replaces the history with one assistant message holding a summary of it.
  void compact(const std::string& summary);

  // Writes the conversation to a file: JSON messages for *.json, markdown otherwise.
  [[nodiscard]] Status save(const std::string& path) const;

  // A plain transcript ("user: ...\nassistant: ...") for summarization prompts.
  std::string transcript() const;

 private:
  std::string system_;
  std::vector<Message> messages_;
  std::map<std::string, std::vector<Message>> branches_;
};

}  // namespace sniper::agent
