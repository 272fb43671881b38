// SPDX-License-Identifier: MIT
// The delta-net short convolution (kernels/ssm_conv.h). Scalar: a small share of a layer's time
// next to its projections (4 FMAs per channel and token).
#include "kernels/ssm_conv.h"

#include <cmath>

#include "base/check.h"
#include "kernels/activations.h"

namespace sniper {

void ssm_conv_silu(const float* x, int64_t x_stride, int64_t n_tokens, int64_t channels, const float* w, float* state,
                   float* out, int64_t out_stride) {
  CHECK(n_tokens >= 0 && channels >= 0, "ssm_conv_silu: n_tokens=%ld channels=%ld", static_cast<long>(n_tokens),
        static_cast<long>(channels));
  constexpr int64_t kHist = kSsmConvWidth - 1;
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* o = out + t * out_stride;
    for (int64_t c = 0; c < channels; ++c) {
      float sum = 0.0f;
      for (int64_t i = 0; i < kSsmConvWidth; ++i) {
        const int64_t s = t - kHist + i;  // input time step
        const float in = s >= 0 ? x[s * x_stride + c] : state[(kHist + s) * channels + c];
        sum += in * w[c * kSsmConvWidth + i];
      }
      o[c] = sum;
    }
    silu_row(o, o, channels);
  }
  // The new state: the last kHist rows of (state, x).
  for (int64_t r = 0; r < kHist; ++r) {
    const int64_t s = n_tokens - kHist + r;  // time step that becomes state row r
    float* dst = state + r * channels;
    if (s >= 0) {
      for (int64_t c = 0; c < channels; ++c) dst[c] = x[s * x_stride + c];
    } else {
      const float* src = state + (kHist + s) * channels;  // an older state row, s + kHist >= r
      for (int64_t c = 0; c < channels; ++c) dst[c] = src[c];
    }
  }
}

}  // namespace sniper
