// SPDX-License-Identifier: MIT
// Every expression keeps mtmd-audio.cpp's operand order and types (float vs double), so that the
// rounding is the same; see audio_mel.h.
#include "media/audio_mel.h"

#include <algorithm>
#include <cmath>

#include "base/thread_pool.h"

namespace sniper {

namespace {

// mtmd's recursive radix-2 FFT of real input: `in` holds N reals and N more of scratch, `out`
// 2N complex pairs and 4N more of scratch (the layout mtmd's fft_impl<false, true> uses).
void fft_real(const float* sin_t, const float* cos_t, int n_table, float* in, int n, float* out) {
  if (n == 1) {
    out[0] = in[0];
    out[1] = 0.0f;
    return;
  }
  const int half = n / 2;
  float* even = in + n;
  for (int i = 0; i < half; ++i) even[i] = in[2 * i];
  float* even_fft = out + 2 * n;
  fft_real(sin_t, cos_t, n_table, even, half, even_fft);
  float* odd = even;
  for (int i = 0; i < half; ++i) odd[i] = in[2 * i + 1];
  float* odd_fft = even_fft + n;
  fft_real(sin_t, cos_t, n_table, odd, half, odd_fft);
  const int step = n_table / n;
  for (int k = 0; k < half; ++k) {
    const float re = cos_t[k * step];
    const float im = -1.0f * sin_t[k * step];
    const float re_odd = odd_fft[2 * k + 0];
    const float im_odd = odd_fft[2 * k + 1];
    out[2 * k + 0] = 1.0f * (even_fft[2 * k + 0] + re * re_odd - im * im_odd);
    out[2 * k + 1] = 1.0f * (even_fft[2 * k + 1] + re * im_odd + im * re_odd);
    out[2 * (k + half) + 0] = 1.0f * (even_fft[2 * k + 0] - re * re_odd + im * im_odd);
    out[2 * (k + half) + 1] = 1.0f * (even_fft[2 * k + 1] - re * im_odd - im * re_odd);
  }
}

}  // namespace

LogMelParams gemma4a_log_mel_params(int n_mel) {
  LogMelParams p;
  p.n_mel = n_mel;
  return p;
}

Result<LogMel> LogMel::create(const LogMelParams& p) {
  if (p.sample_rate < 1000 || p.sample_rate > 384000) {
    return make_error("log-mel sample rate is %d Hz but must be in [1000, 384000]", p.sample_rate);
  }
  if (p.n_fft < 2 || p.n_fft > 65536 || (p.n_fft & (p.n_fft - 1)) != 0) {
    return make_error("log-mel n_fft is %d but must be a power of two in [2, 65536]", p.n_fft);
  }
  if (p.window_len < 2 || p.window_len > p.n_fft) {
    return make_error("log-mel window is %d samples but must be in [2, n_fft = %d]", p.window_len, p.n_fft);
  }
  if (p.hop < 1 || p.hop > p.n_fft) return make_error("log-mel hop is %d but must be in [1, %d]", p.hop, p.n_fft);
  if (p.n_mel < 1 || p.n_mel > 256) return make_error("log-mel n_mel is %d but must be in [1, 256]", p.n_mel);
  if (!(p.chunk_seconds >= 1 && p.chunk_seconds <= 3600)) {
    return make_error("log-mel chunk is %g seconds but must be in [1, 3600]", p.chunk_seconds);
  }
  LogMel m;
  m.p_ = p;
  const auto n = static_cast<uint32_t>(p.n_fft);
  m.sin_.resize(n);
  m.cos_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const double theta = (2 * M_PI * i) / n;
    m.sin_[i] = sinf(static_cast<float>(theta));
    m.cos_[i] = cosf(static_cast<float>(theta));
  }
  m.window_.assign(n, 0.0f);
  for (uint32_t i = 0; i < static_cast<uint32_t>(p.window_len); ++i) {
    m.window_[i] = 0.5f - 0.5f * cosf((2.0f * static_cast<float>(M_PI) * static_cast<float>(i)) /
                                      static_cast<float>(p.window_len));
  }
  // HTK mel filterbank, 0 Hz to Nyquist, no area normalisation (fill_mel_filterbank_matrix).
  const auto hz_to_mel = [](double f) { return 2595.0 * log10(1.0 + f / 700.0); };
  const auto mel_to_hz = [](double mel) { return 700.0 * (pow(10.0, mel / 2595.0) - 1.0); };
  const float fmax = static_cast<float>(p.sample_rate) / 2.0f;
  const double bin_hz = static_cast<double>(p.sample_rate) / static_cast<double>(p.n_fft);
  const double m_lo = hz_to_mel(0.0f);
  const double m_hi = hz_to_mel(fmax);
  std::vector<double> hz(static_cast<size_t>(p.n_mel) + 2);
  for (int i = 0; i < p.n_mel + 2; ++i) {
    hz[static_cast<size_t>(i)] = mel_to_hz(m_lo + (m_hi - m_lo) * (double(i) / (p.n_mel + 1)));
  }
  const int bins = p.n_fft / 2 + 1;
  m.filters_.assign(static_cast<size_t>(p.n_mel) * static_cast<size_t>(bins), 0.0f);
  for (int mel = 0; mel < p.n_mel; ++mel) {
    const double left = hz[static_cast<size_t>(mel)];
    const double center = hz[static_cast<size_t>(mel) + 1];
    const double right = hz[static_cast<size_t>(mel) + 2];
    const double denom_l = std::max(1e-30, center - left);
    const double denom_r = std::max(1e-30, right - center);
    for (int k = 0; k < bins; ++k) {
      const double f = k * bin_hz;
      double w = 0.0;
      if (f >= left && f <= center) {
        w = (f - left) / denom_l;
      } else if (f > center && f <= right) {
        w = (right - f) / denom_r;
      }
      m.filters_[static_cast<size_t>(mel) * bins + k] = static_cast<float>(w * 1.0 * 1.0f);
    }
  }
  return m;
}

void LogMel::frame(const float* in, float* scratch, float* out, int64_t stride) const {
  const int n = p_.n_fft;
  const int bins = n / 2 + 1;
  float* fft_in = scratch;           // 2n
  float* fft_out = scratch + 2 * n;  // 8n, as mtmd sizes it (the recursion touches 6n)
  std::copy(in, in + n, fft_in);
  fft_real(sin_.data(), cos_.data(), n, fft_in, n, fft_out);
  for (int j = 0; j < bins; ++j) {
    const float power = (fft_out[2 * j + 0] * fft_out[2 * j + 0] + fft_out[2 * j + 1] * fft_out[2 * j + 1]);
    fft_out[j] = sqrtf(power);
  }
  for (int j = 0; j < p_.n_mel; ++j) {
    const float* w = filters_.data() + static_cast<size_t>(j) * bins;
    double sum = 0.0;
    int k = 0;
    for (k = 0; k < bins - 3; k += 4) {
      sum +=
          fft_out[k + 0] * w[k + 0] + fft_out[k + 1] * w[k + 1] + fft_out[k + 2] * w[k + 2] + fft_out[k + 3] * w[k + 3];
    }
    for (; k < bins; ++k) sum += fft_out[k] * w[k];
    sum = std::max(sum, static_cast<double>(p_.mel_floor));
    out[static_cast<int64_t>(j) * stride] = static_cast<float>(log(sum));
  }
}

// mtmd's integer arithmetic, C++'s division truncating toward zero: a chunk of 2 to 160
// samples still makes one frame, a chunk of 1 sample none.
int64_t LogMel::frames_for(int64_t n) const {
  const int64_t with_left = n + p_.window_len / 2;
  return std::max<int64_t>(0, (with_left - (p_.window_len + 1)) / p_.hop + 1);
}

Result<std::vector<MelSpectrogram>> LogMel::compute(std::span<const float> samples, ThreadPool* pool) const {
  if (samples.empty()) return make_error("audio holds no samples: no spectrogram to compute");
  const auto chunk = static_cast<size_t>(p_.chunk_seconds * p_.sample_rate);
  const int n = p_.n_fft;
  std::vector<MelSpectrogram> out;
  for (size_t off = 0; off < samples.size(); off += chunk) {
    const size_t len = std::min(chunk, samples.size() - off);
    const int64_t frames = frames_for(static_cast<int64_t>(len));
    if (frames < 1) {
      return make_error("audio chunk at %.2f s holds %zu sample(s), too few for one frame (need at least 2)",
                        static_cast<double>(off) / p_.sample_rate, len);
    }
    // Semicausal padding: window_len / 2 zeros in front, zeros behind up to the last frame.
    const int64_t pad_left = p_.window_len / 2;
    const int64_t needed = (frames - 1) * p_.hop + n;
    const int64_t total_pad = std::max(needed - static_cast<int64_t>(len), pad_left);
    std::vector<float> padded(static_cast<size_t>(total_pad) + len, 0.0f);
    std::copy(samples.begin() + static_cast<long>(off), samples.begin() + static_cast<long>(off + len),
              padded.begin() + pad_left);
    const auto n_padded = static_cast<int64_t>(padded.size());
    MelSpectrogram mel;
    mel.n_mel = p_.n_mel;
    mel.n_frames = static_cast<int>(frames);
    mel.data.assign(static_cast<size_t>(p_.n_mel) * static_cast<size_t>(frames), 0.0f);
    auto work = [&](int64_t begin, int64_t end) {
      std::vector<float> windowed(static_cast<size_t>(n));
      std::vector<float> scratch(static_cast<size_t>(n) * 10);
      for (int64_t i = begin; i < end; ++i) {
        const int64_t at = i * p_.hop;
        const int64_t valid = std::min<int64_t>(n, std::max<int64_t>(0, n_padded - at));
        for (int64_t j = 0; j < valid; ++j)
          windowed[static_cast<size_t>(j)] = window_[static_cast<size_t>(j)] * padded[static_cast<size_t>(at + j)];
        std::fill(windowed.begin() + valid, windowed.end(), 0.0f);
        frame(windowed.data(), scratch.data(), mel.data.data() + i, frames);
      }
    };
    if (pool != nullptr) {
      pool->parallel_for(frames, 16, work);
    } else {
      work(0, frames);
    }
    out.push_back(std::move(mel));
  }
  return out;
}

}  // namespace sniper
