// SPDX-License-Identifier: MIT
// Qwen3.5 XML and Gemma 4 tool-call bodies -> {"name", "arguments"} (see tool_call_syntax.h).
// Both parsers are strict: they accept exactly what the models' chat templates write (plus
// whitespace where the templates put newlines), so anything else falls back to content.
#include "server/tool_call_syntax.h"

#include <string>

#include "server/bounded_json.h"

namespace sniper::server {
namespace {

using Json = nlohmann::ordered_json;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

void skip_space(std::string_view s, size_t* pos) {
  while (*pos < s.size() && is_space(s[*pos])) ++*pos;
}

bool consume(std::string_view s, size_t* pos, std::string_view literal) {
  if (s.substr(*pos).starts_with(literal)) {
    *pos += literal.size();
    return true;
  }
  return false;
}

// Reads "<TAG=NAME>" at pos (TAG given with its '<' and '='); NAME is non-empty and holds no
// '<', '>' or newline.
bool read_tag_name(std::string_view s, size_t* pos, std::string_view open, std::string* name) {
  if (!consume(s, pos, open)) return false;
  const size_t end = s.find('>', *pos);
  if (end == std::string_view::npos || end == *pos) return false;
  const std::string_view n = s.substr(*pos, end - *pos);
  if (n.find_first_of("<\n") != std::string_view::npos) return false;
  *name = std::string(n);
  *pos = end + 1;
  return true;
}

// The JSON Schema "type" of one parameter says the value is a string (and only a string).
bool schema_says_string(const Json& tool_schemas, const std::string& function, const std::string& key) {
  if (!tool_schemas.is_object()) return false;
  const auto fn = tool_schemas.find(function);
  if (fn == tool_schemas.end() || !fn->is_object()) return false;
  const auto props = fn->find("properties");
  if (props == fn->end() || !props->is_object()) return false;
  const auto prop = props->find(key);
  if (prop == props->end() || !prop->is_object()) return false;
  const auto type = prop->find("type");
  if (type == prop->end()) return false;
  if (type->is_string()) return type->get_ref<const std::string&>() == "string";
  if (type->is_array()) {
    for (const Json& t : *type) {
      if (!t.is_string() || t.get_ref<const std::string&>() != "string") return false;
    }
    return !type->empty();
  }
  return false;
}

Json convert_xml_value(std::string value, bool is_string) {
  if (is_string) return Json(std::move(value));
  if (value == "True") return Json(true);  // the template writes non-JSON scalars with Python's str()
  if (value == "False") return Json(false);
  if (value == "None") return Json(nullptr);
  Json parsed = parse_json_or_discarded<Json>(value);  // bounded: model output can nest without end
  if (parsed.is_discarded()) return Json(std::move(value));
  return parsed;
}

// Recursive-descent reader of Gemma 4's argument syntax.
class GemmaReader {
 public:
  explicit GemmaReader(std::string_view s) : s_(s) {}

  std::optional<Json> parse_call() {
    skip_space(s_, &pos_);
    if (!consume(s_, &pos_, "call:")) return std::nullopt;
    const size_t brace = s_.find('{', pos_);
    if (brace == std::string_view::npos || brace == pos_) return std::nullopt;
    const std::string_view name = s_.substr(pos_, brace - pos_);
    if (name.find_first_of(" \n\t\r<>{}:,") != std::string_view::npos) return std::nullopt;
    pos_ = brace;
    Json arguments;
    if (!parse_dict(&arguments, 1)) return std::nullopt;
    skip_space(s_, &pos_);
    if (pos_ != s_.size()) return std::nullopt;  // trailing text
    Json call = Json::object();
    call["name"] = std::string(name);
    call["arguments"] = std::move(arguments);
    return call;
  }

 private:
  static constexpr std::string_view kQuote = "<|\"|>";

  bool parse_string(Json* out) {
    if (!consume(s_, &pos_, kQuote)) return false;
    const size_t end = s_.find(kQuote, pos_);
    if (end == std::string_view::npos) return false;
    *out = std::string(s_.substr(pos_, end - pos_));
    pos_ = end + kQuote.size();
    return true;
  }

  bool parse_number(Json* out) {
    const size_t start = pos_;
    while (pos_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[pos_]) != std::string_view::npos) ++pos_;
    if (pos_ == start) return false;
    const std::string_view text = s_.substr(start, pos_ - start);
    Json parsed = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_number()) return false;
    *out = std::move(parsed);
    return true;
  }

  bool parse_value(Json* out, int depth) {
    skip_space(s_, &pos_);
    if (pos_ >= s_.size()) return false;
    if (s_.substr(pos_).starts_with(kQuote)) return parse_string(out);
    const char c = s_[pos_];
    if (c == '{') return parse_dict(out, depth + 1);
    if (c == '[') return parse_array(out, depth + 1);
    if (consume(s_, &pos_, "true")) {
      *out = true;
      return true;
    }
    if (consume(s_, &pos_, "false")) {
      *out = false;
      return true;
    }
    if (consume(s_, &pos_, "null") || consume(s_, &pos_, "None")) {  // the template writes None
      *out = nullptr;
      return true;
    }
    return parse_number(out);
  }

  // key: <|"|>text<|"|> or [^:}]+ (as llama.cpp's gemma4 grammar), then ':'.
  bool parse_key(std::string* key) {
    skip_space(s_, &pos_);
    if (s_.substr(pos_).starts_with(kQuote)) {
      Json quoted;
      if (!parse_string(&quoted)) return false;
      *key = quoted.get<std::string>();
    } else {
      const size_t end = s_.find_first_of(":}", pos_);
      if (end == std::string_view::npos || end == pos_ || s_[end] != ':') return false;
      *key = std::string(s_.substr(pos_, end - pos_));
      pos_ = end;
    }
    return consume(s_, &pos_, ":");
  }

  bool parse_dict(Json* out, int depth) {
    if (depth > kMaxToolCallDepth || !consume(s_, &pos_, "{")) return false;
    *out = Json::object();
    skip_space(s_, &pos_);
    if (consume(s_, &pos_, "}")) return true;
    while (true) {
      std::string key;
      Json value;
      if (!parse_key(&key) || !parse_value(&value, depth)) return false;
      (*out)[key] = std::move(value);
      skip_space(s_, &pos_);
      if (consume(s_, &pos_, "}")) return true;
      if (!consume(s_, &pos_, ",")) return false;
    }
  }

  bool parse_array(Json* out, int depth) {
    if (depth > kMaxToolCallDepth || !consume(s_, &pos_, "[")) return false;
    *out = Json::array();
    skip_space(s_, &pos_);
    if (consume(s_, &pos_, "]")) return true;
    while (true) {
      Json value;
      if (!parse_value(&value, depth)) return false;
      out->push_back(std::move(value));
      skip_space(s_, &pos_);
      if (consume(s_, &pos_, "]")) return true;
      if (!consume(s_, &pos_, ",")) return false;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<Json> parse_qwen35_xml_call(std::string_view body, const Json& tool_schemas) {
  size_t pos = 0;
  skip_space(body, &pos);
  std::string name;
  if (!read_tag_name(body, &pos, "<function=", &name)) return std::nullopt;
  Json arguments = Json::object();
  while (true) {
    skip_space(body, &pos);
    if (consume(body, &pos, "</function>")) break;
    std::string key;
    if (!read_tag_name(body, &pos, "<parameter=", &key)) return std::nullopt;
    const size_t end = body.find("</parameter>", pos);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view value = body.substr(pos, end - pos);
    if (value.starts_with('\n')) value.remove_prefix(1);  // the template's "\n" around the value
    if (value.ends_with('\n')) value.remove_suffix(1);
    arguments[key] = convert_xml_value(std::string(value), schema_says_string(tool_schemas, name, key));
    pos = end + std::string_view("</parameter>").size();
  }
  skip_space(body, &pos);
  if (pos != body.size()) return std::nullopt;  // trailing text after </function>
  Json call = Json::object();
  call["name"] = std::move(name);
  call["arguments"] = std::move(arguments);
  return call;
}

std::optional<Json> parse_gemma4_call(std::string_view body) { return GemmaReader(body).parse_call(); }

}  // namespace sniper::server
