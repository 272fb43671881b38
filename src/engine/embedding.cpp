// SPDX-License-Identifier: MIT
#include "engine/embedding.h"

#include <cmath>

namespace sniper {
namespace {

// Sets an observer for the duration of a scope and puts the previous one back.
class ObserverScope {
 public:
  ObserverScope(Session& session, ForwardObserver* observer) : session_(session), previous_(session.observer()) {
    session_.set_observer(observer);
  }
  ~ObserverScope() { session_.set_observer(previous_); }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  Session& session_;
  ForwardObserver* previous_;
};

}  // namespace

EmbeddingPooler::EmbeddingPooler(Pooling pooling, int64_t dim, ForwardObserver* next)
    : pooling_(pooling), dim_(dim), next_(next), sum_(static_cast<size_t>(dim), 0.0) {}

void EmbeddingPooler::on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n > 0) {
    switch (pooling_) {
      case Pooling::kMean:
        for (int64_t t = 0; t < n; ++t) {
          const float* row = hidden + t * dim_;
          for (int64_t i = 0; i < dim_; ++i) sum_[static_cast<size_t>(i)] += row[i];
        }
        break;
      case Pooling::kCls:
        if (rows_ == 0) sum_.assign(hidden, hidden + dim_);
        break;
      case Pooling::kLast: sum_.assign(hidden + (n - 1) * dim_, hidden + n * dim_); break;
    }
    rows_ += n;
  }
  if (next_ != nullptr) next_->on_chunk(tokens, pos0, hidden);
}

void EmbeddingPooler::on_rewrite(int64_t keep) {
  if (next_ != nullptr) next_->on_rewrite(keep);
}

std::vector<float> EmbeddingPooler::result() const {
  std::vector<float> v(static_cast<size_t>(dim_));
  const double scale = pooling_ == Pooling::kMean && rows_ > 0 ? 1.0 / static_cast<double>(rows_) : 1.0;
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(sum_[i] * scale);
  l2_normalize(v);
  return v;
}

Result<Pooling> parse_pooling(std::string_view name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "cls") return Pooling::kCls;
  if (name == "last") return Pooling::kLast;
  return make_error("pooling is '%.*s' but must be one of: mean, cls, last", static_cast<int>(name.size()),
                    name.data());
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
  }
  return "?";
}

Result<Pooling> pooling_from_gguf(const GgufFile& file) {
  auto arch = file.get_string("general.architecture");
  if (!arch.ok()) return arch.error();
  const std::string causal_key = *arch + ".attention.causal";
  if (file.has(causal_key)) {
    auto causal = file.get_bool(causal_key);
    if (!causal.ok()) return causal.error();
    if (!*causal) {
      return make_error("%s is false: an encoder attends both ways, which this engine does not run",
                        causal_key.c_str());
    }
  }
  const std::string key = *arch + ".pooling_type";
  if (!file.has(key)) return Pooling::kLast;
  auto v = file.get_int(key);
  if (!v.ok()) return v.error();
  switch (*v) {
    case 0:  // none: one vector per token; the last token's is the sequence's
    case 3: return Pooling::kLast;
    case 1: return Pooling::kMean;
    case 2: return Pooling::kCls;
    case 4: return make_error("%s is 4 (rank: a reranker's classification head), which is not supported", key.c_str());
    default:
      return make_error("%s is %ld but must be in [0, 4] (none, mean, cls, last, rank)", key.c_str(),
                        static_cast<long>(*v));
  }
}

void l2_normalize(std::span<float> v) {
  double sum = 0.0;
  for (float x : v) sum += static_cast<double>(x) * x;
  sum = std::sqrt(sum);
  const float norm = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (float& x : v) x *= norm;
}

Result<std::vector<float>> embed_tokens(Session& session, std::span<const int32_t> tokens, Pooling pooling) {
  if (tokens.empty()) return make_error("the input to embed is empty (no tokens)");
  if (static_cast<int64_t>(tokens.size()) > session.n_ctx()) {
    return make_error("the input to embed has %zu tokens but the context holds %ld", tokens.size(),
                      static_cast<long>(session.n_ctx()));
  }
  const int64_t vocab = session.model().config().vocab_size;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return make_error("token %zu of the input to embed is %d but must be in [0, %ld)", i, tokens[i],
                        static_cast<long>(vocab));
    }
  }
  (void)session.truncate(0);  // starts over: nothing else is kept
  EmbeddingPooler pooler(pooling, session.model().config().dim, session.observer());
  {
    ObserverScope scope(session, &pooler);
    SNIPER_TRY(session.eval(tokens));
  }
  if (pooler.rows() != static_cast<int64_t>(tokens.size())) {
    return make_error("embedding saw %ld of %zu rows", static_cast<long>(pooler.rows()), tokens.size());
  }
  return pooler.result();
}

}  // namespace sniper
