// SPDX-License-Identifier: MIT
// ChatTemplate: parse once into a syntax tree, render each context with a fresh interpreter.
#include "tokenizer/chat_template.h"

#include <utility>

#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_parser.h"

namespace sniper {

struct ChatTemplate::Program {
  jinja::Body body;
};

ChatTemplate::ChatTemplate(std::string source, std::shared_ptr<const Program> program)
    : source_(std::move(source)), program_(std::move(program)) {}

Result<ChatTemplate> ChatTemplate::parse(std::string source) {
  if (source.size() > kMaxChatTemplateBytes) {
    return make_error("chat template: the template is %zu bytes but at most %zu are accepted", source.size(),
                      kMaxChatTemplateBytes);
  }
  auto body = jinja::parse_template(source);
  if (!body.ok()) return make_error("chat template: %s", body.error().message.c_str());
  auto program = std::make_shared<Program>();
  program->body = std::move(body).value();
  return ChatTemplate(std::move(source), std::move(program));
}

namespace {

template <typename Json>
Result<std::string> render_json(const jinja::Body& body, const Json& context, const ChatTemplateLimits& limits,
                                ChatTemplateUsage* usage) {
  if (!context.is_object()) {
    return make_error("chat template: the render context must be a JSON object, got %s", context.type_name());
  }
  SNIPER_ASSIGN_OR_RETURN(jinja::Value ctx, jinja::from_json(context));
  jinja::Limits jl;
  jl.max_work = limits.max_work;
  jl.max_steps = limits.max_steps;
  jl.max_call_depth = limits.max_call_depth;
  jl.max_nesting = limits.max_nesting;
  jl.max_string_bytes = limits.max_string_bytes;
  jl.max_total_bytes = limits.max_total_bytes;
  jl.max_time_ms = limits.max_time_ms;
  jl.cancel = limits.cancel;
  jinja::Interpreter interpreter{jl};
  auto out = interpreter.render(body, ctx.as_dict());
  if (usage != nullptr) {
    const jinja::Budget& b = interpreter.budget();
    usage->work = b.work_used();
    usage->steps = b.steps_used();
    usage->bytes = b.bytes_used();
    usage->max_nesting = b.max_nesting_seen();
  }
  if (!out.ok()) return out.error();
  return out;
}

}  // namespace

Result<std::string> ChatTemplate::render(const nlohmann::json& context, const ChatTemplateLimits& limits,
                                         ChatTemplateUsage* usage) const {
  return render_json(program_->body, context, limits, usage);
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context, const ChatTemplateLimits& limits,
                                         ChatTemplateUsage* usage) const {
  return render_json(program_->body, context, limits, usage);
}

}  // namespace sniper
