// SPDX-License-Identifier: MIT
// Ports of ggml's scale searches (see scale_search.h). Floating-point expressions keep ggml's
// operand order so that the chosen scales and levels match llama-quantize's bit for bit.
#include "quant/scale_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "quant/iq4_values.h"
#include "quant/k_scales.h"
#include "quant/rounding.h"

namespace sniper {

namespace {

// Weight of element x for make_qx_quants' rmse_type (when no explicit weights are given).
float qx_weight(const float* qw, int i, int rmse_type, float x) {
  if (qw != nullptr) return qw[i];
  switch (rmse_type) {
    case 1: return x * x;
    case 2: return 1.0f;
    case 3: return std::fabs(x);
    default: return std::sqrt(std::fabs(x));
  }
}

}  // namespace

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, static_cast<size_t>(n));
    return 0.0f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) {
      const int l = nearest_int(iscale * x[i]);
      L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
    }
    return 1.0f / iscale;
  }
  bool return_early = false;
  if (rmse_type < 0) {
    rmse_type = -rmse_type;
    return_early = true;
  }
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = qx_weight(qw, i, rmse_type, x[i]);
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  if (return_early) return suml2 > 0 ? 0.5f * (scale + 1.0f / iscale) : 1.0f / iscale;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = 0.0f;
    suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = qx_weight(qw, i, rmse_type, x[i]);
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, static_cast<size_t>(n));
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  if (do_rmse) {
    float sumlx = 0.0f;
    float suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      L[i] = static_cast<int8_t>(l);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
      int n_changed = 0;
      for (int i = 0; i < n; ++i) {
        const float w = x[i] * x[i];
        float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
        if (slx > 0) {
          float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
          int new_l = nearest_int(x[i] * sl2 / slx);
          new_l = std::max(-nmax, std::min(nmax - 1, new_l));
          if (new_l != L[i]) {
            slx += w * x[i] * static_cast<float>(new_l);
            sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
              L[i] = static_cast<int8_t>(new_l);
              sumlx = slx;
              suml2 = sl2;
              ++n_changed;
            }
          }
        }
      }
      if (n_changed == 0) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
  }
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
  }
  return 1.0f / iscale;
}

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::memset(L, 0, static_cast<size_t>(n));
    *the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0.0f;
    float sum_l2 = 0.0f;
    float sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0.0f;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

int best_index_int8(int n, const int8_t* val, float x) {
  // val is sorted, so x picks level j once it reaches the midpoint of val[j-1] and val[j];
  // comparing 2x with the integer sum keeps both sides exact. Binary search, n a power of 2.
  const float x2 = x + x;
  int idx = 0;
  for (int step = n >> 1; step > 0; step >>= 1) {
    const int j = idx + step;
    idx = (x2 >= static_cast<float>(val[j - 1] + val[j])) ? j : idx;
  }
  return idx;
}

void make_iq4_quants(int super_block_size, const float* x, uint16_t* dh, uint8_t* q4, uint16_t* scales_h,
                     uint8_t* scales_l, float* scales, float* weight, uint8_t* L, int ntry) {
  constexpr int kBlock = 32;
  const int8_t* values = kIq4nlValues;
  const int n_blocks = super_block_size / kBlock;

  std::memset(q4, 0, static_cast<size_t>(super_block_size / 2));
  *dh = fp32_to_fp16(0.0f);

  float max_scale = 0.0f;
  float amax_scale = 0.0f;
  for (int ib = 0; ib < n_blocks; ++ib) {
    const float* xb = x + ib * kBlock;
    uint8_t* Lb = L + ib * kBlock;
    for (int j = 0; j < kBlock; ++j) weight[j] = xb[j] * xb[j];
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax < kGroupMaxEps) {
      scales[ib] = 0.0f;
      std::memset(Lb, 0, kBlock);
      continue;
    }
    float d = ntry > 0 ? -max / static_cast<float>(values[0]) : max / static_cast<float>(values[0]);
    float id = 1.0f / d;
    float sumqx = 0.0f;
    float sumq2 = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
      const int l = best_index_int8(16, values, id * xb[j]);
      Lb[j] = static_cast<uint8_t>(l);
      const float q = values[l];
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
      id = static_cast<float>(itry + values[0]) / max;
      sumqx = 0.0f;
      sumq2 = 0.0f;
      for (int j = 0; j < kBlock; ++j) {
        const float q = values[best_index_int8(16, values, id * xb[j])];
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    if (std::fabs(d) > amax_scale) {
      amax_scale = std::fabs(d);
      max_scale = d;
    }
  }

  if (n_blocks > 1) {
    *scales_h = 0;
    const float d = -max_scale / 32;
    *dh = fp32_to_fp16(d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int ib = 0; ib < n_blocks; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = std::max(-32, std::min(31, l));
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
      uint8_t* Lb = L + ib * kBlock;
      const float* xb = x + ib * kBlock;
      for (int j = 0; j < kBlock; ++j) {
        Lb[j] = static_cast<uint8_t>(best_index_int8(16, values, idl * xb[j]));
      }
      l += 32;
      const uint8_t l_l = static_cast<uint8_t>(l & 0xf);
      const uint16_t l_h = static_cast<uint16_t>(l >> 4);
      if (ib % 2 == 0) {
        scales_l[ib / 2] = l_l;
      } else {
        scales_l[ib / 2] = static_cast<uint8_t>(scales_l[ib / 2] | (l_l << 4));
      }
      *scales_h = static_cast<uint16_t>(*scales_h | (l_h << (2 * (ib % 8))));
    }
  } else {
    *dh = fp32_to_fp16(scales[0]);
    if (ntry > 0) {
      const float id = scales[0] != 0.0f ? 1.0f / scales[0] : 0.0f;
      for (int j = 0; j < super_block_size; ++j) {
        L[j] = static_cast<uint8_t>(best_index_int8(16, values, id * x[j]));
      }
    }
  }

  for (int i = 0; i < super_block_size / 32; ++i) {
    for (int j = 0; j < 16; ++j) {
      q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
    }
  }
}

void quantize_scale_min_super_block(const float* x, int nmax, float rmin, int nstep, uint8_t* scales12, fp16_t* d,
                                    fp16_t* dmin, uint8_t* L) {
  constexpr int kGroups = 8;
  uint8_t Laux[32];
  float weights[32];
  float mins[kGroups];
  float scales[kGroups];
  float max_scale = 0.0f;
  float max_min = 0.0f;
  for (int j = 0; j < kGroups; ++j) {
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }

  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(scales12, 0, 12);
  for (int j = 0; j < kGroups; ++j) {
    // ggml narrows nearest_int to uint8_t before clamping to 63.
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    set_scale_min_k4(j, ls, lm, scales12);
  }
  *d = fp32_to_fp16(max_scale / 63.0f);
  *dmin = fp32_to_fp16(max_min / 63.0f);

  for (int j = 0; j < kGroups; ++j) {
    uint8_t sc;
    uint8_t m;
    get_scale_min_k4(j, scales12, &sc, &m);
    const float dj = fp16_to_fp32(*d) * static_cast<float>(sc);
    if (dj == 0.0f) continue;
    const float dm = fp16_to_fp32(*dmin) * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / dj);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

}  // namespace sniper
