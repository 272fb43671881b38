// SPDX-License-Identifier: MIT
// Sniper's audio decoding (libsndfile / libvorbisfile, mono mean, libsamplerate to 16 kHz)
// against miniaudio's, decoded as llama.cpp's mtmd_helper does (ma_decoder, f32, 1 channel,
// 16 kHz: its linear resampler with the default low-pass filter), on the given files: prints the
// sample counts and the mean and max absolute difference over the common length, and the same
// after aligning the two by the lag (within +-64 samples) that minimises the mean difference.
// Built and run by scripts/mm/audio-vs-miniaudio.sh (not CI).
#define MINIAUDIO_IMPLEMENTATION
#define MA_NO_DEVICE_IO
#define MA_NO_ENCODING
#include "miniaudio/miniaudio.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "media/media_decoder.h"

static bool miniaudio_decode(const std::vector<uint8_t>& b, std::vector<float>& out) {
  ma_decoder_config cfg = ma_decoder_config_init(ma_format_f32, 1, 16000);
  ma_decoder dec;
  if (ma_decoder_init_memory(b.data(), b.size(), &cfg, &dec) != MA_SUCCESS) return false;
  ma_uint64 n = 0, got = 0;
  if (ma_decoder_get_length_in_pcm_frames(&dec, &n) != MA_SUCCESS) {
    ma_decoder_uninit(&dec);
    return false;
  }
  out.resize(n);
  ma_decoder_read_pcm_frames(&dec, out.data(), n, &got);
  out.resize(got);
  ma_decoder_uninit(&dec);
  return true;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<float> ma;
    if (!miniaudio_decode(b, ma)) {
      std::printf("%s: miniaudio cannot decode it\n", argv[i]);
      continue;
    }
    auto s = sniper::decode_media(b, sniper::MediaLimits{});
    if (!s.ok()) {
      std::printf("%s: sniper: %s\n", argv[i], s.error().message.c_str());
      continue;
    }
    const std::vector<float>& sn = s->audio.samples;
    auto diff = [&](int lag, double* mean, double* mx) {
      double sum = 0, m = 0;
      size_t count = 0;
      for (size_t k = 64; k + 64 < std::min(sn.size(), ma.size()); ++k) {
        const long j = static_cast<long>(k) + lag;
        if (j < 0 || static_cast<size_t>(j) >= ma.size()) continue;
        const double d = std::fabs(double(sn[k]) - ma[static_cast<size_t>(j)]);
        sum += d;
        m = std::max(m, d);
        ++count;
      }
      *mean = count ? sum / count : 0;
      *mx = m;
    };
    double mean0, max0;
    diff(0, &mean0, &max0);
    int best = 0;
    double best_mean = mean0, best_max = max0;
    for (int lag = -64; lag <= 64; ++lag) {
      double m, x;
      diff(lag, &m, &x);
      if (m < best_mean) best = lag, best_mean = m, best_max = x;
    }
    std::printf(
        "%s (%s, %d Hz, %d ch): samples sniper %zu miniaudio %zu; |diff| mean %.3g max %.3g; "
        "best lag %d: mean %.3g max %.3g\n",
        argv[i], s->format.c_str(), s->audio.source_rate, s->audio.source_channels, sn.size(), ma.size(), mean0, max0,
        best, best_mean, best_max);
  }
  return 0;
}
