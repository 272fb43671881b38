// SPDX-License-Identifier: MIT
// Conversation history, branches, save and compaction (see conversation.h).
#include "agent/conversation.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace sniper::agent {

namespace {

// The message's text with a note per attachment (transcripts, markdown).
std::string text_with_notes(const Message& m) {
  std::string t;
  for (const Attachment& a : m.media) t += attachment_note(a) + "\n";
  return t + m.content;
}

}  // namespace

nlohmann::json Conversation::to_messages(const std::string& extra_user, const std::vector<Attachment>& extra_media,
                                         const std::set<MediaKind>& allowed) const {
  nlohmann::json out = nlohmann::json::array();
  if (!system_.empty()) out.push_back({{"role", "system"}, {"content", system_}});
  for (const Message& m : messages_) {
    out.push_back({{"role", m.role}, {"content", message_content(m.content, m.media, allowed)}});
  }
  if (!extra_user.empty() || !extra_media.empty())
    out.push_back({{"role", "user"}, {"content", message_content(extra_user, extra_media, allowed)}});
  return out;
}

std::set<MediaKind> Conversation::media_kinds() const {
  std::set<MediaKind> kinds;
  for (const Message& m : messages_) {
    for (const Attachment& a : m.media) kinds.insert(a.kind);
  }
  return kinds;
}

size_t Conversation::char_count() const {
  size_t n = 0;
  for (const Message& m : messages_) n += m.content.size();
  return n;
}

bool Conversation::restore(const std::string& name) {
  auto it = branches_.find(name);
  if (it == branches_.end()) return false;
  messages_ = it->second;
  return true;
}

std::vector<std::string> Conversation::branch_names() const {
  std::vector<std::string> names;
  for (const auto& [name, msgs] : branches_) names.push_back(name);
  return names;
}

size_t Conversation::drop_oldest_half() {
  if (messages_.empty()) return 0;
  size_t n = std::max<size_t>(1, messages_.size() / 2);
  // Keep the history starting at a user message (an exchange is never split).
  while (n < messages_.size() && messages_[n].role != "user") ++n;
  messages_.erase(messages_.begin(), messages_.begin() + static_cast<long>(n));
  return n;
}

void Conversation::compact(const std::string& summary) {
  messages_.clear();
  messages_.push_back({"assistant", "Summary of the conversation so far:\n" + summary, {}});
}

std::string Conversation::transcript() const {
  std::string t;
  for (const Message& m : messages_) t += m.role + ": " + text_with_notes(m) + "\n\n";
  return t;
}

Status Conversation::save(const std::string& path) const {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return make_error("cannot write '%s': %s", path.c_str(), std::strerror(errno));
  bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (json) {
    f << to_messages().dump(2) << "\n";
  } else {
    f << "# Sniper agent conversation\n\n";
    if (!system_.empty()) f << "**system:** " << system_ << "\n\n";
    for (const Message& m : messages_) f << "## " << m.role << "\n\n" << text_with_notes(m) << "\n\n";
  }
  f.flush();
  if (!f) return make_error("write to '%s' failed", path.c_str());
  return ok_status();
}

}  // namespace sniper::agent
