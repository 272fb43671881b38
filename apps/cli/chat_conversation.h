// SPDX-License-Identifier: MIT
// ChatConversation: the state of `sniper chat` between turns: the messages, rendered through the
// model's own chat template (or a plain "User:/Assistant:" format when the file has none), and the
// session that holds them evaluated. Each turn re-renders the conversation and evaluates only the
// tokens past the prefix already in the session (for a hybrid model, past the latest state
// checkpoint at or before it: each turn's prompt is checkpointed kPromptCheckpointTail tokens
// before its end). With --context-shift, as llama.cpp's conversation mode, a turn evaluates only
// the text its rendering adds to the conversation before it, and a full context shifts.
// A stopped reply (Ctrl-C) stays in the conversation as far as it got, so the session and the
// messages always agree. save()/load() keep a conversation as NAME.ctx (the session state, the
// format of `serve`'s /v1/context/save, engine/session_state.h) and NAME.chat.json (the messages,
// the system prompt) in the context directory.
// Media (issue 39): with a projector (set_media), attach() encodes an image or an audio clip at
// once and keeps it for the next user message, which gets one media marker per item in front of
// its text, as llama-mtmd-cli's /image and /audio do; the conversation keeps its media in order,
// each turn renders the messages with their markers and builds the prompt with the media in place
// (engine/media_prompt.h), and the cells shared with the session (the same media by hash) are
// reused. A kind the projector does not encode is refused by the projector, by name; so are media
// with --context-shift (its turns tokenize only the new text) and /save of a conversation with
// media (the media are not stored with it).
// Thread-compatible.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "chat_commands.h"
#include "engine/generate.h"
#include "engine/media_prompt.h"
#include "engine/session.h"
#include "media/mmproj.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace sniper::cli {

struct ChatTurnHooks {
  TextCallback on_text;               // the reply as it streams; false stops it
  PromptProgress on_prompt_progress;  // the prompt's evaluation; false stops it
  DraftSource* draft = nullptr;       // speculative decoding (may be null)
  SpecConfig spec;
  const std::atomic<bool>* cancel = nullptr;  // set (Ctrl-C): the chat template's render stops
};

struct ChatTurnResult {
  GenerateStats stats;
  std::string reply;
  bool stopped = false;  // a hook said stop (Ctrl-C); the reply so far stays in the conversation
};

struct ChatAttachment {
  std::string kind;  // "image" or "audio"
  std::string path;
};

class ChatConversation {
 public:
  // `tmpl` empty: the plain format. n_keep_arg: --keep as given (-1 = the whole first prompt),
  // resolved against the first turn's prompt when `context_shift` is on. What the user types never
  // becomes control tokens (only the template's markup does; Tokenizer::escape_special_text, as
  // `serve` does), unless `content_special` (--content-special-tokens, the old behaviour).
  ChatConversation(Session& session, const Tokenizer& tokenizer, std::optional<ChatTemplate> tmpl, bool context_shift,
                   int64_t n_keep_arg, bool content_special = false);

  // One turn: `user_text` joins the messages, the reply is generated with `settings` and joins
  // them too. An Error (a prompt past the context, a failed read) drops the user message and
  // leaves the conversation as it was before the turn.
  [[nodiscard]] Result<ChatTurnResult> turn(const std::string& user_text, const ChatSettings& settings,
                                            const ChatTurnHooks& hooks);
  // Forgets the messages (the session's tokens stay, for a later turn's prefix reuse).
  void clear();
  // The projector that encodes attached images (null: none; it must outlive the conversation).
  void set_media(Mmproj* mmproj) { mmproj_ = mmproj; }
  // Encodes media for the next user message and returns its tokens. An Error (nothing attached)
  // names why: no projector, a file of the other kind (a WAV given to /image), a kind the
  // projector does not encode, --context-shift, more than the projector's media limit per
  // message, or the file (unreadable, too large, corrupt: the decoder's message).
  [[nodiscard]] Result<int64_t> attach(const ChatAttachment& attachment);
  // Media attached and not yet sent.
  size_t n_pending() const { return pending_.size(); }

  // The user and assistant messages so far (the system prompt comes from the settings).
  const nlohmann::json& messages() const { return messages_; }
  int64_t n_past() const { return session_.n_past(); }
  int64_t n_ctx() const { return session_.n_ctx(); }

  // Saves the conversation and the evaluated session as NAME in `dir` (created if needed).
  // Errors name the path or an invalid name ([A-Za-z0-9._-]{1,64}).
  [[nodiscard]] Status save(const std::string& dir, const std::string& name, const ChatSettings& settings,
                            uint64_t model_fingerprint) const;
  // Loads NAME from `dir`: the messages and system prompt always (into *settings' system); the
  // session state when it fits this model and KV setting, else *note says that the next turn
  // evaluates the conversation again. Errors (nothing changed): no such conversation, a
  // malformed or oversized file.
  [[nodiscard]] Status load(const std::string& dir, const std::string& name, ChatSettings* settings,
                            uint64_t model_fingerprint, std::string* note);

 private:
  // Renders with the message texts escaped by mark_ (none when it is empty).
  Result<std::string> render(const nlohmann::json& turns, const ChatSettings& settings, bool add_generation_prompt,
                             const std::atomic<bool>* cancel);
  // The prompt's tokens: the template's markup special, the escaped text plain.
  std::vector<int32_t> encode(const std::string& prompt, bool whole) const;

  Session& session_;
  const Tokenizer& tok_;
  std::optional<ChatTemplate> tmpl_;
  bool shift_;
  int64_t n_keep_arg_;
  int64_t n_keep_ = -1;  // resolved against the first turn's prompt (context shift)
  bool seen_ = false;    // context shift: a turn was evaluated since the last reset
  bool content_special_ = false;
  std::vector<std::string> model_markers_;  // kept in assistant messages (server/chat_format.h)
  std::string mark_;                        // this turn's escape mark ("" = none)
  nlohmann::json messages_ = nlohmann::json::array();
  Mmproj* mmproj_ = nullptr;
  std::vector<MediaChunk> pending_;  // attached for the next user message
  std::vector<MediaChunk> media_;    // the conversation's, in the order of their markers
};

// Names of the conversations saved in `dir` (NAME.chat.json), sorted.
std::vector<std::string> list_saved_chats(const std::string& dir);

}  // namespace sniper::cli
