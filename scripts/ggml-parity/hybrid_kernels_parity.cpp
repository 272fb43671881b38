// SPDX-License-Identifier: MIT
// Developer check, not part of the build: runs the hybrid architectures' kernels (delta net, short
// conv, activations, gates, GELU, softcap, IMRoPE, rope_freqs) and ggml's CPU ops on the same
// random inputs and counts the elements whose bits differ. ggml is the reference engine's own
// library, built from the shared llama.cpp snapshot by ../ggml-parity.sh (which compiles and runs
// this file); exit status 1 if any element differs. Every tier of ours that the host runs is
// compared where the kernel has ISA twins.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"
#include "kernels/activations.h"
#include "kernels/delta_net.h"
#include "kernels/ops.h"
#include "kernels/ssm_conv.h"

using namespace sniper;
static ggml_context* ctx;
static std::mt19937 rng(42);
static std::vector<float> rnd(size_t n, float s) {
  std::normal_distribution<float> d(0, s);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}
static ggml_tensor* t4(std::vector<float>& v, int64_t a, int64_t b = 1, int64_t c = 1, int64_t d = 1) {
  ggml_tensor* t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, a, b, c, d);
  memcpy(t->data, v.data(), v.size() * 4);
  return t;
}
static const float* run(ggml_tensor* out) {
  auto* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  ggml_graph_compute_with_ctx(ctx, gf, 2);
  return (const float*)out->data;
}
static size_t g_bad = 0;
static void cmp(const char* what, const float* a, const float* b, size_t n) {
  size_t bad = 0;
  double md = 0;
  for (size_t i = 0; i < n; ++i) {
    if (memcmp(a + i, b + i, 4) != 0) {
      ++bad;
      md = std::max(md, (double)std::fabs(a[i] - b[i]));
    }
  }
  printf("%-32s n=%-7zu mismatches=%zu maxdiff=%g\n", what, n, bad, md);
  g_bad += bad;
}
int main() {
  ggml_init_params p{(size_t)1 << 30, nullptr, false};
  ctx = ggml_init(p);
  // A. gated delta net
  for (int64_t d : {64, 128, 80, 40, 46, 7})
    for (int64_t nt : {1, 7}) {
      const int64_t hk = 2, hv = 4;
      auto q = rnd(d * hk * nt, 1), k = rnd(d * hk * nt, 1), v = rnd(d * hv * nt, 1), st = rnd(d * d * hv, 0.3f);
      for (int64_t r = 0; r < hk * nt; ++r) {
        l2_norm(q.data() + r * d, q.data() + r * d, d, 1e-6f);
        l2_norm(k.data() + r * d, k.data() + r * d, d, 1e-6f);
      }
      std::vector<float> g(hv * nt), b(hv * nt);
      std::uniform_real_distribution<float> u(0, 1);
      for (auto& x : g) x = -u(rng);
      for (auto& x : b) x = u(rng);
      ggml_tensor* o = ggml_gated_delta_net(ctx, t4(q, d, hk, nt), t4(k, d, hk, nt), t4(v, d, hv, nt), t4(g, 1, hv, nt),
                                            t4(b, 1, hv, nt), t4(st, d, d, hv), 1);
      const float* r = run(o);
      std::vector<float> out(d * hv * nt), s2 = st;
      DeltaNetArgs a;
      a.head_dim = d;
      a.n_k_heads = hk;
      a.n_v_heads = hv;
      a.key_map = KeyHeadMap::kTiled;
      a.n_tokens = nt;
      a.q = q.data();
      a.k = k.data();
      a.q_stride = a.k_stride = hk * d;
      a.v = v.data();
      a.v_stride = hv * d;
      a.g = g.data();
      a.beta = b.data();
      a.gb_stride = hv;
      a.out = out.data();
      a.out_stride = hv * d;
      a.state = s2.data();
      for (IsaTier tier : {IsaTier::kRef, IsaTier::kAvx512}) {
        if (tier > host_best_tier()) continue;
        std::vector<float> o2(out.size()), s3 = st;
        a.out = o2.data();
        a.state = s3.data();
        find_delta_net(tier)(a, 0, hv);
        char name[64];
        snprintf(name, 64, "delta_net %s d=%ld nt=%ld out", isa_tier_name(tier), (long)d, (long)nt);
        cmp(name, r, o2.data(), o2.size());
        snprintf(name, 64, "delta_net %s d=%ld nt=%ld st", isa_tier_name(tier), (long)d, (long)nt);
        cmp(name, r + o2.size(), s3.data(), s3.size());
      }
    }
  // B. ssm_conv + silu
  for (int64_t ch : {512, 37}) {
    const int64_t nt = 5;
    auto x = rnd(nt * ch, 1), w = rnd(ch * 4, 0.3f), st = rnd(3 * ch, 1);
    std::vector<float> sx((3 + nt) * ch);
    for (int64_t c = 0; c < ch; ++c) {
      for (int i = 0; i < 3; ++i) sx[c * (3 + nt) + i] = st[i * ch + c];
      for (int64_t t = 0; t < nt; ++t) sx[c * (3 + nt) + 3 + t] = x[t * ch + c];
    }
    const float* r = run(ggml_silu(ctx, ggml_ssm_conv(ctx, t4(sx, 3 + nt, ch), t4(w, 4, ch))));
    std::vector<float> out(nt * ch), s2 = st;
    ssm_conv_silu(x.data(), ch, nt, ch, w.data(), s2.data(), out.data(), ch);
    cmp(ch == 512 ? "ssm_conv_silu ch=512" : "ssm_conv_silu ch=37", r, out.data(), out.size());
  }
  // C. l2 norm
  {
    auto x = rnd(128 * 6, 1);
    for (int i = 0; i < 128; ++i) x[5 * 128 + i] *= 1e-8f;
    const float* r = run(ggml_l2_norm(ctx, t4(x, 128, 6), 1e-6f));
    std::vector<float> y(x.size());
    for (int i = 0; i < 6; ++i) l2_norm(x.data() + i * 128, y.data() + i * 128, 128, 1e-6f);
    cmp("l2_norm", r, y.data(), y.size());
  }
  // D. softplus, sigmoid
  {
    auto x = rnd(1000, 10);
    x[0] = 20.0f;
    x[1] = 20.0001f;
    x[2] = 19.999f;
    const float* r = run(ggml_softplus(ctx, t4(x, 1000)));
    std::vector<float> y(1000);
    for (int i = 0; i < 1000; ++i) y[i] = softplus(x[i]);
    cmp("softplus", r, y.data(), 1000);
    const float* r2 = run(ggml_sigmoid(ctx, t4(x, 1000)));
    for (int i = 0; i < 1000; ++i) y[i] = sigmoid(x[i]);
    cmp("sigmoid", r2, y.data(), 1000);
    auto gt = rnd(1000, 3);
    const float* r3 = run(ggml_mul(ctx, t4(x, 1000), ggml_sigmoid(ctx, t4(gt, 1000))));
    std::vector<float> z = x;
    sigmoid_gate(gt.data(), z.data(), 1000);
    cmp("attn*sigmoid(gate)", r3, z.data(), 1000);
  }
  // E. gelu, geglu (all f16 values too)
  {
    auto x = rnd(2112 * 4, 3);
    x[0] = 10;
    x[1] = -10;
    x[2] = 9.999f;
    x[3] = -9.99f;
    auto up = rnd(x.size(), 1);
    const float* r = run(ggml_gelu(ctx, t4(x, 2112, 4)));
    for (IsaTier tier : {IsaTier::kRef, IsaTier::kAvx512}) {
      if (tier > host_best_tier()) continue;
      std::vector<float> y(x.size());
      find_gelu_ops(tier).gelu(x.data(), y.data(), 2112 * 4);
      cmp(tier == IsaTier::kRef ? "gelu ref" : "gelu avx512", r, y.data(), y.size());
    }
    const float* r2 = run(ggml_geglu_split(ctx, t4(x, 2112, 4), t4(up, 2112, 4)));
    for (IsaTier tier : {IsaTier::kRef, IsaTier::kAvx512}) {
      if (tier > host_best_tier()) continue;
      std::vector<float> y(x.size());
      find_gelu_ops(tier).geglu(x.data(), up.data(), y.data(), 2112 * 4);
      cmp(tier == IsaTier::kRef ? "geglu ref" : "geglu avx512", r2, y.data(), y.size());
    }
    std::vector<float> all;
    for (uint32_t h = 0; h < 65536; ++h) {
      uint16_t hh = h;
      ggml_fp16_t f;
      memcpy(&f, &hh, 2);
      float v = ggml_fp16_to_fp32(f);
      if (!std::isnan(v) && std::fabs(v) < 10) all.push_back(v);
    }
    const float* r3 = run(ggml_gelu(ctx, t4(all, all.size())));
    std::vector<float> y(all.size());
    gelu_ref(all.data(), y.data(), all.size());
    cmp("gelu all f16 |x|<10", r3, y.data(), y.size());
  }
  // F. softcap
  {
    auto x = rnd(512, 5);
    const float* r = run(ggml_scale(ctx, ggml_tanh(ctx, ggml_scale(ctx, t4(x, 512), 1.0f / 30.0f)), 30.0f));
    std::vector<float> y = x;
    softcap(y.data(), 512, 30.0f);
    cmp("softcap", r, y.data(), 512);
  }
  // G. gated rms norm
  {
    auto x = rnd(128 * 4, 1), w = rnd(128, 1), z = rnd(128 * 4, 2);
    const float* r = run(ggml_mul(ctx, ggml_mul(ctx, ggml_rms_norm(ctx, t4(x, 128, 4), 1e-6f), t4(w, 128)),
                                  ggml_silu(ctx, t4(z, 128, 4))));
    std::vector<float> y(x.size());
    for (int i = 0; i < 4; ++i)
      gated_rms_norm(x.data() + i * 128, w.data(), z.data() + i * 128, y.data() + i * 128, 128, 1e-6f);
    cmp("gated_rms_norm", r, y.data(), y.size());
  }
  // H. imrope (qwen35 small: head 64, n_rot 16, sections 3,3,2,0, base 1e7) and gemma4 partial rope
  {
    const int64_t hd = 64, nh = 4, nt = 6;
    auto x = rnd(hd * nh * nt, 1);
    ggml_tensor* pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4 * nt);
    int32_t* pp = (int32_t*)pos->data;
    const int32_t P[6] = {0, 1, 2, 23, 55, 511};
    for (int t = 0; t < nt; ++t) {
      pp[t] = P[t];
      pp[nt + t] = P[t];
      pp[2 * nt + t] = P[t];
      pp[3 * nt + t] = 0;
    }
    int sec[4] = {3, 3, 2, 0};
    const float* r = run(ggml_rope_multi(ctx, t4(x, hd, nh, nt), pos, nullptr, 16, sec, GGML_ROPE_TYPE_IMROPE, 512,
                                         1e7f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f));
    std::vector<float> y = x;
    for (int t = 0; t < nt; ++t) {
      int64_t p4[4] = {P[t], P[t], P[t], 0};
      int32_t s4[4] = {3, 3, 2, 0};
      float c[8], s[8];
      rope_angles_multi(p4, s4, true, 16, 1e7f, 1.0f, nullptr, c, s);
      rope_apply(y.data() + t * hd * nh, nh, hd, 16, RopeStyle::kNeox, c, s);
    }
    cmp("imrope", r, y.data(), y.size());
  }
  {
    const int64_t hd = 128, nh = 2, nt = 6;
    auto x = rnd(hd * nh * nt, 1);
    std::vector<float> ff(64, 1.0f);
    for (int i = 16; i < 64; ++i) ff[i] = 1e30f;
    ggml_tensor* pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, nt);
    int32_t* pp = (int32_t*)pos->data;
    const int32_t P[6] = {0, 1, 2, 23, 55, 511};
    for (int t = 0; t < nt; ++t) pp[t] = P[t];
    const float* r = run(ggml_rope_ext(ctx, t4(x, hd, nh, nt), pos, t4(ff, 64), 128, GGML_ROPE_TYPE_NEOX, 512, 1e6f,
                                       1.0f, 0.0f, 1.0f, 32.0f, 1.0f));
    std::vector<float> y = x;
    for (int t = 0; t < nt; ++t) {
      float c[64], s[64];
      rope_angles(P[t], 128, 1e6f, 1.0f, ff.data(), c, s);
      rope_apply(y.data() + t * hd * nh, nh, hd, 128, RopeStyle::kNeox, c, s);
    }
    cmp("rope neox freq_factors 1e30", r, y.data(), y.size());
  }
  printf(g_bad == 0 ? "all bit-identical\n" : "MISMATCHES: %zu\n", g_bad);
  return g_bad == 0 ? 0 : 1;
}
