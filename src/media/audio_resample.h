// SPDX-License-Identifier: MIT
// Streaming sample-rate conversion of mono float PCM with libsamplerate (Debian's
// libsamplerate0, band-limited sinc interpolation, SRC_SINC_MEDIUM_QUALITY: flat to 90% of the
// output's Nyquist band, about 97 dB of stop-band rejection). The decoders feed it blocks as they
// read them, so a long file at a high rate never sits in memory at its source rate. When the
// source rate equals the target rate the samples pass through unchanged (bit for bit).
//
// mtmd converts with miniaudio's linear resampler (a 4th-order low-pass after linear
// interpolation); audio at 16 kHz reaches both unchanged, other rates differ slightly (see
// docs/media.md). Not thread-safe: one resampler per decode.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "base/result.h"

namespace sniper {

class AudioResampler {
 public:
  // Errors: a rate outside [1, 10^6] or a ratio libsamplerate refuses (over 256x either way).
  static Result<AudioResampler> create(int source_rate, int target_rate);
  AudioResampler(AudioResampler&&) noexcept;
  AudioResampler& operator=(AudioResampler&&) noexcept;
  ~AudioResampler();

  // Converts `in` (the next samples of the stream) and appends the output to `out`. With
  // `last` set the stream ends here and the converter's tail is flushed.
  [[nodiscard]] Status push(std::span<const float> in, bool last, std::vector<float>& out);

  // Output samples `n_in` source samples become (rounded as libsamplerate does over a stream,
  // within one sample).
  int64_t output_length(int64_t n_in) const;

  bool passthrough() const { return state_ == nullptr; }

 private:
  AudioResampler() = default;
  struct StateDeleter {
    void operator()(void* state) const;
  };
  std::unique_ptr<void, StateDeleter> state_;  // SRC_STATE*, null when passing through
  double ratio_ = 1.0;
};

// Converts a whole mono signal at once (tests and small inputs).
Result<std::vector<float>> resample_audio(std::span<const float> in, int source_rate, int target_rate);

}  // namespace sniper
