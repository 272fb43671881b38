// SPDX-License-Identifier: MIT
// Sampler implementation (see sampler.h). Steps follow llama.cpp's samplers: penalties
// (llama_sampler_penalties), top-k, top-p over the softmax of the current logits, min-p as a
// logit threshold max + log(min_p), temperature, then softmax and an inverse-CDF draw.
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "base/check.h"

namespace sniper {

namespace {

constexpr int kMaxRepeatLastN = 1 << 20;  // a window beyond any context length we support

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Candidate order: higher logit first, then lower id (makes every step deterministic).
struct ByLogitDesc {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    if (a.logit != b.logit) return a.logit > b.logit;
    return a.id < b.id;
  }
};

}  // namespace

Status SamplerConfig::validate() const {
  if (!std::isfinite(temperature) || temperature < 0) {
    return make_error("temperature is %g but must be finite and >= 0 (0 = greedy)", temperature);
  }
  if (top_k < 0) return make_error("top_k is %d but must be >= 0 (0 = disabled)", top_k);
  if (!(top_p > 0 && top_p <= 1)) return make_error("top_p is %g but must be in (0, 1] (1 = disabled)", top_p);
  if (!(min_p >= 0 && min_p <= 1)) return make_error("min_p is %g but must be in [0, 1] (0 = disabled)", min_p);
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0) {
    return make_error("repeat_penalty is %g but must be finite and > 0 (1 = disabled)", repeat_penalty);
  }
  if (repeat_last_n < 0 || repeat_last_n > kMaxRepeatLastN) {
    return make_error("repeat_last_n is %d but must be in [0, %d] (0 = disabled)", repeat_last_n, kMaxRepeatLastN);
  }
  if (!std::isfinite(presence_penalty))
    return make_error("presence_penalty is %g but must be finite", presence_penalty);
  if (!std::isfinite(frequency_penalty))
    return make_error("frequency_penalty is %g but must be finite", frequency_penalty);
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) return make_error("logit_bias has token %d but token ids are >= 0", token);
    if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity()) {
      return make_error("logit_bias of token %d is %g but must be finite or -inf (banned)", token, bias);
    }
  }
  return ok_status();
}

Sampler::Sampler(SamplerConfig config) : config_(config) {
  const Status st = config_.validate();
  CHECK(st.ok(), "invalid SamplerConfig: %s", st.error().message.c_str());
  history_.assign(static_cast<size_t>(config_.repeat_last_n), 0);
  reset();
}

void Sampler::reset() {
  uint64_t s = config_.seed;
  for (uint64_t& word : rng_) word = splitmix64(&s);
  history_next_ = 0;
  history_size_ = 0;
}

void Sampler::accept(int32_t token) {
  if (history_.empty()) return;
  history_[history_next_] = token;
  history_next_ = (history_next_ + 1) % history_.size();
  history_size_ = std::min(history_size_ + 1, history_.size());
}

uint64_t Sampler::next_u64() {
  // xoshiro256** 1.0 (Blackman & Vigna, public domain reference).
  const uint64_t result = rotl(rng_[1] * 5, 7) * 9;
  const uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = rotl(rng_[3], 45);
  return result;
}

double Sampler::next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

void Sampler::ensure_capacity(int32_t n_vocab) {
  const auto n = static_cast<size_t>(n_vocab);
  if (cands_.size() < n) cands_.resize(n);
  if (counts_.size() < n) counts_.resize(n, 0);
}

template <typename F>
void Sampler::for_each_penalised(int32_t n_vocab, F&& adjust) {
  const bool active =
      config_.repeat_penalty != 1.0f || config_.presence_penalty != 0.0f || config_.frequency_penalty != 0.0f;
  if (!active || history_size_ == 0) return;
  for (size_t i = 0; i < history_size_; ++i) {
    const int32_t t = history_[i];
    if (t >= 0 && t < n_vocab) ++counts_[static_cast<size_t>(t)];
  }
  for (size_t i = 0; i < history_size_; ++i) {
    const int32_t t = history_[i];
    if (t < 0 || t >= n_vocab) continue;
    int32_t& count = counts_[static_cast<size_t>(t)];
    if (count == 0) continue;  // already adjusted (a repeated token)
    adjust(t, count);
    count = 0;
  }
}

float Sampler::penalised(float logit, int32_t count) const {
  // llama.cpp: dividing a negative logit would make the token more likely, so multiply.
  logit = logit <= 0 ? logit * config_.repeat_penalty : logit / config_.repeat_penalty;
  return logit - (static_cast<float>(count) * config_.frequency_penalty + config_.presence_penalty);
}

void Sampler::apply_penalties(float* logits, int32_t n_vocab) {
  CHECK(logits != nullptr && n_vocab > 0, "apply_penalties needs logits and n_vocab > 0, got %d", n_vocab);
  ensure_capacity(n_vocab);
  for_each_penalised(n_vocab, [&](int32_t t, int32_t count) { logits[t] = penalised(logits[t], count); });
}

size_t Sampler::select(const float* logits, int32_t n_vocab) {
  CHECK(logits != nullptr && n_vocab > 0, "sample needs logits and n_vocab > 0, got %d", n_vocab);
  ensure_capacity(n_vocab);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  Candidate* c = cands_.data();
  for (int32_t i = 0; i < n_vocab; ++i) c[i] = {std::isnan(logits[i]) ? kNegInf : logits[i], i};
  for (const auto& [token, bias] : config_.logit_bias) {
    if (token < n_vocab) c[token].logit += bias;  // -inf + anything finite stays -inf
  }
  for_each_penalised(n_vocab, [&](int32_t t, int32_t count) { c[t].logit = penalised(c[t].logit, count); });

  if (config_.temperature <= 0) {
    std::iter_swap(c, std::min_element(c, c + n_vocab, ByLogitDesc()));
    return 1;
  }

  // top-k: partial selection of the k best, sorted.
  size_t n = static_cast<size_t>(n_vocab);
  bool sorted = false;
  if (config_.top_k > 0 && static_cast<size_t>(config_.top_k) < n) {
    n = static_cast<size_t>(config_.top_k);
    std::partial_sort(c, c + n, c + n_vocab, ByLogitDesc());
    sorted = true;
  }

  // top-p: keep the smallest prefix (in sorted order) whose probability mass reaches top_p.
  // The softmax normaliser needs no order, so only a growing head of the candidates is ordered
  // (nth_element, then sort the new chunk; chunks of 128, doubling) until the mass is reached.
  if (config_.top_p < 1.0f) {
    float max_logit = c[0].logit;
    for (size_t i = 1; i < n; ++i) max_logit = std::max(max_logit, c[i].logit);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(c[i].logit - max_logit));
    double cum = 0;
    size_t done = 0;
    size_t cut = n;
    for (size_t head = std::min<size_t>(n, 128); done < n; head = std::min(n, head * 2)) {
      if (!sorted) {
        if (head < n) std::nth_element(c + done, c + head, c + n, ByLogitDesc());
        std::sort(c + done, c + head, ByLogitDesc());
      }
      for (; done < head; ++done) {
        cum += std::exp(static_cast<double>(c[done].logit - max_logit)) / sum;
        if (cum >= config_.top_p) break;
      }
      if (done < head) {
        cut = done + 1;
        break;
      }
    }
    n = cut;
    sorted = true;
  }

  // min-p: drop tokens whose probability is below min_p times the best one's.
  if (config_.min_p > 0.0f) {
    float max_logit = c[0].logit;
    if (!sorted) {
      for (size_t i = 1; i < n; ++i) max_logit = std::max(max_logit, c[i].logit);
    }
    const float threshold = max_logit + std::log(config_.min_p);
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (c[i].logit >= threshold) c[kept++] = c[i];
    }
    n = std::max<size_t>(kept, 1);  // the max itself always passes unless the logits are -inf
  }
  return n;
}

int32_t Sampler::sample(const float* logits, int32_t n_vocab) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n = select(logits, n_vocab);
  Candidate* c = cands_.data();
  if (config_.temperature <= 0) return c[0].id;
  // Temperature, softmax and an inverse-CDF draw in candidate order.
  float max_logit = c[0].logit;
  for (size_t i = 1; i < n; ++i) max_logit = std::max(max_logit, c[i].logit);
  if (max_logit == kNegInf) return std::min_element(c, c + n, ByLogitDesc())->id;
  const double inv_temp = 1.0 / static_cast<double>(config_.temperature);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp((static_cast<double>(c[i].logit) - max_logit) * inv_temp);
  const double target = next_unit() * sum;
  double cum = 0;
  for (size_t i = 0; i < n; ++i) {
    cum += std::exp((static_cast<double>(c[i].logit) - max_logit) * inv_temp);
    if (target < cum) return c[i].id;
  }
  return c[n - 1].id;  // rounding left target at the very top of the range
}

void Sampler::distribution(const float* logits, int32_t n_vocab, float* probs) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n = select(logits, n_vocab);
  const Candidate* c = cands_.data();
  std::fill(probs, probs + n_vocab, 0.0f);
  float max_logit = c[0].logit;
  for (size_t i = 1; i < n; ++i) max_logit = std::max(max_logit, c[i].logit);
  if (config_.temperature <= 0 || max_logit == kNegInf) {
    // sample()'s choice: the first candidate in order (greedy's argmax, or all -inf).
    probs[std::min_element(c, c + n, ByLogitDesc())->id] = 1.0f;
    return;
  }
  const double inv_temp = 1.0 / static_cast<double>(config_.temperature);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp((static_cast<double>(c[i].logit) - max_logit) * inv_temp);
  for (size_t i = 0; i < n; ++i) {
    probs[c[i].id] = static_cast<float>(std::exp((static_cast<double>(c[i].logit) - max_logit) * inv_temp) / sum);
  }
}

double Sampler::uniform() { return next_unit(); }

int32_t Sampler::sample_from(const float* weights, int32_t n_vocab) {
  CHECK(weights != nullptr && n_vocab > 0, "sample_from needs weights and n_vocab > 0, got %d", n_vocab);
  double sum = 0;
  int32_t last_positive = -1;
  for (int32_t i = 0; i < n_vocab; ++i) {
    if (weights[i] > 0) {
      sum += weights[i];
      last_positive = i;
    }
  }
  CHECK(last_positive >= 0, "sample_from needs at least one positive weight");
  const double target = next_unit() * sum;
  double cum = 0;
  for (int32_t i = 0; i < n_vocab; ++i) {
    if (weights[i] <= 0) continue;
    cum += weights[i];
    if (target < cum) return i;
  }
  return last_positive;  // rounding left target at the very top of the range
}

}  // namespace sniper
