// SPDX-License-Identifier: MIT
#include "server/structured_output.h"

#include "sampling/gbnf.h"
#include "sampling/json_schema_grammar.h"
#include "server/field_validators.h"

namespace sniper::server {

namespace {

// `where` prefixes the message (the schema's field); `param` is the request field.
std::optional<ApiError> compile(const Json& schema, const char* where, const char* param,
                                std::shared_ptr<const Grammar>* out) {
  auto g = json_schema_grammar(schema);
  if (!g.ok()) return bad_request(std::string(where) + ": " + g.error().message, param);
  *out = std::move(g).value();
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> openai_response_format(const Json& rf, std::shared_ptr<const Grammar>* out) {
  if (rf.is_null()) return std::nullopt;
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
    return bad_request("response_format must be an object with a string 'type' (text, json_object or json_schema)",
                       "response_format");
  }
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    *out = json_object_grammar();
    return std::nullopt;
  }
  if (type == "json_schema") {
    auto js = rf.find("json_schema");
    if (js == rf.end() || !js->is_object()) {
      return bad_request("response_format.json_schema must be an object holding the schema", "response_format");
    }
    auto schema = js->find("schema");
    if (schema == js->end()) {
      *out = json_object_grammar();  // OpenAI: a json_schema without a schema is any JSON object
      return std::nullopt;
    }
    return compile(*schema, "response_format.json_schema.schema", "response_format", out);
  }
  return bad_request("response_format.type is '" + type + "' but must be text, json_object or json_schema",
                     "response_format");
}

std::optional<ApiError> ollama_format(const Json& format, std::shared_ptr<const Grammar>* out) {
  if (format.is_null()) return std::nullopt;
  if (format.is_string()) {
    const std::string f = format.get<std::string>();
    if (f.empty()) return std::nullopt;
    if (f == "json") {
      *out = json_object_grammar();
      return std::nullopt;
    }
    return bad_request("format is '" + f + "' but must be \"json\" or a JSON schema object", "format");
  }
  if (!format.is_object()) return bad_request("format must be \"json\" or a JSON schema object", "format");
  return compile(format, "format", "format", out);
}

std::optional<ApiError> gbnf_grammar(const Json& grammar, std::shared_ptr<const Grammar>* out) {
  if (grammar.is_null()) return std::nullopt;
  if (!grammar.is_string()) {
    return bad_request(std::string("grammar must be a string (GBNF), got ") + json_kind(grammar), "grammar");
  }
  if (*out != nullptr) {
    return bad_request("grammar and response_format (or json_schema) both constrain the output; send one", "grammar");
  }
  auto g = parse_gbnf(grammar.get_ref<const std::string&>());
  if (!g.ok()) return bad_request(g.error().message, "grammar");
  *out = std::move(g).value();
  return std::nullopt;
}

std::optional<ApiError> llama_json_schema(const Json& schema, std::shared_ptr<const Grammar>* out) {
  if (schema.is_null()) return std::nullopt;
  if (*out != nullptr) {
    return bad_request("json_schema and response_format (or grammar) both constrain the output; send one",
                       "json_schema");
  }
  return compile(schema, "json_schema", "json_schema", out);
}

}  // namespace sniper::server
