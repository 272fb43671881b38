// SPDX-License-Identifier: MIT
// ServedModel: one model as the routes serve it: the engine Model, its tokenizer, parsed chat
// template, fingerprint (for saved contexts) and the Scheduler whose slots run its requests.
// Created when a model is loaded (ModelPool) and destroyed when it is unloaded: the scheduler
// stops (cancelling what is left, though the pool only unloads a model nobody uses) before the
// model it runs on is freed. Thread-safe after creation: the routes read the immutable members
// and submit jobs to the scheduler.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "engine/model.h"
#include "server/chat_format.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "server/server_options.h"
#include "tokenizer/chat_template.h"

namespace sniper::server {

struct ServedModel {
  std::string id;                // the name requests use in "model"
  std::unique_ptr<Model> owned;  // null when the model is borrowed (HttpServer::create(Model&))
  Model* model = nullptr;        // owned.get() or the borrowed model
  const Tokenizer* tokenizer = nullptr;
  std::optional<ChatTemplate> chat_template;  // absent: the model carries none
  ChatFormat chat_format;
  std::string bos_token, eos_token;
  uint64_t fingerprint = 0;
  // Set when the pool stops (SIGTERM, unload): chat-template renders in progress end at once
  // (render_chat's cancel flag) instead of holding the server up.
  std::atomic<bool> stopping{false};
  // The tokens' bytes for grammar-constrained sampling, built on first use (make_generation_job).
  std::mutex grammar_vocab_mu;
  std::shared_ptr<const TokenVocabulary> grammar_vocab;
  std::unique_ptr<Scheduler> scheduler;  // last: destroyed (stopped) before the model

  // Builds the serving state of `model` (borrowed when `owned` is null, else owned.get()) and
  // starts its scheduler with options' slots and session settings. Errors: the model has no
  // tokenizer, its chat template does not parse, the fingerprint cannot be computed, the draft
  // model's vocabulary differs (check_draft_vocab), the slots cannot be created.
  static Result<std::unique_ptr<ServedModel>> create(std::string id, Model* model, std::unique_ptr<Model> owned,
                                                     const ServerOptions& options, Metrics* metrics);
  ~ServedModel();
};

}  // namespace sniper::server
