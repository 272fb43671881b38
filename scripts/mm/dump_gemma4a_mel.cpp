// SPDX-License-Identifier: MIT
// Reference tool (not part of Sniper): the log-mel spectrogram llama.cpp's libmtmd computes for a
// gemma4a projector (mtmd_audio_preprocessor_gemma4a, called from the snapshot's libmtmd), for
// scripts/mm/make_audio_references.py. The preprocessor only reads clip_hparams, so this program
// supplies clip_get_hparams() with gemma4a's values as clip.cpp sets them (no projector file and
// no clip context are needed). The WAV must be 16-bit PCM, mono, 16 kHz: its samples become
// s / 32768 exactly as miniaudio (mtmd_helper_bitmap_init_from_buf) converts them.
// Usage: dump_gemma4a_mel IN.wav N_MEL OUT_PREFIX
//   writes OUT_PREFIX.<i>.f32 (chunk i, [n_mel][n_len] float32) and prints "i n_len n_mel" lines.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "clip-model.h"
#include "mtmd-audio.h"

static clip_hparams g_hparams;
const clip_hparams* clip_get_hparams(const struct clip_ctx*) { return &g_hparams; }

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s IN.wav N_MEL OUT_PREFIX\n", argv[0]);
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto u16 = [&](size_t o) { return unsigned(b[o]) | unsigned(b[o + 1]) << 8; };
  auto u32 = [&](size_t o) { return u16(o) | u16(o + 2) << 16; };
  if (b.size() < 44 || std::memcmp(b.data(), "RIFF", 4) != 0 || std::memcmp(b.data() + 8, "WAVEfmt ", 8) != 0 ||
      u16(20) != 1 || u16(22) != 1 || u32(24) != 16000 || u16(34) != 16 || std::memcmp(b.data() + 36, "data", 4) != 0) {
    std::fprintf(stderr, "%s: not a canonical 16-bit mono 16 kHz PCM WAV\n", argv[1]);
    return 1;
  }
  const size_t n = u32(40) / 2;
  std::vector<float> samples(n);
  for (size_t i = 0; i < n; ++i) samples[i] = static_cast<short>(u16(44 + 2 * i)) * (1.0f / 32768.0f);

  // clip.cpp's PROJECTOR_TYPE_GEMMA4A hparams; n_mel_bins comes from the projector file.
  g_hparams.n_mel_bins = std::stoi(argv[2]);
  g_hparams.audio_chunk_len = 0;
  g_hparams.audio_sample_rate = 16000;
  g_hparams.audio_n_fft = 512;
  g_hparams.audio_window_len = 320;
  g_hparams.audio_hop_len = 160;
  mtmd_audio_preprocessor_gemma4a pre(nullptr);
  pre.initialize();
  std::vector<mtmd_audio_mel> out;
  if (!pre.preprocess(samples.data(), samples.size(), out)) {
    std::fprintf(stderr, "mtmd's preprocessing failed\n");
    return 1;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string path = std::string(argv[3]) + "." + std::to_string(i) + ".f32";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(out[i].data.data()),
               static_cast<std::streamsize>(out[i].n_len * out[i].n_mel * sizeof(float)));
    std::printf("%zu %lld %lld\n", i, static_cast<long long>(out[i].n_len), static_cast<long long>(out[i].n_mel));
  }
  return 0;
}
