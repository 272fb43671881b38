// SPDX-License-Identifier: MIT
// ModelPool: the models `sniper serve` can serve, loaded on demand under one memory budget.
//
// - At most max_loaded models are in memory (loading and unloading ones included); each is
//   planned for mem_bytes / max_loaded, so the loaded models together stay within the budget.
// - A request acquire()s a lease on its model; while any lease is held the model is never
//   unloaded. A model nobody holds is unloaded keep_alive_s after its last release (0: at once,
//   < 0: never), or when a model that is not loaded is wanted and the pool is full: the least
//   recently used model without leases goes first; if every loaded model is in use, the request
//   waits for one to be released.
// - Loads and unloads run on the pool's own thread, one at a time, so an HTTP thread only
//   waits (at most load_timeout_s, then 503) and requests to other loaded models keep running.
// - A model that fails to load answers the waiting requests with the error (500); the next
//   request tries again.
// Thread-safe. status() and counters() describe the pool for /v1/models, /metrics and (after
// the merge) Ollama's /api/ps.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "server/model_sources.h"
#include "server/openai_protocol.h"
#include "server/served_model.h"

namespace sniper::server {

struct ModelPoolOptions {
  int max_loaded = 1;
  double keep_alive_s = 300;    // idle time before an unload; 0: right after the request; < 0: never
  double load_timeout_s = 600;  // how long a request waits for its model (loading, or room for it)
  uint64_t mem_bytes = 0;       // the whole budget; 0: unlimited
};

// Loads one model planned for `mem_bytes` (0: unlimited). Runs on the pool's thread.
using ModelLoader = std::function<Result<std::unique_ptr<ServedModel>>(const ModelSource& source, uint64_t mem_bytes)>;

enum class ModelState { kUnloaded, kLoading, kLoaded, kUnloading };
const char* model_state_name(ModelState s);

// One model's state, a copy taken under the pool's lock.
struct ModelStatus {
  std::string name;
  std::vector<std::string> aliases;  // other names it answers to (serve --alias; "*": any)
  std::string path;
  uint64_t size_bytes = 0;  // the file(s) on disk
  ModelState state = ModelState::kUnloaded;
  int64_t loaded_at_unix = 0;   // seconds since the epoch; 0 unless loaded
  int64_t expires_at_unix = 0;  // when keep-alive unloads it (idle, loaded); 0: not scheduled
  double keep_alive_s = 0;      // its keep-alive (the pool's, or set_keep_alive's); < 0: never
  uint64_t memory_bytes = 0;    // the loaded model's memory plan (weights, KV, scratch); 0 unless loaded
  uint64_t budget_bytes = 0;    // the budget share it is planned for (0: unlimited)
  double load_ms = 0;           // its last load
  uint64_t n_loads = 0;
  int64_t n_active = 0;    // requests holding it now
  int64_t n_waiting = 0;   // requests waiting for it
  std::string last_error;  // its last failed load
  // What it can do once loaded (model_capabilities(): completion, tools, thinking, vision,
  // audio); empty while unloaded.
  std::vector<std::string> capabilities;
};

struct ModelPoolCounters {
  uint64_t loads = 0;
  uint64_t load_failures = 0;
  uint64_t unloads_idle = 0;   // keep-alive expired
  uint64_t swaps = 0;          // unloads to make room for another model
  uint64_t wait_timeouts = 0;  // requests answered 503 after load_timeout_s
  int max_loaded = 1;
  double keep_alive_s = 0;
};

class ModelPool;

// A held model: never unloaded while a lease exists. Release by destroying it (any thread).
class ModelLease {
 public:
  ~ModelLease();
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;
  ServedModel& model() const { return *model_; }
  ServedModel* operator->() const { return model_.get(); }

 private:
  friend class ModelPool;
  ModelLease(ModelPool* pool, size_t index, std::shared_ptr<ServedModel> model, bool touch)
      : pool_(pool), index_(index), model_(std::move(model)), touch_(touch) {}
  ModelPool* pool_;
  size_t index_;
  std::shared_ptr<ServedModel> model_;
  bool touch_;  // the release counts as use (keep-alive restarts)
};

class ModelPool {
 public:
  // Starts the pool's thread; nothing is loaded yet. Errors: no source, duplicate names,
  // max_loaded < 1.
  static Result<std::unique_ptr<ModelPool>> create(std::vector<ModelSource> sources, const ModelPoolOptions& options,
                                                   ModelLoader loader);
  // One model that is already loaded and never unloaded (`sniper serve -m`, tests).
  // `aliases`: other names it answers to (ModelSource::aliases).
  static std::unique_ptr<ModelPool> create_pinned(std::unique_ptr<ServedModel> model, const std::string& path,
                                                  std::vector<std::string> aliases = {});
  ~ModelPool();  // stop()s, unloads everything. Leases must be gone.

  // Names: a model's name, one of its aliases (ModelSource::aliases), or any name at all when a
  // model has the alias "*". The model a request leases is noted in the calling thread's request
  // log (request_log.h).
  // Waits until `name` is loaded and leases it. "" picks default_name(). Errors (in *error, and
  // null returned): 404 model_not_found for an unknown name (the message lists the models),
  // 503 model_load_timeout after load_timeout_s, 500 model_load_failed, 503 when stopping.
  std::shared_ptr<ModelLease> acquire(const std::string& name, ApiError* error);
  // A lease on `name` only if it is loaded now; does not load, wait or restart keep-alive.
  std::shared_ptr<ModelLease> acquire_if_loaded(const std::string& name);
  // The only model, or (several) the one used last, or the first by name when none was used.
  std::string default_name() const;
  bool has(const std::string& name) const;
  // Overrides `name`'s keep-alive from now on (Ollama's keep_alive): 0 unloads it as soon as no
  // request holds it, < 0 never, else after that many idle seconds; nullopt: the pool's again. False (nothing changes)
  // for an unknown name or a pinned pool (its model never unloads).
  bool set_keep_alive(const std::string& name, std::optional<double> seconds);
  std::vector<ModelStatus> status() const;
  ModelPoolCounters counters() const;
  const ModelPoolOptions& options() const { return options_; }
  // Prometheus text: loaded models, memory and load time per model, loads, unloads and swaps.
  std::string metrics_text() const;
  // Unloads idle models and refuses new acquires (waiters get 503). Idempotent.
  void stop();

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    ModelSource source;
    ModelState state = ModelState::kUnloaded;
    std::shared_ptr<ServedModel> served;
    int64_t n_active = 0;
    int64_t n_waiting = 0;
    uint64_t want_seq = 0;       // order in which unloaded models were asked for
    uint64_t fail_seq = 0;       // bumped on each failed load
    bool retry_blocked = false;  // the last load failed and no request came since
    Clock::time_point last_used{};
    uint64_t use_seq = 0;  // LRU order
    int64_t loaded_at_unix = 0;
    uint64_t memory_bytes = 0;
    double load_ms = 0;
    uint64_t n_loads = 0;
    std::string last_error;
    std::optional<double> keep_alive_override;  // set_keep_alive
  };

  ModelPool(std::vector<ModelSource> sources, const ModelPoolOptions& options, ModelLoader loader);
  friend class ModelLease;
  void release(size_t index, bool touch);
  void loop();
  int n_resident_locked() const;
  double keep_alive_locked(const Entry& e) const;
  Clock::time_point expiry_locked(const Entry& e) const;
  // Runs with mu_ held by `lock`, releasing it around the load / unload itself.
  void load_locked(size_t index, std::unique_lock<std::mutex>& lock);
  void unload_locked(size_t index, std::unique_lock<std::mutex>& lock, bool for_room);
  int find_locked(const std::string& name) const;
  uint64_t share_bytes() const;

  ModelPoolOptions options_;
  ModelLoader loader_;
  mutable std::mutex mu_;  // guards entries_' mutable fields, counters_, the sequences, stopping_
  std::condition_variable cv_;
  std::vector<Entry> entries_;  // fixed after construction; sorted by name
  ModelPoolCounters counters_;
  uint64_t seq_ = 0;
  bool stopping_ = false;
  bool pinned_ = false;
  std::thread thread_;
};

}  // namespace sniper::server
