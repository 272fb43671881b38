// SPDX-License-Identifier: MIT
// ChatOutputParser: splits generated assistant text, fed in arbitrary pieces, into reasoning
// (<think>...</think>, or Gemma 4's <|channel>thought...<channel|>), content and tool calls
// (tagged blocks: Hermes <tool_call>{json}</tool_call>, Qwen3.5 <tool_call><function=..>..
// </tool_call>, Gemma 4 <|tool_call>call:..{..}<tool_call|>; or a Llama 3
// {"name":..,"parameters":..} message), as OpenAI-style deltas.
// Invariants: text is emitted only once it is decided (a suffix that could still start a marker,
// trailing whitespace that may turn out to separate a marker, and an incomplete UTF-8 sequence
// are held back); every byte of input ends up in a delta except marker syntax and whitespace
// around markers; the aggregated message() is exactly the concatenation of the emitted deltas.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "server/bounded_json.h"
#include "server/chat_format.h"
#include "server/tool_call_syntax.h"

namespace sniper::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kGemmaThinkOpen = "<|channel>thought";
constexpr std::string_view kGemmaThinkClose = "<channel|>";
constexpr std::string_view kToolOpen = "<tool_call>";
constexpr std::string_view kToolClose = "</tool_call>";
constexpr std::string_view kGemmaToolOpen = "<|tool_call>";
constexpr std::string_view kGemmaToolClose = "<tool_call|>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t leading_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[n])) ++n;
  return n;
}

size_t trailing_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[s.size() - 1 - n])) ++n;
  return n;
}

// Length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// Number of bytes at the end of `text` that start a UTF-8 sequence but do not complete it.
size_t incomplete_utf8_suffix(std::string_view text) {
  for (size_t i = 1; i <= 4 && i <= text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[text.size() - i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > i ? i : 0;
  }
  return 0;
}

// How much of `buf` can be emitted now: everything except a partial `marker` at the end
// (when marker is non-empty), trailing whitespace (when hold_space) and a split UTF-8 sequence.
size_t decided_length(std::string_view buf, std::string_view marker, bool hold_space) {
  size_t n = buf.size();
  if (!marker.empty()) n -= partial_marker_suffix(buf, marker);
  if (hold_space) n -= trailing_space(buf.substr(0, n));
  n -= incomplete_utf8_suffix(buf.substr(0, n));
  return n;
}

enum class Match { kNo, kMaybe, kYes };

// Whether `s` starts a Llama 3 JSON call: '{', optional whitespace, then "name" or "type".
Match llama_call_start(std::string_view s) {
  if (s.empty()) return Match::kMaybe;
  if (s[0] != '{') return Match::kNo;
  s.remove_prefix(1);
  s.remove_prefix(leading_space(s));
  if (s.empty()) return Match::kMaybe;
  for (std::string_view key : {std::string_view("\"name\""), std::string_view("\"type\"")}) {
    if (s.starts_with(key)) return Match::kYes;
    if (key.starts_with(s)) return Match::kMaybe;
  }
  return Match::kNo;
}

// Splits `s` into top-level JSON objects separated by whitespace, ';' or ','; returns false if
// `s` is anything else. Strings (with escapes) are skipped so braces inside them do not count.
bool split_objects(std::string_view s, std::vector<std::string_view>* objects) {
  size_t i = 0;
  while (true) {
    while (i < s.size() && (is_space(s[i]) || s[i] == ';' || s[i] == ',')) ++i;
    if (i == s.size()) return !objects->empty();
    if (s[i] != '{') return false;
    const size_t start = i;
    int depth = 0;
    bool in_string = false;
    for (; i < s.size(); ++i) {
      const char c = s[i];
      if (in_string) {
        if (c == '\\') ++i;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) break;
      }
    }
    if (i >= s.size()) return false;  // unbalanced
    objects->push_back(s.substr(start, i + 1 - start));
    ++i;
  }
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

ChatOutputParser::ChatOutputParser(ChatFormat format, const RenderedChat& rendered, bool tools_requested) {
  format_ = format.tool_calls;
  tool_schemas_ = rendered.tool_schemas;
  const bool gemma_thinking = format.thinking == ThinkingSyntax::kGemma4Channel;
  think_open_ = gemma_thinking ? kGemmaThinkOpen : kThinkOpen;
  think_close_ = gemma_thinking ? kGemmaThinkClose : kThinkClose;
  if (format.tool_calls == ToolCallFormat::kGemma4) {
    tool_open_ = kGemmaToolOpen;
    tool_close_ = kGemmaToolClose;
  } else {
    tool_open_ = kToolOpen;
    tool_close_ = kToolClose;
  }
  think_allowed_ = format.supports_thinking || rendered.thinking_enabled || rendered.thinking_open;
  hermes_tools_ = tools_requested &&
                  (format.tool_calls == ToolCallFormat::kHermes || format.tool_calls == ToolCallFormat::kQwen35Xml ||
                   format.tool_calls == ToolCallFormat::kGemma4);
  llama_tools_ = tools_requested && format.tool_calls == ToolCallFormat::kLlama3;
  gemma_channels_ = gemma_thinking;
  if (rendered.thinking_open) state_ = State::kThink;
  // Ids only need to be unique among the calls a client sees; a process-wide counter mixed with
  // the clock keeps them distinct across requests and server restarts.
  static std::atomic<uint64_t> counter{0};
  const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  id_seed_ = splitmix64(now ^ splitmix64(counter.fetch_add(1, std::memory_order_relaxed)));
}

std::string ChatOutputParser::make_call_id(size_t index) const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "call_%016llx", static_cast<unsigned long long>(splitmix64(id_seed_ + index)));
  return buf;
}

void ChatOutputParser::feed(std::string_view text, std::vector<ChatDelta>* out) {
  buf_.append(text);
  process(/*final=*/false, out);
}

void ChatOutputParser::finish(std::vector<ChatDelta>* out) { process(/*final=*/true, out); }

void ChatOutputParser::emit_content(std::string_view text, std::vector<ChatDelta>* out) {
  if (text.empty()) return;
  content_.append(text);
  ChatDelta d;
  d.kind = ChatDelta::Kind::kContent;
  d.text = std::string(text);
  out->push_back(std::move(d));
}

void ChatOutputParser::emit_reasoning(std::string_view text, std::vector<ChatDelta>* out) {
  if (reasoning_.empty()) text.remove_prefix(leading_space(text));  // "<think>\n" -> no leading newline
  if (text.empty()) return;
  reasoning_.append(text);
  ChatDelta d;
  d.kind = ChatDelta::Kind::kReasoning;
  d.text = std::string(text);
  out->push_back(std::move(d));
}

bool ChatOutputParser::emit_call(const Json& call, std::vector<ChatDelta>* out) {
  if (!call.is_object()) return false;
  const auto name = call.find("name");
  if (name == call.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return false;
  auto args = call.find("arguments");
  if (args == call.end()) args = call.find("parameters");
  std::string arguments = "{}";
  if (args != call.end()) {
    if (args->is_object()) {
      arguments = args->dump(-1, ' ', false, Json::error_handler_t::replace);
    } else if (args->is_string()) {  // arguments given as a JSON string: accept if it encodes an object
      const Json parsed = parse_json_or_discarded<Json>(args->get_ref<const std::string&>());
      if (parsed.is_discarded() || !parsed.is_object()) return false;
      arguments = parsed.dump(-1, ' ', false, Json::error_handler_t::replace);
    } else {
      return false;
    }
  }
  Call c;
  c.id = make_call_id(calls_.size());
  c.name = name->get<std::string>();
  c.arguments = std::move(arguments);
  ChatDelta d;
  d.kind = ChatDelta::Kind::kToolCall;
  d.tool_index = static_cast<int>(calls_.size());
  d.tool_id = c.id;
  d.tool_name = c.name;
  d.tool_arguments = c.arguments;
  calls_.push_back(std::move(c));
  out->push_back(std::move(d));
  return true;
}

bool ChatOutputParser::emit_tagged_call(std::string_view body, std::vector<ChatDelta>* out) {
  switch (format_) {
    case ToolCallFormat::kQwen35Xml: {
      const std::optional<Json> call = parse_qwen35_xml_call(body, tool_schemas_);
      return call.has_value() && emit_call(*call, out);
    }
    case ToolCallFormat::kGemma4: {
      const std::optional<Json> call = parse_gemma4_call(body);
      return call.has_value() && emit_call(*call, out);
    }
    default: return emit_call(parse_json_or_discarded<Json>(body), out);
  }
}

bool ChatOutputParser::emit_calls(std::string_view body, std::vector<ChatDelta>* out) {
  std::vector<Json> calls;
  const Json whole = parse_json_or_discarded<Json>(body);
  if (whole.is_object()) {
    calls.push_back(whole);
  } else if (whole.is_array() && !whole.empty()) {
    for (const Json& c : whole) calls.push_back(c);
  } else {
    std::vector<std::string_view> pieces;
    if (!split_objects(body, &pieces)) return false;
    for (std::string_view p : pieces) {
      calls.push_back(parse_json_or_discarded<Json>(p));
    }
  }
  // All or nothing: validate every call before emitting any.
  for (const Json& c : calls) {
    if (!c.is_object()) return false;
    const auto name = c.find("name");
    if (name == c.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return false;
    auto args = c.find("arguments");
    if (args == c.end()) args = c.find("parameters");
    if (args != c.end() && !args->is_object()) {
      if (!args->is_string()) return false;
      const Json parsed = parse_json_or_discarded<Json>(args->get_ref<const std::string&>());
      if (!parsed.is_object()) return false;
    }
  }
  for (const Json& c : calls) {
    const bool ok = emit_call(c, out);
    (void)ok;  // validated above
  }
  return true;
}

void ChatOutputParser::process(bool final, std::vector<ChatDelta>* out) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        const size_t space = leading_space(buf_);
        const std::string_view rest = std::string_view(buf_).substr(space);
        if (rest.empty() && !final) return;  // only whitespace so far
        if (think_allowed_) {
          if (rest.starts_with(think_open_)) {
            buf_.erase(0, space + think_open_.size());
            state_ = State::kThink;
            continue;
          }
          if (!final && think_open_.starts_with(rest)) return;
        }
        if (llama_tools_) {
          if (rest.starts_with(kPythonTag)) {
            state_ = State::kLlamaJson;
            continue;
          }
          const Match m = llama_call_start(rest);
          if (m == Match::kYes) {
            state_ = State::kLlamaJson;
            continue;
          }
          if (!final && (m == Match::kMaybe || kPythonTag.starts_with(rest))) return;
        }
        state_ = State::kContent;  // leading whitespace stays and is emitted as content
        continue;
      }

      case State::kThink: {
        const size_t pos = buf_.find(think_close_);
        if (pos != std::string::npos) {
          const std::string_view r = std::string_view(buf_).substr(0, pos);
          emit_reasoning(r.substr(0, r.size() - trailing_space(r)), out);
          buf_.erase(0, pos + think_close_.size());
          state_ = State::kContent;
          strip_leading_ws_ = true;  // the "\n\n" after </think> is template syntax, not content
          continue;
        }
        if (final) {  // unterminated: everything is reasoning
          const std::string_view r = buf_;
          emit_reasoning(r.substr(0, r.size() - trailing_space(r)), out);
          buf_.clear();
          return;
        }
        const size_t n = decided_length(buf_, think_close_, /*hold_space=*/true);
        emit_reasoning(std::string_view(buf_).substr(0, n), out);
        buf_.erase(0, n);
        return;
      }

      case State::kContent: {
        if (strip_leading_ws_) {
          buf_.erase(0, leading_space(buf_));
          if (buf_.empty()) return;
          strip_leading_ws_ = false;
        }
        if (!hermes_tools_ && !gemma_channels_) {
          const size_t n = final ? buf_.size() : decided_length(buf_, {}, /*hold_space=*/false);
          emit_content(std::string_view(buf_).substr(0, n), out);
          buf_.erase(0, n);
          return;
        }
        // The markers that may interrupt content: a tagged call's open marker, and for Gemma 4
        // another thought block or a stray <channel|> (llama.cpp's parser consumes both).
        const std::string_view markers[3] = {hermes_tools_ ? tool_open_ : std::string_view(),
                                             gemma_channels_ ? think_open_ : std::string_view(),
                                             gemma_channels_ ? think_close_ : std::string_view()};
        size_t pos = std::string::npos;
        size_t which = 0;
        for (size_t i = 0; i < 3; ++i) {
          if (markers[i].empty()) continue;
          const size_t p = buf_.find(markers[i]);
          if (p < pos) {
            pos = p;
            which = i;
          }
        }
        if (pos != std::string::npos) {
          const std::string_view before = std::string_view(buf_).substr(0, pos);
          const size_t space = trailing_space(before);
          emit_content(before.substr(0, before.size() - space), out);
          if (which == 0) {
            ws_before_call_ = std::string(before.substr(before.size() - space));
            state_ = State::kToolCall;
          } else if (which == 1) {
            state_ = State::kThink;
          } else {
            strip_leading_ws_ = true;  // a stray <channel|> is dropped with the whitespace around it
          }
          buf_.erase(0, pos + markers[which].size());
          continue;
        }
        size_t n = buf_.size();
        if (!final) {
          for (const std::string_view m : markers) {
            if (!m.empty()) n = std::min(n, decided_length(buf_, m, /*hold_space=*/true));
          }
        }
        emit_content(std::string_view(buf_).substr(0, n), out);
        buf_.erase(0, n);
        return;
      }

      case State::kToolCall: {
        const size_t pos = buf_.find(tool_close_);
        if (pos == std::string::npos && !final) return;  // hold the whole call until it closes
        const std::string_view body = std::string_view(buf_).substr(0, pos == std::string::npos ? buf_.size() : pos);
        if (emit_tagged_call(body, out)) {
          buf_.erase(0, pos == std::string::npos ? buf_.size() : pos + tool_close_.size());
          strip_leading_ws_ = true;  // newlines between calls are syntax
        } else {
          // Not a valid call: give back the text verbatim as content.
          std::string raw = ws_before_call_;
          raw.append(tool_open_);
          raw.append(body);
          if (pos != std::string::npos) raw.append(tool_close_);
          emit_content(raw, out);
          buf_.erase(0, pos == std::string::npos ? buf_.size() : pos + tool_close_.size());
        }
        ws_before_call_.clear();
        state_ = State::kContent;
        if (final && buf_.empty()) return;
        continue;
      }

      case State::kLlamaJson: {
        if (!final) return;  // the call is the whole message: decide at the end
        std::string_view body = buf_;
        body.remove_prefix(leading_space(body));
        if (body.starts_with(kPythonTag)) body.remove_prefix(kPythonTag.size());
        if (!emit_calls(body, out)) emit_content(buf_, out);
        buf_.clear();
        state_ = State::kContent;
        return;
      }
    }
  }
}

Json ChatOutputParser::message() const {
  Json m = Json::object();
  m["role"] = "assistant";
  m["content"] = content_.empty() && !calls_.empty() ? Json(nullptr) : Json(content_);
  if (!reasoning_.empty()) m["reasoning_content"] = reasoning_;
  if (!calls_.empty()) {
    Json calls = Json::array();
    for (const Call& c : calls_) {
      Json call = Json::object();
      call["id"] = c.id;
      call["type"] = "function";
      call["function"] = {{"name", c.name}, {"arguments", c.arguments}};
      calls.push_back(std::move(call));
    }
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

}  // namespace sniper::server
