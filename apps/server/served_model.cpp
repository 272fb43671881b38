// SPDX-License-Identifier: MIT
#include "server/served_model.h"

#include "base/check.h"
#include "engine/draft_model.h"
#include "engine/session_state.h"

namespace sniper::server {

Result<std::unique_ptr<ServedModel>> ServedModel::create(std::string id, Model* model, std::unique_ptr<Model> owned,
                                                         const ServerOptions& options, Metrics* metrics) {
  auto m = std::make_unique<ServedModel>();
  m->id = std::move(id);
  m->owned = std::move(owned);
  m->model = m->owned != nullptr ? m->owned.get() : model;
  CHECK(m->model != nullptr, "ServedModel::create needs a model");
  SNIPER_ASSIGN_OR_RETURN(m->tokenizer, m->model->tokenizer());
  if (!m->model->chat_template().empty()) {
    auto tmpl = ChatTemplate::parse(m->model->chat_template());
    if (!tmpl.ok()) return make_error("the model's chat template: %s", tmpl.error().message.c_str());
    m->chat_template.emplace(std::move(tmpl).value());
    m->chat_format = detect_chat_format(m->model->chat_template());
  }
  const Tokenizer& tok = *m->tokenizer;
  if (tok.bos_id() >= 0) m->bos_token = tok.token_to_piece(tok.bos_id(), true);
  if (tok.eos_id() >= 0) m->eos_token = tok.token_to_piece(tok.eos_id(), true);
  SNIPER_ASSIGN_OR_RETURN(m->fingerprint, model_fingerprint(m->model->gguf()));
  if (options.draft_model != nullptr) {  // a draft that cannot serve this target: refused at start
    const std::string& draft_path = options.draft_model->gguf().path;
    auto draft_tok = options.draft_model->tokenizer();
    if (!draft_tok.ok()) return make_error("draft model %s: %s", draft_path.c_str(), draft_tok.error().message.c_str());
    Status compat = check_draft_vocab(tok, **draft_tok);
    if (!compat.ok()) return make_error("draft model %s: %s", draft_path.c_str(), compat.error().message.c_str());
  }
  if (options.mmproj != nullptr) {
    Status fits = options.mmproj->check_language_model(m->model->config().dim);
    if (!fits.ok()) return make_error("--mmproj %s: %s", options.mmproj->path().c_str(), fits.error().message.c_str());
    m->media = std::make_unique<ServedMedia>(
        *options.mmproj, options.session.n_threads > 0 ? options.session.n_threads : hardware_threads());
  }
  SchedulerOptions so;
  so.n_slots = options.n_slots;
  so.queue_capacity = options.queue_capacity;
  so.session = options.session;
  so.model_fingerprint = m->fingerprint;
  so.spec_ngram_size = options.spec_ngram_size;
  so.draft_model = options.draft_model;
  // A model without an MTP block (a directory of models) decodes without drafts.
  so.spec_mtp = options.spec_mtp && m->model->config().n_nextn_layers > 0;
  so.spec = options.spec;
  so.context_shift = options.context_shift;
  so.n_keep = options.n_keep;
  SNIPER_ASSIGN_OR_RETURN(m->scheduler, Scheduler::create(*m->model, tok, so, metrics));
  return m;
}

std::vector<std::string> model_capabilities(const ServedModel& m) {
  std::vector<std::string> caps = {"completion"};
  if (m.chat_format.tool_calls != ToolCallFormat::kNone) caps.push_back("tools");
  if (m.chat_format.supports_thinking) caps.push_back("thinking");
  if (m.media != nullptr && m.media->supports(MediaKind::kImage)) caps.push_back("vision");
  if (m.media != nullptr && m.media->supports(MediaKind::kAudio)) caps.push_back("audio");
  return caps;
}

ServedModel::~ServedModel() {
  if (scheduler != nullptr) scheduler->stop();
  scheduler.reset();
}

}  // namespace sniper::server
