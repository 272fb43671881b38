// SPDX-License-Identifier: MIT
// llama.cpp's MTP draft logits for a prompt, for scripts/mtp-parity.sh: the target decodes the
// prompt in one batch with its final hidden rows kept (embeddings_nextn); an MTP context on the
// same model then decodes the prompt in one batch, row p pairing token p with the target's row
// p - 1 (zeros for p = 0), as common/speculative.cpp's draft-mtp process() does; every row's
// logits are written as float32. Built against the reference build, never part of Sniper.
// Usage: mtp_reference MODEL.gguf ID,ID,... OUT.f32
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "llama-ext.h"
#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf ID,ID,... OUT.f32\n", argv[0]);
    return 1;
  }
  std::vector<llama_token> ids;
  for (char* p = std::strtok(argv[2], ","); p != nullptr; p = std::strtok(nullptr, ",")) ids.push_back(std::atoi(p));
  const int n = static_cast<int>(ids.size());
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.load_mtp = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 2;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* target = llama_init_from_model(model, cp);
  llama_context_params mtp_cp = cp;
  mtp_cp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
  mtp_cp.n_rs_seq = 0;
  mtp_cp.ctx_other = target;
  llama_context* mtp = llama_init_from_model(model, mtp_cp);
  if (target == nullptr || mtp == nullptr) return 3;
  llama_set_embeddings_nextn(target, true, false);
  llama_set_embeddings_nextn(mtp, true, true);
  llama_batch b = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    b.token[i] = ids[i];
    b.pos[i] = i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  b.n_tokens = n;
  if (llama_decode(target, b) != 0) return 4;
  const int n_embd = llama_model_n_embd_out(model);
  const float* h = llama_get_embeddings_nextn(target);
  llama_batch m = llama_batch_init(n, n_embd, 1);
  std::vector<llama_token> m_tokens(ids);
  m.token = m_tokens.data();  // llama_batch_init allocates embd only; MTP needs both
  for (int i = 0; i < n; ++i) {
    m.pos[i] = i;
    m.n_seq_id[i] = 1;
    m.seq_id[i][0] = 0;
    m.logits[i] = 1;
    float* row = m.embd + static_cast<size_t>(i) * n_embd;
    if (i == 0) {
      std::memset(row, 0, sizeof(float) * n_embd);
    } else {
      std::memcpy(row, h + static_cast<size_t>(i - 1) * n_embd, sizeof(float) * n_embd);
    }
  }
  m.n_tokens = n;
  if (llama_decode(mtp, m) != 0) return 5;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) return 6;
  for (int i = 0; i < n; ++i) std::fwrite(llama_get_logits_ith(mtp, i), sizeof(float), n_vocab, out);
  std::fclose(out);
  m.token = nullptr;
  llama_batch_free(m);
  llama_batch_free(b);
  llama_free(mtp);
  llama_free(target);
  llama_model_free(model);
  return 0;
}
