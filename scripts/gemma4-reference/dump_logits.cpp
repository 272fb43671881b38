// SPDX-License-Identifier: MIT
// llama.cpp's logits per ../shared/reference/README.md's protocol: the prompt in one
// llama_decode (logits for every row), then each gen id in its own llama_decode (teacher
// forced); n_ctx = n_batch = n_ubatch = 512, 2 threads, f16 KV, no flash attention, no weight
// repacking. Writes the rows as f32 to OUT. Built against the reference snapshot by
// scripts/gemma4-reference.sh.
// Usage: dump_logits MODEL.gguf PROMPT_IDS.json GEN_IDS.json OUT.f32
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

static std::vector<llama_token> read_ids(const char* path) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), {});
  for (char& c : s) {
    if (c == '[' || c == ']' || c == ',') c = ' ';
  }
  std::istringstream in(s);
  std::vector<llama_token> ids;
  for (int x; in >> x;) ids.push_back(x);
  return ids;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.gguf PROMPT_IDS.json GEN_IDS.json OUT.f32\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.use_extra_bufts = false;  // no CPU weight repacking
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = 2;
  cp.n_threads_batch = 2;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const std::vector<llama_token> prompt = read_ids(argv[2]), gen = read_ids(argv[3]);
  if (prompt.empty() || prompt.size() + gen.size() > 512) return 1;
  FILE* out = std::fopen(argv[4], "wb");
  if (out == nullptr) return 1;
  llama_batch b = llama_batch_init(512, 0, 1);
  b.n_tokens = static_cast<int32_t>(prompt.size());
  for (size_t i = 0; i < prompt.size(); ++i) {
    b.token[i] = prompt[i];
    b.pos[i] = static_cast<llama_pos>(i);
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  if (llama_decode(ctx, b) != 0) return 1;
  for (size_t i = 0; i < prompt.size(); ++i)
    std::fwrite(llama_get_logits_ith(ctx, static_cast<int>(i)), 4, n_vocab, out);
  for (size_t g = 0; g < gen.size(); ++g) {
    b.n_tokens = 1;
    b.token[0] = gen[g];
    b.pos[0] = static_cast<llama_pos>(prompt.size() + g);
    b.n_seq_id[0] = 1;
    b.seq_id[0][0] = 0;
    b.logits[0] = 1;
    if (llama_decode(ctx, b) != 0) return 1;
    std::fwrite(llama_get_logits_ith(ctx, 0), 4, n_vocab, out);
  }
  std::fclose(out);
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
