// SPDX-License-Identifier: MIT
// Embeddings from a causal model, as llama.cpp computes them: the prompt runs through the model
// (causal attention, as any decode), each token's final normed hidden state (the rows the output
// head multiplies: ForwardObserver) is pooled into one vector, and the vector is L2-normalised
// (common_embd_normalize with embd_norm 2: x / sqrt(sum x^2), zero stays zero).
// Pooling comes from the GGUF's {arch}.pooling_type (llama.cpp's values: 1 mean, 2 cls = the
// first token, 3 last = the last token, as Qwen3-Embedding), or an override (--pooling). A file
// without the key, or with 0 (none: one vector per token, which no API here returns), pools the
// last token: the choice of decoder embedding models, and what makes `--pooling` optional on any
// causal model. Rank pooling (4, a reranker's classification head) is refused by name.
// The prompt's tokens are what the tokenizer gives with special tokens added (BOS, and EOS where
// tokenizer.ggml.add_eos_token says so), as llama-embedding tokenizes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/session.h"
#include "gguf/reader.h"

namespace sniper {

enum class Pooling { kMean = 1, kCls = 2, kLast = 3 };

// "mean", "cls" or "last"; an Error naming the allowed values otherwise.
[[nodiscard]] Result<Pooling> parse_pooling(std::string_view name);
const char* pooling_name(Pooling p);

// The pooling the file asks for (see above). Errors: a pooling_type that is not an integer in
// [0, 4], rank pooling, and {arch}.attention.causal = false (an encoder: this engine's attention
// is causal), each naming the key and value.
[[nodiscard]] Result<Pooling> pooling_from_gguf(const GgufFile& file);

// The embedding of `tokens` (1 <= size <= session.n_ctx()): the session starts over (its history
// is dropped), evaluates them and pools its hidden rows; dim floats, L2-normalised. An observer
// already set on the session (an MTP head) keeps seeing every chunk. Errors: empty input or one
// longer than the context (with the numbers), a token outside the vocabulary, a failed read.
[[nodiscard]] Result<std::vector<float>> embed_tokens(Session& session, std::span<const int32_t> tokens,
                                                      Pooling pooling);

// Pools the hidden rows a session evaluates, chunk by chunk (set it as the session's observer
// from position 0 on), and passes each chunk on to `next` (the observer that was set before, an
// MTP head; may be null). Mean sums in double.
class EmbeddingPooler final : public ForwardObserver {
 public:
  EmbeddingPooler(Pooling pooling, int64_t dim, ForwardObserver* next);
  void on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) override;
  void on_rewrite(int64_t keep) override;
  int64_t rows() const { return rows_; }
  ForwardObserver* next() const { return next_; }
  // The pooled rows seen so far, L2-normalised (dim floats).
  std::vector<float> result() const;

 private:
  Pooling pooling_;
  int64_t dim_;
  ForwardObserver* next_;
  std::vector<double> sum_;  // mean: the rows' sum; cls, last: the row
  int64_t rows_ = 0;
};

// Divides v by its Euclidean norm (summed in double); a zero vector stays zero.
void l2_normalize(std::span<float> v);

}  // namespace sniper
