// SPDX-License-Identifier: MIT
#include "chat_conversation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/session_state.h"
#include "media/media_decoder.h"
#include "media_args.h"
#include "server/chat_format.h"
#include "server/context_store.h"

namespace sniper::cli {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxChatFileBytes = uint64_t{64} << 20;  // a conversation's JSON, far above any context
constexpr const char* kChatSuffix = ".chat.json";

// A conversation without a template (models that carry none). add_generation_prompt: end with
// "Assistant:" for the reply to follow.
std::string plain_render(const nlohmann::json& messages, bool add_generation_prompt) {
  std::string out;
  for (const auto& m : messages) {
    const std::string role = m["role"].get<std::string>();
    out += (role == "user"     ? "User: "
            : role == "system" ? "System: "
                               : "Assistant: ") +
           m["content"].get<std::string>() + "\n";
  }
  return add_generation_prompt ? out + "Assistant:" : out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string chat_file(const std::string& dir, const std::string& name) { return dir + "/" + name + kChatSuffix; }

// A mark for Tokenizer::escape_special_text that occurs in no message and not in the template:
// the first Unicode noncharacter of U+FDD0..U+FDEF that none holds ("" when every one occurs:
// the text is then tokenized as before, with its control-token texts parsed).
std::string pick_mark(const nlohmann::json& messages, const std::string& system, const std::string& source) {
  for (uint32_t cp = 0xFDD0; cp <= 0xFDEF; ++cp) {
    const std::string mark = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                              static_cast<char>(0x80 | (cp & 0x3F))};
    bool used = source.find(mark) != std::string::npos || system.find(mark) != std::string::npos;
    for (const auto& m : messages)
      used = used || m["content"].get_ref<const std::string&>().find(mark) != std::string::npos;
    if (!used) return mark;
  }
  return "";
}

}  // namespace

ChatConversation::ChatConversation(Session& session, const Tokenizer& tokenizer, std::optional<ChatTemplate> tmpl,
                                   bool context_shift, int64_t n_keep_arg, bool content_special)
    : session_(session),
      tok_(tokenizer),
      tmpl_(std::move(tmpl)),
      shift_(context_shift),
      n_keep_arg_(n_keep_arg),
      content_special_(content_special) {
  if (tmpl_) model_markers_ = server::model_output_markers(server::detect_chat_format(tmpl_->source()));
}

std::vector<int32_t> ChatConversation::encode(const std::string& prompt, bool whole) const {
  if (!tmpl_) return tok_.encode(prompt, /*add_special=*/whole, /*parse_special=*/content_special_);
  return tok_.encode_escaped(prompt, /*add_special=*/false, mark_);
}

Result<std::string> ChatConversation::render(const nlohmann::json& turns, const ChatSettings& settings,
                                             bool add_generation_prompt, const std::atomic<bool>* cancel) {
  nlohmann::json msgs = nlohmann::json::array();
  if (!settings.system.empty()) msgs.push_back({{"role", "system"}, {"content", settings.system}});
  for (const auto& m : turns) msgs.push_back(m);
  if (!tmpl_) return plain_render(msgs, add_generation_prompt);
  if (!mark_.empty()) {
    // What was typed stays text; the model's own markers keep their meaning in its replies.
    for (auto& m : msgs) {
      const bool reply = m["role"] == "assistant";
      m["content"] = tok_.escape_special_text(m["content"].get<std::string>(), mark_,
                                              reply ? model_markers_ : std::vector<std::string>());
    }
  }
  auto piece = [this](int32_t id) { return id >= 0 ? tok_.token_to_piece(id, true) : std::string(); };
  nlohmann::json ctx = {{"messages", msgs},
                        {"add_generation_prompt", add_generation_prompt},
                        {"bos_token", piece(tok_.bos_id())},
                        {"eos_token", piece(tok_.eos_id())}};
  if (settings.think) ctx["enable_thinking"] = *settings.think;
  ChatTemplateLimits limits;  // the defaults; Ctrl-C stops a render that runs long
  limits.cancel = cancel;
  return tmpl_->render(ctx, limits);
}

Result<ChatTurnResult> ChatConversation::turn(const std::string& user_text, const ChatSettings& settings,
                                              const ChatTurnHooks& hooks) {
  // Attached media join this message: a marker each in front of its text (llama-mtmd-cli).
  const size_t n_media_before = media_.size();
  std::string content;
  for (size_t i = 0; i < pending_.size(); ++i) content += kMediaMarker;
  content += user_text;
  for (MediaChunk& chunk : pending_) media_.push_back(std::move(chunk));
  pending_.clear();
  messages_.push_back({{"role", "user"}, {"content", content}});
  // A turn that fails or is stopped before its reply: the message goes, its media are attached again.
  const auto drop_user = [this, n_media_before]() {
    messages_.erase(messages_.end() - 1);
    for (size_t i = n_media_before; i < media_.size(); ++i) pending_.push_back(std::move(media_[i]));
    media_.resize(n_media_before);
  };
  mark_ = tmpl_ && !content_special_ ? pick_mark(messages_, settings.system, tmpl_->source()) : "";
  auto rendered = render(messages_, settings, true, hooks.cancel);
  if (!rendered.ok()) {
    drop_user();
    return make_error("the chat template: %s", rendered.error().message.c_str());
  }
  const std::string prompt = *rendered;
  // With --context-shift: the conversation before this turn, as the template closes it.
  std::string before;
  if (shift_ && messages_.size() > 1) {
    auto prev = render(nlohmann::json(std::vector<nlohmann::json>(messages_.begin(), messages_.end() - 1)), settings,
                       false, hooks.cancel);
    if (prev.ok()) before = *prev;
  }
  // Typed text stays text in both paths (encode(); build_media_prompt with the same mark), and the
  // images' own markers keep their meaning.
  MediaPrompt full;
  if (media_.empty()) {
    full = text_prompt(encode(prompt, /*whole=*/true));
  } else {
    PromptText text_options;
    text_options.parse_special = tmpl_ || content_special_;
    text_options.escape_mark = mark_;
    auto built = build_media_prompt(tok_, session_.model().config(), prompt, media_, /*add_bos=*/!tmpl_, text_options);
    if (!built.ok()) {
      drop_user();
      return built.error();
    }
    full = std::move(built).value();
  }
  // Reuse the cached prefix (the same images by hash); evaluate only what is new.
  int64_t common = 0;
  if (!shift_) {
    common = session_.common_prefix(full);
    if (common == full.n_cells() && common > 0) --common;  // at least one cell must be evaluated for fresh logits
    common = session_.truncate(common);                    // 0 when it cannot rewind; never inside media
  } else if (seen_ && !before.empty() && prompt.compare(0, before.size(), before) == 0) {
    full = text_prompt(encode(prompt.substr(before.size()), /*whole=*/false));
  } else {
    (void)session_.truncate(0);  // the first turn, or a conversation that no longer extends what was seen
    if (n_keep_ < 0) n_keep_ = resolve_n_keep(n_keep_arg_, full.cells, tok_.bos_id());
  }
  auto sliced = slice_prompt(full, common, full.n_cells());
  if (!sliced.ok()) {
    drop_user();
    return sliced.error();
  }
  MediaPrompt fresh = std::move(sliced).value();
  const int64_t n_fresh = fresh.n_cells();
  // The prompt's progress over both parts below (the head, then what generate_media() evaluates).
  int64_t n_head = 0;
  PromptProgress tail_progress;
  if (hooks.on_prompt_progress) {
    tail_progress = [&](int64_t done, int64_t) { return hooks.on_prompt_progress(n_head + done, n_fresh); };
  }
  ChatTurnResult result;
  // A hybrid session checkpoints the prompt just before its generation prompt, where the next
  // turn departs from it (before a media chunk that the tail would cut).
  double head_ms = 0;
  if (session_.keeps_checkpoints() && n_fresh > kPromptCheckpointTail) {
    n_head = n_fresh - kPromptCheckpointTail;
    for (const MediaSpan& span : fresh.spans) {
      if (n_head > span.start && n_head < span.end()) n_head = span.start;
    }
  }
  if (n_head > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    auto head = slice_prompt(fresh, 0, n_head);
    auto tail = slice_prompt(fresh, n_head, n_fresh);
    if (!head.ok() || !tail.ok()) {
      drop_user();
      return head.ok() ? tail.error() : head.error();
    }
    auto evaluated = eval_media_prompt(session_, *head,
                                       hooks.on_prompt_progress ? PromptProgress([&](int64_t done, int64_t) {
                                         return hooks.on_prompt_progress(done, n_fresh);
                                       })
                                                                : PromptProgress());
    if (!evaluated.ok() || *evaluated < n_head) {
      drop_user();
      seen_ = false;
      if (!evaluated.ok()) return evaluated.error();
      result.stopped = true;
      result.stats.finish_reason = "cancelled";
      return result;
    }
    session_.checkpoint();
    head_ms = ms_since(t0);
    fresh = std::move(tail).value();
  }
  GenerateOptions go;
  go.n_predict = settings.n_predict;
  go.sampler = settings.sampler;
  go.draft = hooks.draft;
  go.spec = hooks.spec;
  go.context_shift = shift_;
  go.n_keep = std::max<int64_t>(n_keep_, 0);
  go.on_prompt_progress = tail_progress;
  // Room for the new turn: shift as often as it takes (generate() shifts once).
  Status room = ok_status();
  while (shift_ && room.ok() && fresh.n_cells() > 0 && session_.n_past() > go.n_keep + 1 &&
         session_.n_past() + fresh.n_cells() >= session_.n_ctx()) {
    room = shift_full_context(session_, go.n_keep);
  }
  if (!room.ok()) {
    drop_user();
    return room.error();
  }
  auto stats = generate_media(session_, tok_, fresh, go, [&](std::string_view text) {
    result.reply.append(text);
    return hooks.on_text ? hooks.on_text(text) : true;
  });
  if (!stats.ok()) {
    seen_ = false;  // start over next turn
    drop_user();
    return stats.error();
  }
  result.stats = *stats;
  result.stats.n_prompt += n_head;
  result.stats.prompt_ms += head_ms;
  result.stopped = stats->finish_reason == "cancelled";
  if (result.stopped && stats->n_gen == 0) {
    // Stopped while the prompt was evaluated: no reply, and the message was not answered.
    drop_user();
    seen_ = false;
    return result;
  }
  messages_.push_back({{"role", "assistant"}, {"content", result.reply}});
  seen_ = true;
  return result;
}

void ChatConversation::clear() {
  messages_ = nlohmann::json::array();
  pending_.clear();
  media_.clear();
  seen_ = false;
  n_keep_ = -1;
}

Result<int64_t> ChatConversation::attach(const ChatAttachment& attachment) {
  if (attachment.kind != "image" && attachment.kind != "audio") {
    return make_error("unknown media kind '%s' (image or audio)", attachment.kind.c_str());
  }
  const MediaKind kind = attachment.kind == "image" ? MediaKind::kImage : MediaKind::kAudio;
  if (mmproj_ == nullptr) {
    return make_error("no projector loaded: start the chat with --mmproj FILE to attach %s",
                      kind == MediaKind::kImage ? "images" : "audio");
  }
  if (shift_) {
    return make_error(
        "media in a conversation with --context-shift are not supported (its turns evaluate the new text alone): "
        "start the chat without --context-shift");
  }
  const int64_t max_media = mmproj_->options().limits.max_media;
  if (static_cast<int64_t>(pending_.size()) >= max_media) {
    return make_error("%lld media items are attached already, the most one message may have",
                      static_cast<long long>(max_media));
  }
  const std::string& path = attachment.path;
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("cannot open %s '%s'", attachment.kind.c_str(), path.c_str());
  f.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(f.tellg());
  const uint64_t max_bytes = mmproj_->options().limits.max_bytes;
  if (size > max_bytes) {
    return make_error("%s '%s' is %llu bytes, over the limit of %llu bytes (--media-max-bytes)",
                      attachment.kind.c_str(), path.c_str(), static_cast<unsigned long long>(size),
                      static_cast<unsigned long long>(max_bytes));
  }
  f.seekg(0);
  std::vector<uint8_t> bytes(size);
  if (!f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size))) {
    return make_error("cannot read %s '%s'", attachment.kind.c_str(), path.c_str());
  }
  // The command names the kind: a file of the other kind is the user's slip, said as such.
  const MediaDecoder* decoder = find_media_decoder(bytes);
  if (decoder != nullptr && decoder->kind != kind) {
    return make_error("'%s' is %s%s %s, not %s: attach it with /%s", path.c_str(),
                      decoder->kind == MediaKind::kImage ? "a " : "", decoder->format, media_kind_name(decoder->kind),
                      kind == MediaKind::kImage ? "an image" : "audio", media_kind_name(decoder->kind));
  }
  // The projector refuses a kind it does not encode by name (after the bounded decode).
  auto chunk = mmproj_->encode(bytes, session_.pool());
  if (!chunk.ok())
    return make_error("%s '%s': %s", attachment.kind.c_str(), path.c_str(), chunk.error().message.c_str());
  const int64_t n_tokens = chunk->n_tokens();
  pending_.push_back(std::move(chunk).value());
  return n_tokens;
}

Status ChatConversation::save(const std::string& dir, const std::string& name, const ChatSettings& settings,
                              uint64_t model_fingerprint) const {
  SNIPER_TRY(server::ContextStore::validate_name(name));
  if (!media_.empty()) {
    return make_error("a conversation with images cannot be saved yet (its images are not stored with it)");
  }
  const server::ContextStore store(dir);
  SNIPER_TRY(store.save(name, capture_session_state(session_, model_fingerprint)));
  nlohmann::json doc = {{"format", "sniper-chat"},
                        {"version", 1},
                        {"system", settings.system},
                        {"messages", messages_},
                        {"n_tokens", session_.n_past()}};
  const std::string path = chat_file(dir, name);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << doc.dump(1) << "\n";
    if (!out.flush()) return make_error("cannot write '%s'", tmp.c_str());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return make_error("cannot rename '%s' to '%s': %s", tmp.c_str(), path.c_str(), ec.message().c_str());
  return ok_status();
}

Status ChatConversation::load(const std::string& dir, const std::string& name, ChatSettings* settings,
                              uint64_t model_fingerprint, std::string* note) {
  SNIPER_TRY(server::ContextStore::validate_name(name));
  const std::string path = chat_file(dir, name);
  std::error_code ec;
  const uint64_t bytes = fs::file_size(path, ec);
  if (ec) return make_error("no saved conversation '%s' in %s (/load lists them)", name.c_str(), dir.c_str());
  if (bytes > kMaxChatFileBytes) {
    return make_error("'%s' is %llu bytes, over the %llu a saved conversation may have", path.c_str(),
                      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(kMaxChatFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("format", "") != "sniper-chat" || !doc.contains("messages") ||
      !doc["messages"].is_array() || !doc.contains("system") || !doc["system"].is_string()) {
    return make_error("'%s' is not a saved sniper chat (format, system and messages expected)", path.c_str());
  }
  for (size_t i = 0; i < doc["messages"].size(); ++i) {
    const nlohmann::json& m = doc["messages"][i];
    if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["content"].is_string() ||
        (m["role"] != "user" && m["role"] != "assistant")) {
      return make_error("'%s': messages[%zu] must be {\"role\": \"user\"|\"assistant\", \"content\": string}",
                        path.c_str(), i);
    }
  }
  messages_ = doc["messages"];
  pending_.clear();
  media_.clear();
  settings->system = doc["system"].get<std::string>();
  n_keep_ = -1;
  seen_ = false;
  note->clear();
  auto state = server::ContextStore(dir).load(name);
  Status fits = state.ok() ? check_compatible(*state, session_, model_fingerprint) : state.error();
  if (fits.ok()) {
    restore_session_state(*state, session_);
    seen_ = true;
  } else {
    *note = "its evaluated context was not restored (" + fits.error().message +
            "): the next message evaluates the conversation again";
  }
  return ok_status();
}

std::vector<std::string> list_saved_chats(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > std::string(kChatSuffix).size() && file.ends_with(kChatSuffix)) {
      out.push_back(file.substr(0, file.size() - std::string(kChatSuffix).size()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sniper::cli
