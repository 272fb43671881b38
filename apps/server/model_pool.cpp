// SPDX-License-Identifier: MIT
#include "server/model_pool.h"

#include "server/request_log.h"

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>

namespace sniper::server {

namespace {

// A Prometheus label value: backslash, quote and newline escaped.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

const char* model_state_name(ModelState s) {
  switch (s) {
    case ModelState::kUnloaded: return "unloaded";
    case ModelState::kLoading: return "loading";
    case ModelState::kLoaded: return "loaded";
    case ModelState::kUnloading: return "unloading";
  }
  return "?";
}

ModelLease::~ModelLease() {
  model_.reset();  // before the release: an unload after it finds the pool the model's only owner
  pool_->release(index_, touch_);
}

ModelPool::ModelPool(std::vector<ModelSource> sources, const ModelPoolOptions& options, ModelLoader loader)
    : options_(options), loader_(std::move(loader)) {
  std::sort(sources.begin(), sources.end(), [](const ModelSource& a, const ModelSource& b) { return a.name < b.name; });
  for (ModelSource& s : sources) {
    Entry e;
    e.source = std::move(s);
    entries_.push_back(std::move(e));
  }
  counters_.max_loaded = options_.max_loaded;
  counters_.keep_alive_s = options_.keep_alive_s;
}

Result<std::unique_ptr<ModelPool>> ModelPool::create(std::vector<ModelSource> sources, const ModelPoolOptions& options,
                                                     ModelLoader loader) {
  SNIPER_TRY(check_unique_names(sources));
  if (options.max_loaded < 1) return make_error("--max-loaded is %d but must be at least 1", options.max_loaded);
  if (!(options.load_timeout_s > 0)) return make_error("--load-timeout must be positive");
  std::unique_ptr<ModelPool> pool(new ModelPool(std::move(sources), options, std::move(loader)));
  pool->thread_ = std::thread([p = pool.get()] { p->loop(); });
  return pool;
}

std::unique_ptr<ModelPool> ModelPool::create_pinned(std::unique_ptr<ServedModel> model, const std::string& path,
                                                    std::vector<std::string> aliases) {
  ModelPoolOptions o;
  o.keep_alive_s = -1;
  o.mem_bytes = model->model->options().mem_bytes;
  ModelSource src{model->id, path, 0, std::move(aliases)};
  for (const GgufPart& part : model->model->gguf().parts) src.size_bytes += part.file_size;
  if (src.size_bytes == 0) src.size_bytes = model->model->gguf().file_size;
  std::unique_ptr<ModelPool> pool(new ModelPool({src}, o, nullptr));
  pool->pinned_ = true;
  Entry& e = pool->entries_[0];
  e.memory_bytes = model->model->plan().planned_bytes();
  e.served = std::move(model);
  e.state = ModelState::kLoaded;
  e.loaded_at_unix = static_cast<int64_t>(std::time(nullptr));
  e.last_used = Clock::now();
  e.n_loads = 1;
  return pool;
}

ModelPool::~ModelPool() {
  stop();
  for (Entry& e : entries_) e.served.reset();
}

void ModelPool::stop() {
  std::vector<std::shared_ptr<ServedModel>> loaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    for (Entry& e : entries_) {
      if (e.served != nullptr) loaded.push_back(e.served);
    }
  }
  for (auto& m : loaded) m->stopping.store(true);  // cancels chat-template renders in progress
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Ends running requests (their schedulers answer 503); the models are freed with the pool.
  for (auto& m : loaded) m->scheduler->stop();
}

int ModelPool::find_locked(const std::string& name) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].source.name == name) return static_cast<int>(i);
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    for (const std::string& alias : entries_[i].source.aliases) {
      if (alias == name) return static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    for (const std::string& alias : entries_[i].source.aliases) {
      if (alias == kAnyModelAlias) return static_cast<int>(i);
    }
  }
  return -1;
}

std::string ModelPool::default_name() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* best = &entries_[0];
  for (const Entry& e : entries_) {
    if (e.use_seq > best->use_seq) best = &e;
  }
  return best->source.name;
}

bool ModelPool::has(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find_locked(name) >= 0;
}

uint64_t ModelPool::share_bytes() const { return options_.mem_bytes / static_cast<uint64_t>(options_.max_loaded); }

int ModelPool::n_resident_locked() const {
  int n = 0;
  for (const Entry& e : entries_) n += e.state != ModelState::kUnloaded ? 1 : 0;
  return n;
}

double ModelPool::keep_alive_locked(const Entry& e) const {
  return e.keep_alive_override ? *e.keep_alive_override : options_.keep_alive_s;
}

ModelPool::Clock::time_point ModelPool::expiry_locked(const Entry& e) const {
  return e.last_used + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(keep_alive_locked(e)));
}

bool ModelPool::set_keep_alive(const std::string& name, std::optional<double> seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int index = find_locked(name);
    if (index < 0 || pinned_) return false;
    entries_[static_cast<size_t>(index)].keep_alive_override = seconds;
  }
  cv_.notify_all();
  return true;
}

std::shared_ptr<ModelLease> ModelPool::acquire(const std::string& requested, ApiError* error) {
  const std::string name = requested.empty() ? default_name() : requested;
  std::unique_lock<std::mutex> lock(mu_);
  const int index = find_locked(name);
  if (index < 0) {
    std::string names;
    for (const Entry& e : entries_) names += (names.empty() ? "'" : ", '") + e.source.name + "'";
    *error =
        bad_request("the model '" + name + "' does not exist; this server serves " + names, "model", "model_not_found");
    error->status = 404;
    return nullptr;
  }
  Entry& e = entries_[static_cast<size_t>(index)];
  note_request_model(e.source.name);  // the request log of the calling connection thread
  auto lease_locked = [&] {
    e.n_active++;
    e.use_seq = ++seq_;
    return std::shared_ptr<ModelLease>(new ModelLease(this, static_cast<size_t>(index), e.served, true));
  };
  if (e.state == ModelState::kLoaded && !stopping_) return lease_locked();
  const uint64_t fail0 = e.fail_seq;
  if (e.n_waiting++ == 0) e.want_seq = ++seq_;
  e.retry_blocked = false;
  cv_.notify_all();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.load_timeout_s));
  std::shared_ptr<ModelLease> lease;
  while (true) {
    if (stopping_) {
      *error = bad_request("the server is stopping", "", "server_busy");
      error->status = 503;
      error->type = "server_error";
      break;
    }
    if (e.state == ModelState::kLoaded) {
      lease = lease_locked();
      break;
    }
    if (e.fail_seq != fail0) {
      *error = bad_request("the model '" + name + "' failed to load: " + e.last_error, "model", "model_load_failed");
      error->status = 500;
      error->type = "server_error";
      break;
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && e.state != ModelState::kLoaded) {
      char msg[160];
      std::snprintf(
          msg, sizeof(msg), "the model '%s' did not become available within --load-timeout %.0f s (%s)", name.c_str(),
          options_.load_timeout_s,
          e.state == ModelState::kLoading ? "still loading" : "waiting for loaded models to finish their requests");
      *error = bad_request(msg, "model", "model_load_timeout");
      error->status = 503;
      error->type = "server_error";
      counters_.wait_timeouts++;
      break;
    }
  }
  e.n_waiting--;
  cv_.notify_all();
  return lease;
}

std::shared_ptr<ModelLease> ModelPool::acquire_if_loaded(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  const int index = find_locked(name);
  if (index < 0 || stopping_) return nullptr;
  Entry& e = entries_[static_cast<size_t>(index)];
  if (e.state != ModelState::kLoaded) return nullptr;
  e.n_active++;
  return std::shared_ptr<ModelLease>(new ModelLease(this, static_cast<size_t>(index), e.served, false));
}

void ModelPool::release(size_t index, bool touch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[index];
    e.n_active--;
    if (touch) e.last_used = Clock::now();
  }
  cv_.notify_all();
}

void ModelPool::load_locked(size_t index, std::unique_lock<std::mutex>& lock) {
  Entry& e = entries_[index];
  e.state = ModelState::kLoading;
  const ModelSource source = e.source;
  const uint64_t share = share_bytes();
  lock.unlock();
  const auto t0 = Clock::now();
  auto loaded = loader_(source, share);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  lock.lock();
  if (loaded.ok()) {
    e.served = std::move(loaded).value();
    e.state = ModelState::kLoaded;
    e.loaded_at_unix = static_cast<int64_t>(std::time(nullptr));
    e.memory_bytes = e.served->model->plan().planned_bytes();
    e.load_ms = ms;
    e.n_loads++;
    e.last_used = Clock::now();
    e.last_error.clear();
    counters_.loads++;
    std::fprintf(stderr, "sniper serve: loaded model '%s' in %.0f ms (plan %.1f MiB of %s)\n", source.name.c_str(), ms,
                 e.memory_bytes / 1048576.0,
                 share == 0 ? "an unlimited budget" : (std::to_string(share >> 20) + " MiB").c_str());
  } else {
    e.state = ModelState::kUnloaded;
    e.last_error = loaded.error().message;
    e.fail_seq++;
    e.retry_blocked = true;  // the requests waiting now get the error; a new request retries
    counters_.load_failures++;
    std::fprintf(stderr, "sniper serve: loading model '%s' failed: %s\n", source.name.c_str(), e.last_error.c_str());
  }
  cv_.notify_all();
}

void ModelPool::unload_locked(size_t index, std::unique_lock<std::mutex>& lock, bool for_room) {
  Entry& e = entries_[index];
  e.state = ModelState::kUnloading;
  std::shared_ptr<ServedModel> served = std::move(e.served);
  const std::string name = e.source.name;
  lock.unlock();
  const auto t0 = Clock::now();
  served.reset();  // the last owner: stops the scheduler, frees the model
  malloc_trim(0);  // hands the freed heap back to the system before the next model loads
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  lock.lock();
  e.state = ModelState::kUnloaded;
  e.loaded_at_unix = 0;
  e.memory_bytes = 0;
  (for_room ? counters_.swaps : counters_.unloads_idle)++;
  std::fprintf(stderr, "sniper serve: unloaded model '%s' in %.0f ms (%s)\n", name.c_str(), ms,
               for_room ? "room for another model" : "keep-alive expired");
  cv_.notify_all();
}

void ModelPool::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    // Keep-alive: unload an idle model nobody waits for once its time is up.
    bool acted = false;
    for (size_t i = 0; i < entries_.size() && !acted; ++i) {
      const Entry& e = entries_[i];
      if (keep_alive_locked(e) >= 0 && e.state == ModelState::kLoaded && e.n_active == 0 && e.n_waiting == 0 &&
          now >= expiry_locked(e)) {
        unload_locked(i, lock, /*for_room=*/false);
        acted = true;
      }
    }
    if (acted) continue;
    // The longest-wanted model that is not loaded: load it, or make room for it.
    int want = -1;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (e.state != ModelState::kUnloaded || e.n_waiting == 0 || e.retry_blocked) continue;
      if (want < 0 || e.want_seq < entries_[static_cast<size_t>(want)].want_seq) want = static_cast<int>(i);
    }
    if (want >= 0) {
      if (n_resident_locked() < options_.max_loaded) {
        load_locked(static_cast<size_t>(want), lock);
        continue;
      }
      int victim = -1;  // least recently used, nobody holding or waiting for it
      for (size_t i = 0; i < entries_.size(); ++i) {
        const Entry& e = entries_[i];
        if (e.state != ModelState::kLoaded || e.n_active != 0 || e.n_waiting != 0) continue;
        if (victim < 0 || e.use_seq < entries_[static_cast<size_t>(victim)].use_seq) victim = static_cast<int>(i);
      }
      if (victim >= 0) {
        unload_locked(static_cast<size_t>(victim), lock, /*for_room=*/true);
        continue;
      }
    }
    // Sleep until a release, a new request, or the next keep-alive expiry.
    auto wake = Clock::time_point::max();
    for (const Entry& e : entries_) {
      if (keep_alive_locked(e) >= 0 && e.state == ModelState::kLoaded && e.n_active == 0)
        wake = std::min(wake, expiry_locked(e));
    }
    if (wake == Clock::time_point::max()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, wake);
    }
  }
}

std::vector<ModelStatus> ModelPool::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelStatus> out;
  const int64_t now_unix = static_cast<int64_t>(std::time(nullptr));
  for (const Entry& e : entries_) {
    ModelStatus s;
    s.name = e.source.name;
    s.aliases = e.source.aliases;
    s.path = e.source.path;
    s.size_bytes = e.source.size_bytes;
    s.state = e.state;
    s.loaded_at_unix = e.loaded_at_unix;
    s.keep_alive_s = keep_alive_locked(e);
    if (e.state == ModelState::kLoaded && e.n_active == 0 && keep_alive_locked(e) >= 0) {
      const double left_s = std::chrono::duration<double>(expiry_locked(e) - Clock::now()).count();
      s.expires_at_unix = now_unix + static_cast<int64_t>(std::max(0.0, left_s) + 0.5);
    }
    s.memory_bytes = e.memory_bytes;
    s.budget_bytes = pinned_ ? options_.mem_bytes : share_bytes();
    s.load_ms = e.load_ms;
    s.n_loads = e.n_loads;
    s.n_active = e.n_active;
    s.n_waiting = e.n_waiting;
    s.last_error = e.last_error;
    out.push_back(std::move(s));
  }
  return out;
}

ModelPoolCounters ModelPool::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

std::string ModelPool::metrics_text() const {
  const std::vector<ModelStatus> models = status();
  const ModelPoolCounters c = counters();
  std::string out;
  auto head = [&out](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto per_model = [&](const char* name, const char* type, const char* help, auto value) {
    head(name, type, help);
    for (const ModelStatus& m : models)
      out += std::string(name) + "{model=\"" + label(m.name) + "\"} " + value(m) + "\n";
  };
  int n_loaded = 0;
  for (const ModelStatus& m : models) n_loaded += m.state == ModelState::kLoaded ? 1 : 0;
  head("sniper_models_loaded", "gauge", "Models in memory now.");
  out += "sniper_models_loaded " + std::to_string(n_loaded) + "\n";
  head("sniper_models_max_loaded", "gauge", "Models allowed in memory at once (--max-loaded).");
  out += "sniper_models_max_loaded " + std::to_string(c.max_loaded) + "\n";
  per_model("sniper_model_loaded", "gauge", "1 if the model is in memory.",
            [](const ModelStatus& m) { return std::string(m.state == ModelState::kLoaded ? "1" : "0"); });
  per_model("sniper_model_memory_bytes", "gauge",
            "The loaded model's memory plan (weights in RAM, KV, scratch); 0 if not loaded.",
            [](const ModelStatus& m) { return std::to_string(m.memory_bytes); });
  per_model("sniper_model_load_seconds", "gauge", "Duration of the model's last load.",
            [](const ModelStatus& m) { return std::to_string(m.load_ms / 1e3); });
  per_model("sniper_model_loads_total", "counter", "Times the model was loaded.",
            [](const ModelStatus& m) { return std::to_string(m.n_loads); });
  per_model("sniper_model_requests_active", "gauge", "Requests using the model now.",
            [](const ModelStatus& m) { return std::to_string(m.n_active); });
  per_model("sniper_model_requests_waiting", "gauge", "Requests waiting for the model to load.",
            [](const ModelStatus& m) { return std::to_string(m.n_waiting); });
  head("sniper_model_swaps_total", "counter", "Models unloaded to make room for another one.");
  out += "sniper_model_swaps_total " + std::to_string(c.swaps) + "\n";
  head("sniper_model_unloads_total", "counter", "Models unloaded, by reason.");
  out += "sniper_model_unloads_total{reason=\"keep_alive\"} " + std::to_string(c.unloads_idle) + "\n";
  out += "sniper_model_unloads_total{reason=\"room\"} " + std::to_string(c.swaps) + "\n";
  head("sniper_model_load_failures_total", "counter", "Model loads that failed.");
  out += "sniper_model_load_failures_total " + std::to_string(c.load_failures) + "\n";
  head("sniper_model_wait_timeouts_total", "counter",
       "Requests answered 503 after waiting --load-timeout for their model.");
  out += "sniper_model_wait_timeouts_total " + std::to_string(c.wait_timeouts) + "\n";
  return out;
}

}  // namespace sniper::server
