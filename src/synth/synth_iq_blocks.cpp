// SPDX-License-Identifier: MIT
// Random i-quant / ternary blocks (see synth_iq_blocks.h for the invariants).
#include "synth/synth_iq_blocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/fp16.h"
#include "quant/block_scale.h"
#include "quant/iq1.h"
#include "quant/iq_grids.h"
#include "quant/quant.h"
#include "quant/tq.h"

namespace sniper {

namespace {

// Indices of the kIq1sGrid points whose negation is also a grid point.
const std::vector<uint16_t>& iq1_symmetric_points() {
  static const std::vector<uint16_t> points = [] {
    auto negated = [](uint64_t e) {
      uint64_t r = 0;
      for (int j = 0; j < 8; ++j) {
        const auto v = static_cast<int8_t>(e >> (8 * j));
        r |= static_cast<uint64_t>(static_cast<uint8_t>(-v)) << (8 * j);
      }
      return r;
    };
    std::vector<uint64_t> sorted(std::begin(kIq1sGrid), std::end(kIq1sGrid));
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint16_t> out;
    for (uint16_t k = 0; k < 2048; ++k) {
      if (std::binary_search(sorted.begin(), sorted.end(), negated(kIq1sGrid[k]))) out.push_back(k);
    }
    return out;
  }();
  return points;
}

int iq1_point(SynthRng& rng) {
  const auto& p = iq1_symmetric_points();
  return p[static_cast<size_t>((rng.next() >> 32) % p.size())];
}

int trit(SynthRng& rng) { return static_cast<int>((rng.next() >> 32) % 3); }

// One random block with scale d (fp16 bits).
void random_block(GgmlType type, SynthRng& rng, fp16_t d, uint8_t* blk) {
  const size_t bytes = get_type_info(type).type_size;
  rng.fill_bytes(blk, bytes);
  switch (type) {
    case GgmlType::kIQ1_S: {
      BlockIQ1_S b;
      std::memcpy(&b, blk, sizeof(b));
      for (int s = 0; s < 8; ++s) {
        uint16_t h = static_cast<uint16_t>(b.qh[s] & 0xf000);  // keep the random scale and delta sign
        for (int l = 0; l < 4; ++l) {
          const int idx = iq1_point(rng);
          b.qs[4 * s + l] = static_cast<uint8_t>(idx & 0xff);
          h = static_cast<uint16_t>(h | ((idx >> 8) << (3 * l)));
        }
        b.qh[s] = h;
      }
      std::memcpy(blk, &b, sizeof(b));
      break;
    }
    case GgmlType::kIQ1_M: {
      BlockIQ1_M b;
      std::memcpy(&b, blk, sizeof(b));
      for (int g = 0; g < 32; ++g) {
        const int idx = iq1_point(rng);
        b.qs[g] = static_cast<uint8_t>(idx & 0xff);
        const int shift = 4 * (g % 2);
        uint8_t& q = b.qh[g / 2];  // the nibble keeps its random delta sign (bit 3)
        q = static_cast<uint8_t>((q & ~(7 << shift)) | ((idx >> 8) << shift));
      }
      std::memcpy(blk, &b, sizeof(b));
      break;
    }
    case GgmlType::kTQ1_0: {
      BlockTQ1_0 b;
      for (uint8_t& q : b.qs) {
        int v = 0;
        for (int n = 0; n < 5; ++n) v = 3 * v + trit(rng);
        q = static_cast<uint8_t>((v * 256 + 242) / 243);  // ceil(v * 256 / 243), FORMATS.md 4.10
      }
      for (uint8_t& q : b.qh) {
        int v = 0;
        for (int n = 0; n < 4; ++n) v = 3 * v + trit(rng);
        v *= 3;  // fifth trit 0
        q = static_cast<uint8_t>((v * 256 + 242) / 243);
      }
      std::memcpy(blk, &b, sizeof(b));
      break;
    }
    case GgmlType::kTQ2_0: {
      BlockTQ2_0 b;
      for (uint8_t& q : b.qs)
        q = static_cast<uint8_t>(trit(rng) | (trit(rng) << 2) | (trit(rng) << 4) | (trit(rng) << 6));
      std::memcpy(blk, &b, sizeof(b));
      break;
    }
    default: break;  // IQ2_*, IQ3_*: every byte pattern is a valid, sign-symmetric block
  }
  set_block_scale(type, blk, d);
}

// rms of the decoded values at d = 1 (64 blocks, fixed seed).
double unit_rms(GgmlType type) {
  constexpr int kBlocks = 64;
  const size_t bytes = get_type_info(type).type_size;
  std::vector<uint8_t> blocks(bytes * kBlocks);
  SynthRng rng{0x1234567};
  for (int i = 0; i < kBlocks; ++i) random_block(type, rng, 0x3c00, blocks.data() + bytes * i);
  std::vector<float> y(256 * kBlocks);
  dequantize_row_ref(type, blocks.data(), y.data(), static_cast<int64_t>(y.size()));
  double ss = 0;
  for (float v : y) ss += static_cast<double>(v) * v;
  return std::sqrt(ss / static_cast<double>(y.size()));
}

}  // namespace

bool has_iq_random_blocks(GgmlType type) { return has_settable_block_scale(type); }

void fill_iq_random_blocks(GgmlType type, SynthRng& rng, float target_std, uint8_t* dst, int64_t n_blocks) {
  CHECK(has_iq_random_blocks(type), "no random i-quant blocks for type %s", get_type_info(type).name);
  CHECK(target_std > 0.0f && target_std <= 1.0f, "target_std %g out of (0, 1]", static_cast<double>(target_std));
  static const std::array<double, kGgmlTypeSlots> rms = [] {
    std::array<double, kGgmlTypeSlots> r{};
    for (uint32_t t = 0; t < kGgmlTypeSlots; ++t) {
      if (find_type_info(t) != nullptr && has_iq_random_blocks(static_cast<GgmlType>(t))) {
        r[t] = unit_rms(static_cast<GgmlType>(t));
      }
    }
    return r;
  }();
  const fp16_t d = fp32_to_fp16(static_cast<float>(target_std / rms[static_cast<uint32_t>(type)]));
  const size_t bytes = get_type_info(type).type_size;
  for (int64_t i = 0; i < n_blocks; ++i) random_block(type, rng, d, dst + bytes * static_cast<size_t>(i));
}

}  // namespace sniper
