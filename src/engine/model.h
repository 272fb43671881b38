// SPDX-License-Identifier: MIT
// Model: everything loaded once per GGUF file and shared read-only by sessions: the parsed
// file, the weight store, the config, the bound weights and the tokenizer.
// Thread-safe to share after load().
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/model_weights.h"
#include "tokenizer/tokenizer.h"
#include "weights/weight_store.h"

namespace sniper {

struct ModelLoadOptions {
  Residency residency = Residency::kResident;
};

class Model {
 public:
  // Parses, validates and binds the model at `path`. Errors name the file and the problem.
  static Result<std::unique_ptr<Model>> load(const std::string& path, const ModelLoadOptions& options);

  const GgufFile& gguf() const { return gguf_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const WeightStore& store() const { return *store_; }
  // The model's tokenizer; an Error if the file carries no vocabulary.
  Result<const Tokenizer*> tokenizer() const;
  // The tokenizer.chat_template string, empty if absent.
  const std::string& chat_template() const { return chat_template_; }

 private:
  Model() = default;
  GgufFile gguf_;
  std::unique_ptr<WeightStore> store_;
  ModelConfig config_;
  ModelWeights weights_;
  std::optional<Tokenizer> tokenizer_;
  std::string tokenizer_error_;
  std::string chat_template_;
};

}  // namespace sniper
