// SPDX-License-Identifier: MIT
// mtmd_ttft: llama.cpp's libmtmd (what llama-mtmd-cli runs) timed as bench/mm_bench.sh times
// Sniper: after loading the model and the projector (llama-mtmd-cli's defaults: n_ctx 4096,
// flash attention auto, warmup), the clock covers the image file's decode and preprocessing
// (mtmd_helper_bitmap_init_from_file, mtmd_tokenize), the image encode (mtmd_encode_chunk, also
// printed alone: summed over the media chunks, e.g. an audio file's 30-second chunks), the
// evaluation of every chunk and the first greedy token. The media file may be an image or audio.
// usage: mtmd_ttft MODEL MMPROJ MEDIA "PROMPT" THREADS      prints: encode_ms=E ttft_ms=T
// Build: scripts/mm/build-tools.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: mtmd_ttft MODEL MMPROJ IMAGE PROMPT THREADS\n");
    return 2;
  }
  const int threads = std::atoi(argv[5]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 4096;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  llama_context* lctx = llama_init_from_model(model, cp);
  mtmd_context_params xp = mtmd_context_params_default();
  xp.use_gpu = false;
  xp.n_threads = threads;
  xp.print_timings = false;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], model, xp);
  if (ctx == nullptr) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  mtmd_helper_bitmap_wrapper bw = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false);
  if (bw.bitmap == nullptr) return 1;
  std::string prompt = std::string(mtmd_default_marker()) + argv[4];
  mtmd_input_text txt{prompt.c_str(), prompt.size(), true, true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bms[1] = {bw.bitmap};
  if (mtmd_tokenize(ctx, chunks, &txt, bms, 1) != 0) return 1;
  double encode_ms = 0;
  llama_pos n_past = 0;
  const size_t nc = mtmd_input_chunks_size(chunks);
  for (size_t i = 0; i < nc; ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_TEXT) {
      const auto e0 = std::chrono::steady_clock::now();
      if (mtmd_encode_chunk(ctx, c) != 0) return 1;
      encode_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - e0).count();
    }
    llama_pos np = 0;
    if (mtmd_helper_eval_chunk_single(ctx, lctx, c, n_past, 0, static_cast<int32_t>(cp.n_batch), i + 1 == nc, &np) !=
        0) {
      return 1;
    }
    n_past += mtmd_input_chunk_get_n_pos(c);
  }
  const float* logits = llama_get_logits_ith(lctx, -1);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  int best = 0;
  for (int i = 1; i < n_vocab; ++i) best = logits[i] > logits[best] ? i : best;
  const double ttft_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("encode_ms=%.1f ttft_ms=%.1f first_token=%d\n", encode_ms, ttft_ms, best);
  return 0;
}
