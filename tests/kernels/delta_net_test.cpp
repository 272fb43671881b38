// SPDX-License-Identifier: MIT
// Gated delta net (kernels/delta_net.h): every tier gives delta_net_ref's bits (outputs and
// states) for head dims the AVX-512 twin runs and ones it hands back, tails of token blocks,
// both key-head maps and partial head ranges (heads outside the range stay untouched); a prefill
// gives the bits of token-by-token calls; and delta_net_ref follows the formula of
// ARCHITECTURES.md (S = exp(g) S; u = (v - S^T k) beta; S += k u^T; o = S^T q / sqrt(d)),
// transcribed directly in double precision on the natural S[r][c] layout.
#include "kernels/delta_net.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace sniper {
namespace {

using test::bits;
using test::host_has;
using test::kAllTiers;
using test::nan_f;

struct Problem {
  int64_t d, n_k, n_v, n_tokens;
  KeyHeadMap map;
  std::vector<float> qkv;      // [n_tokens][q n_k*d | k n_k*d | v n_v*d]
  std::vector<float> g, beta;  // [n_tokens][n_v]
  std::vector<float> state;    // [n_v][d][d]
  int64_t channels() const { return (2 * n_k + n_v) * d; }

  DeltaNetArgs args(float* out, float* st) const {
    DeltaNetArgs a;
    a.head_dim = d;
    a.n_k_heads = n_k;
    a.n_v_heads = n_v;
    a.key_map = map;
    a.n_tokens = n_tokens;
    a.q = qkv.data();
    a.k = qkv.data() + n_k * d;
    a.v = qkv.data() + 2 * n_k * d;
    a.q_stride = a.k_stride = a.v_stride = channels();
    a.g = g.data();
    a.beta = beta.data();
    a.gb_stride = n_v;
    a.out = out;
    a.out_stride = n_v * d;
    a.state = st;
    return a;
  }
};

// q and k L2-normalised per head (as the model feeds them), v N(0, 1), decays in (0.4, 1),
// beta in (0, 1), a random starting state (as after earlier tokens).
Problem make_problem(int64_t d, int64_t n_k, int64_t n_v, int64_t n_tokens, KeyHeadMap map, uint32_t seed) {
  Problem p{d, n_k, n_v, n_tokens, map, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  p.qkv.resize(static_cast<size_t>(n_tokens * p.channels()));
  for (auto& x : p.qkv) x = normal(rng);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < 2 * n_k; ++h) {
      float* x = p.qkv.data() + t * p.channels() + h * d;
      double ss = 0;
      for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[i]) * x[i];
      for (int64_t i = 0; i < d; ++i) x[i] = static_cast<float>(x[i] / std::sqrt(ss));
    }
  }
  for (int64_t i = 0; i < n_tokens * n_v; ++i) {
    p.g.push_back(-0.9f * unit(rng));
    p.beta.push_back(unit(rng));
  }
  p.state.resize(static_cast<size_t>(n_v * d * d));
  for (auto& x : p.state) x = 0.3f * normal(rng);
  return p;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const char* what,
                      const std::string& ctx) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(bits(got[i]), bits(want[i]))
        << what << " [" << i << "] " << ctx << " got " << got[i] << " want " << want[i];
  }
}

TEST(DeltaNet, EveryTierMatchesRefBitwise) {
  struct Shape {
    int64_t d, n_k, n_v;
  };
  // 64/128/256: the SIMD twins' own paths; 48 and 40: handed back to the reference.
  const Shape shapes[] = {{64, 2, 4}, {128, 1, 3}, {128, 2, 4}, {256, 1, 2}, {48, 2, 2}, {40, 1, 2}};
  struct Run {
    int64_t n_tokens;  // 17 and 33: whole token blocks of 16 and a tail
    KeyHeadMap map;
    bool inner_range;  // heads [1, n_v - 1): the others keep NaN outputs and their state
  };
  const Run runs[] = {{1, KeyHeadMap::kTiled, false}, {17, KeyHeadMap::kGrouped, true}, {33, KeyHeadMap::kTiled, true}};
  uint32_t seed = 1;
  for (const Shape& sh : shapes) {
    for (const Run& run : runs) {
      if (sh.d == 256 && run.n_tokens > 17) continue;  // keeps the scalar reference's time down
      const int64_t n_tokens = run.n_tokens;
      const Problem p = make_problem(sh.d, sh.n_k, sh.n_v, n_tokens, run.map, ++seed);
      const int64_t h0 = run.inner_range ? 1 : 0;
      const int64_t h1 = run.inner_range ? std::max<int64_t>(h0, sh.n_v - 1) : sh.n_v;
      std::vector<float> want(static_cast<size_t>(n_tokens * sh.n_v * sh.d), nan_f()), st_want = p.state;
      delta_net_ref(p.args(want.data(), st_want.data()), h0, h1);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t j = 0; j < sh.n_v; ++j) {
          const bool in = j >= h0 && j < h1;
          for (int64_t c = 0; c < sh.d; ++c) {
            ASSERT_EQ(std::isnan(want[static_cast<size_t>((t * sh.n_v + j) * sh.d + c)]), !in)
                << "t=" << t << " head " << j;
          }
        }
      }
      for (int64_t j = 0; j < sh.n_v; ++j) {
        if (j >= h0 && j < h1) continue;
        for (int64_t i = 0; i < sh.d * sh.d; ++i) {
          const size_t at = static_cast<size_t>(j * sh.d * sh.d + i);
          ASSERT_EQ(bits(st_want[at]), bits(p.state[at])) << "head " << j << " state changed";
        }
      }
      for (IsaTier tier : kAllTiers) {
        if (tier == IsaTier::kRef || !host_has(tier)) continue;
        std::vector<float> out(want.size(), nan_f()), st = p.state;
        find_delta_net(tier)(p.args(out.data(), st.data()), h0, h1);
        const std::string ctx = std::string(isa_tier_name(tier)) + " d=" + std::to_string(sh.d) +
                                " n_v=" + std::to_string(sh.n_v) + " tokens=" + std::to_string(n_tokens) + " heads=[" +
                                std::to_string(h0) + "," + std::to_string(h1) + ")";
        expect_same_bits(out, want, "out", ctx);
        expect_same_bits(st, st_want, "state", ctx);
      }
    }
  }
}

TEST(DeltaNet, PrefillEqualsSingleSteps) {
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    const DeltaNetFn fn = find_delta_net(tier);
    for (int64_t d : {64, 128, 40}) {
      if (tier == IsaTier::kRef && d == 128) continue;  // the scalar twin's time; d=64 covers it
      const int64_t n_tokens = 21;
      const Problem p = make_problem(d, 2, 4, n_tokens, KeyHeadMap::kTiled, 77 + static_cast<uint32_t>(d));
      std::vector<float> out(static_cast<size_t>(n_tokens * 4 * d), nan_f()), steps = out;
      std::vector<float> st = p.state, st_steps = p.state;
      fn(p.args(out.data(), st.data()), 0, 4);
      for (int64_t t = 0; t < n_tokens; ++t) {
        DeltaNetArgs a = p.args(steps.data() + t * 4 * d, st_steps.data());
        a.n_tokens = 1;
        a.q += t * a.q_stride;
        a.k += t * a.k_stride;
        a.v += t * a.v_stride;
        a.g += t * a.gb_stride;
        a.beta += t * a.gb_stride;
        fn(a, 0, 4);
      }
      const std::string ctx = std::string(isa_tier_name(tier)) + " d=" + std::to_string(d);
      expect_same_bits(out, steps, "out", ctx);
      expect_same_bits(st, st_steps, "state", ctx);
    }
  }
}

// ARCHITECTURES.md's formula on S[r][c] (key dim r, value dim c), in double precision.
TEST(DeltaNet, RefFollowsTheFormula) {
  for (KeyHeadMap map : {KeyHeadMap::kTiled, KeyHeadMap::kGrouped}) {
    const int64_t d = 32, n_k = 2, n_v = 4, n_tokens = 12;
    const Problem p = make_problem(d, n_k, n_v, n_tokens, map, 5);
    std::vector<float> out(static_cast<size_t>(n_tokens * n_v * d), nan_f()), st = p.state;
    delta_net_ref(p.args(out.data(), st.data()), 0, n_v);
    for (int64_t j = 0; j < n_v; ++j) {
      const int64_t kh = map == KeyHeadMap::kTiled ? j % n_k : j / (n_v / n_k);
      std::vector<double> S(static_cast<size_t>(d * d));  // S[r * d + c]
      for (int64_t r = 0; r < d; ++r) {
        for (int64_t c = 0; c < d; ++c)
          S[static_cast<size_t>(r * d + c)] = p.state[static_cast<size_t>(j * d * d + c * d + r)];
      }
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* q = p.qkv.data() + t * p.channels() + kh * d;
        const float* k = q + n_k * d;
        const float* v = p.qkv.data() + t * p.channels() + 2 * n_k * d + j * d;
        const double decay = std::exp(static_cast<double>(p.g[static_cast<size_t>(t * n_v + j)]));
        const double beta = p.beta[static_cast<size_t>(t * n_v + j)];
        for (double& x : S) x *= decay;
        std::vector<double> u(static_cast<size_t>(d));
        for (int64_t c = 0; c < d; ++c) {
          double stk = 0;
          for (int64_t r = 0; r < d; ++r) stk += S[static_cast<size_t>(r * d + c)] * k[r];
          u[static_cast<size_t>(c)] = (v[c] - stk) * beta;
        }
        for (int64_t r = 0; r < d; ++r) {
          for (int64_t c = 0; c < d; ++c) S[static_cast<size_t>(r * d + c)] += k[r] * u[static_cast<size_t>(c)];
        }
        for (int64_t c = 0; c < d; ++c) {
          double o = 0;
          for (int64_t r = 0; r < d; ++r) o += S[static_cast<size_t>(r * d + c)] * q[r];
          o /= std::sqrt(static_cast<double>(d));
          EXPECT_NEAR(out[static_cast<size_t>((t * n_v + j) * d + c)], o, 2e-5)
              << "t=" << t << " j=" << j << " c=" << c;
        }
      }
      for (int64_t r = 0; r < d; ++r) {
        for (int64_t c = 0; c < d; ++c) {
          EXPECT_NEAR(st[static_cast<size_t>(j * d * d + c * d + r)], S[static_cast<size_t>(r * d + c)], 2e-5);
        }
      }
    }
  }
}

TEST(DeltaNet, ZeroStateFirstTokenIsBetaScaledOuterProduct) {
  // From S = 0: u = v * beta, S = k u^T, o = u (k . q) / sqrt(d).
  const int64_t d = 64;
  Problem p = make_problem(d, 1, 1, 1, KeyHeadMap::kTiled, 9);
  std::fill(p.state.begin(), p.state.end(), 0.0f);
  std::vector<float> out(static_cast<size_t>(d), nan_f()), st = p.state;
  delta_net(p.args(out.data(), st.data()), 0, 1);
  const float* q = p.qkv.data();
  const float* k = q + d;
  const float* v = k + d;
  double kq = 0;
  for (int64_t r = 0; r < d; ++r) kq += static_cast<double>(k[r]) * q[r];
  for (int64_t c = 0; c < d; ++c) {
    EXPECT_NEAR(out[static_cast<size_t>(c)], v[c] * p.beta[0] * kq / 8.0, 1e-5);
  }
}

}  // namespace
}  // namespace sniper
