// SPDX-License-Identifier: MIT
// /image and /audio, and the media side of routing a chat turn: which backends read the media a
// message carries (their /v1/models capabilities or the config's), and a clear message when no
// tier can (see agent.h).
#include "agent/agent.h"
#include "agent/terminal_render.h"
#include "agent/text_util.h"

namespace sniper::agent {

namespace {

// "cat.png" or "\"my cat.png\"" -> the path, relative names under `cwd`, "~/" expanded.
std::string attachment_path(const std::string& args, const std::string& cwd) {
  std::string p = trim(args);
  if (p.size() >= 2 && (p.front() == '"' || p.front() == '\'') && p.back() == p.front()) p = p.substr(1, p.size() - 2);
  p = expand_home(p);
  if (!p.empty() && p[0] != '/') p = cwd + "/" + p;
  return p;
}

}  // namespace

void Agent::cmd_attach(MediaKind kind, const std::string& args) {
  if (trim(args).empty()) {
    if (pending_media_.empty()) {
      out() << "usage: /" << media_kind_name(kind) << " <file> (nothing is attached to the next message)\n";
      return;
    }
    out() << "attached to the next message:\n";
    for (const Attachment& a : pending_media_) out() << "  " << attachment_note(a) << "\n";
    return;
  }
  if (pending_media_.size() >= kMaxAttachments) {
    out() << "error: a message carries at most " << kMaxAttachments << " attachments\n";
    return;
  }
  auto a = load_attachment(attachment_path(args, io_.cwd), kind, MediaLimits{}.max_bytes);
  if (!a.ok()) {
    out() << "error: " << a.error().message << "\n";
    return;
  }
  out() << "attached " << attachment_note(a.value()) << ": it goes with your next message\n";
  pending_media_.push_back(std::move(a).value());
}

bool Agent::media_routing(Tier tier, const std::vector<Attachment>& media, std::set<MediaKind>* allowed,
                          std::vector<std::string>* required) {
  allowed->clear();
  required->clear();
  for (const Attachment& a : media) {
    if (allowed->insert(a.kind).second) required->push_back(capability_for(a.kind));
  }
  if (!required->empty() && pool_->capable_chain(tier, *required).empty()) {
    std::string kinds, known;
    for (MediaKind k : *allowed) kinds += std::string(kinds.empty() ? "" : " and ") + media_kind_name(k);
    for (size_t i = 0; i < pool_->size(); ++i) {
      const std::vector<std::string>& caps = pool_->capabilities(i);
      std::string list;
      for (const std::string& c : caps) list += (list.empty() ? "" : ", ") + c;
      known += (known.empty() ? "" : "; ") + pool_->backend(i).name() + " (" +
               tier_name(pool_->backend(i).client.config().role) + "): " + (list.empty() ? "text only" : list);
    }
    out() << ansi_red(io_.color) << "error: no tier can read this " << kinds << ": no backend's model lists";
    for (const std::string& r : *required) out() << " \"" << r << "\"";
    out() << " in /v1/models [" << known << "]. Serve a model with its projector (sniper serve --mmproj), or "
          << "set \"capabilities\" on a backend in the agent config. Nothing was sent; the attachments are dropped."
          << ansi_reset(io_.color) << "\n";
    return false;
  }
  // Media earlier in the conversation stay media where a backend on the chain reads them too.
  for (MediaKind k : conversation_.media_kinds()) {
    if (allowed->count(k) != 0) continue;
    std::vector<std::string> with = *required;
    with.push_back(capability_for(k));
    if (pool_->capable_chain(tier, with).empty()) continue;
    allowed->insert(k);
    *required = std::move(with);
  }
  return true;
}

}  // namespace sniper::agent
