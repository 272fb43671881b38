// SPDX-License-Identifier: MIT
// jpeg_vs_stb: how far Sniper's JPEG pixels (libjpeg-turbo through media/media_decoder.h) are from
// stb_image's (the decoder llama.cpp's mtmd uses; the snapshot's vendored copy), per file: the mean
// and the largest absolute difference over every RGB sample. Not CI (tests/media/media_decoder_test
// bounds the difference against Debian's stb on generated images).
// usage: jpeg_vs_stb STB_IMAGE_DIR FILE.jpg...   (built by scripts/mm/jpeg-vs-stb.sh)
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "media/media_decoder.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    auto ours = sniper::decode_media(bytes, sniper::MediaLimits{});
    if (!ours.ok()) {
      std::printf("%s: %s\n", argv[i], ours.error().message.c_str());
      continue;
    }
    int w = 0, h = 0, c = 0;
    unsigned char* p = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &c, 3);
    if (p == nullptr || w != ours->image.width || h != ours->image.height) {
      std::printf("%s: stb_image fails or differs in size\n", argv[i]);
      continue;
    }
    double sum = 0;
    int max = 0;
    const size_t n = static_cast<size_t>(w) * h * 3;
    for (size_t k = 0; k < n; ++k) {
      const int d = std::abs(static_cast<int>(ours->image.rgb[k]) - p[k]);
      sum += d;
      max = d > max ? d : max;
    }
    std::printf("%s: %dx%d, |libjpeg-turbo - stb_image| mean %.4f, max %d over %zu samples\n", argv[i], w, h,
                sum / static_cast<double>(n), max, n);
    stbi_image_free(p);
  }
  return 0;
}
