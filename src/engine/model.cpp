// SPDX-License-Identifier: MIT
#include "engine/model.h"

namespace sniper {

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const ModelLoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  auto gguf = gguf_open(path);
  if (!gguf.ok()) return gguf.error();  // already names the path
  m->gguf_ = std::move(gguf).value();
  auto config = load_model_config(m->gguf_);
  if (!config.ok()) return make_error("%s: %s", path.c_str(), config.error().message.c_str());
  m->config_ = std::move(config).value();
  auto store = WeightStore::open(m->gguf_, options.residency);
  if (!store.ok()) return store.error();
  m->store_ = std::move(store).value();
  auto weights = bind_model_weights(m->config_, *m->store_);
  if (!weights.ok()) return make_error("%s: %s", path.c_str(), weights.error().message.c_str());
  m->weights_ = std::move(weights).value();
  if (m->gguf_.has("tokenizer.ggml.model")) {
    auto tok = Tokenizer::from_gguf(m->gguf_);
    if (tok.ok()) {
      m->tokenizer_.emplace(std::move(tok).value());
      if (m->tokenizer_->n_vocab() != m->config_.vocab_size) {
        return make_error("%s: the vocabulary has %d tokens but token_embd.weight has %ld rows", path.c_str(),
                          m->tokenizer_->n_vocab(), static_cast<long>(m->config_.vocab_size));
      }
    } else {
      m->tokenizer_error_ = tok.error().message;
    }
  } else {
    m->tokenizer_error_ = "the file has no tokenizer.ggml.model";
  }
  auto tmpl = m->gguf_.get_string_or("tokenizer.chat_template", "");
  if (!tmpl.ok()) return make_error("%s: %s", path.c_str(), tmpl.error().message.c_str());
  m->chat_template_ = *tmpl;
  return m;
}

Result<const Tokenizer*> Model::tokenizer() const {
  if (!tokenizer_) return make_error("%s: no usable tokenizer: %s", gguf_.path.c_str(), tokenizer_error_.c_str());
  return &*tokenizer_;
}

}  // namespace sniper
