// SPDX-License-Identifier: MIT
// llama.cpp's logits for one reference case, by the protocol of ../shared/reference/README.md
// (and reference/kv/README.md for the KV settings), for scripts/arm-references.sh: the prompt in
// one llama_decode with logits for every position, then the reference's gen_ids fed one at a time
// (teacher-forced, so the rows pair with the x86 reference's rows). CPU only, n_ctx = n_batch =
// n_ubatch = 512, one sequence, 2 threads, weight repacking off (use_extra_bufts = false), mmap
// load, flash attention on or off as asked (never auto). Built against the cross-compiled
// snapshot and run under qemu; never part of Sniper.
// Usage: reference_logits MODEL.gguf PROMPT_IDS.json GEN_IDS.json OUT_PROMPT.f32 OUT_GEN.f32
//                         [TYPE_K TYPE_V FLASH(0|1)]     (default f16 f16 0)
// REFERENCE_THREADS=N overrides the 2 threads (bench/arm/insn-count.sh counts with one).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

// A JSON array of integers, e.g. [1, 403, 407]; exits on anything else.
std::vector<llama_token> read_ids(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  std::vector<llama_token> ids;
  size_t i = s.find('[');
  if (i == std::string::npos) {
    std::fprintf(stderr, "%s: not a JSON array\n", path);
    std::exit(2);
  }
  for (++i; i < s.size() && s[i] != ']';) {
    if (s[i] == ',' || s[i] == ' ' || s[i] == '\n') {
      ++i;
      continue;
    }
    char* end = nullptr;
    const long v = std::strtol(s.c_str() + i, &end, 10);
    if (end == s.c_str() + i) {
      std::fprintf(stderr, "%s: bad character at %zu\n", path, i);
      std::exit(2);
    }
    ids.push_back(static_cast<llama_token>(v));
    i = static_cast<size_t>(end - s.c_str());
  }
  return ids;
}

ggml_type type_named(const char* name) {
  const std::pair<const char*, ggml_type> types[] = {{"f16", GGML_TYPE_F16},   {"q8_0", GGML_TYPE_Q8_0},
                                                     {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1},
                                                     {"q5_0", GGML_TYPE_Q5_0}, {"iq4_nl", GGML_TYPE_IQ4_NL}};
  for (const auto& [n, t] : types) {
    if (std::strcmp(n, name) == 0) return t;
  }
  std::fprintf(stderr, "unknown cache type %s\n", name);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 9) {
    std::fprintf(stderr, "usage: %s MODEL PROMPT_IDS GEN_IDS OUT_PROMPT OUT_GEN [TYPE_K TYPE_V FLASH]\n", argv[0]);
    return 1;
  }
  const std::vector<llama_token> prompt = read_ids(argv[2]);
  const std::vector<llama_token> gen = read_ids(argv[3]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.use_extra_bufts = false;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 3;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = cp.n_ubatch = 512;
  cp.n_seq_max = 1;
  const char* threads = std::getenv("REFERENCE_THREADS");
  cp.n_threads = cp.n_threads_batch = threads != nullptr ? std::atoi(threads) : 2;
  cp.type_k = argc == 9 ? type_named(argv[6]) : GGML_TYPE_F16;
  cp.type_v = argc == 9 ? type_named(argv[7]) : GGML_TYPE_F16;
  cp.flash_attn_type =
      argc == 9 && std::strcmp(argv[8], "1") == 0 ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 4;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const int n = static_cast<int>(prompt.size());
  llama_batch b = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    b.token[i] = prompt[static_cast<size_t>(i)];
    b.pos[i] = i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  b.n_tokens = n;
  if (llama_decode(ctx, b) != 0) return 5;
  std::FILE* out = std::fopen(argv[4], "wb");
  if (out == nullptr) return 6;
  for (int i = 0; i < n; ++i) std::fwrite(llama_get_logits_ith(ctx, i), sizeof(float), n_vocab, out);
  std::fclose(out);
  out = std::fopen(argv[5], "wb");
  if (out == nullptr) return 6;
  for (size_t i = 0; i < gen.size(); ++i) {
    b.token[0] = gen[i];
    b.pos[0] = n + static_cast<int>(i);
    b.n_seq_id[0] = 1;
    b.seq_id[0][0] = 0;
    b.logits[0] = 1;
    b.n_tokens = 1;
    if (llama_decode(ctx, b) != 0) return 5;
    std::fwrite(llama_get_logits_ith(ctx, 0), sizeof(float), n_vocab, out);
  }
  std::fclose(out);
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
