// SPDX-License-Identifier: MIT
// dump_mtmd_tensors: the vision encoder's tensors as llama.cpp's libmtmd computes them, for
// building and debugging media references (never part of CI; references come from libmtmd).
// usage: dump_mtmd_tensors MODEL MMPROJ IMAGE OUT_DIR [--threads N] [--all]
// Writes OUT_DIR/inp_raw.f32 (the encoder's input tensor: the preprocessed image, planar
// [3][H][W]) and OUT_DIR/inp_raw.txt ("W H"), the image chunk's embeddings (embd.f32), and with
// --all every named graph node as OUT_DIR/<name>.f32 (f32 nodes only).
// Build: scripts/mm/build-tools.sh (links the snapshot's libmtmd, libllama and libggml).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "ggml.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

namespace {

struct Dump {
  std::string dir;
  bool all = false;
  std::set<std::string> done;
};

void put(const std::string& path, const void* p, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return;
  std::fwrite(p, 1, n, f);
  std::fclose(f);
}

void dump_tensor(Dump& d, const ggml_tensor* t, const char* name) {
  if (t->type != GGML_TYPE_F32 || t->data == nullptr || !ggml_is_contiguous(t)) return;
  if (!d.done.insert(name).second) return;
  put(d.dir + "/" + name + ".f32", t->data, ggml_nbytes(t));
  if (std::strcmp(name, "inp_raw") == 0) {
    std::ofstream(d.dir + "/inp_raw.txt") << t->ne[0] << " " << t->ne[1] << "\n";
  }
}

bool eval_cb(ggml_tensor* t, bool ask, void* user) {
  auto& d = *static_cast<Dump*>(user);
  // The input is read when its first consumer is asked about, before anything is computed: that
  // consumer may run in place (gemma4v's scale_bias overwrites inp_raw).
  for (int i = 0; ask && i < GGML_MAX_SRC; ++i) {
    if (t->src[i] != nullptr && std::strcmp(t->src[i]->name, "inp_raw") == 0) dump_tensor(d, t->src[i], "inp_raw");
  }
  if (ask) return true;
  if (d.all && t->name[0] != '\0') {
    std::string n = t->name;
    for (char& c : n)
      if (c == '/' || c == ' ') c = '_';
    dump_tensor(d, t, n.c_str());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: dump_mtmd_tensors MODEL MMPROJ IMAGE OUT_DIR [--threads N] [--all]\n");
    return 2;
  }
  Dump d;
  d.dir = argv[4];
  int threads = 2;
  for (int i = 5; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--all")) d.all = true;
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  mtmd_context_params xp = mtmd_context_params_default();
  xp.use_gpu = false;
  xp.n_threads = threads;
  xp.print_timings = false;
  xp.warmup = false;
  xp.cb_eval = eval_cb;
  xp.cb_eval_user_data = &d;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], model, xp);
  if (ctx == nullptr) return 1;
  mtmd_helper_bitmap_wrapper bw = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false);
  if (bw.bitmap == nullptr) return 1;
  std::string prompt = mtmd_default_marker();
  mtmd_input_text txt{prompt.c_str(), prompt.size(), false, true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bms[1] = {bw.bitmap};
  if (mtmd_tokenize(ctx, chunks, &txt, bms, 1) != 0) return 1;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) continue;
    if (mtmd_encode_chunk(ctx, c) != 0) return 1;
    const size_t n = mtmd_input_chunk_get_n_tokens(c) * static_cast<size_t>(llama_model_n_embd_inp(model));
    put(d.dir + "/embd.f32", mtmd_get_output_embd(ctx), n * sizeof(float));
    std::printf("image chunk: %zu tokens\n", mtmd_input_chunk_get_n_tokens(c));
  }
  return 0;
}
