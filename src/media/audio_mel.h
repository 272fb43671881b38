// SPDX-License-Identifier: MIT
// The log-mel spectrogram of 16 kHz mono audio, exactly as llama.cpp's mtmd computes it for the
// gemma4a projector (mtmd-audio.cpp, mtmd_audio_preprocessor_gemma4a), bit for bit:
//   * the audio is cut into 30-second chunks, each its own spectrogram (its own media chunk);
//   * each chunk is padded "semicausally": window_len / 2 zeros in front and zeros behind up to
//     the frame count PyTorch's unfold(frame_length + 1, hop) gives, and no more frames;
//   * frames of n_fft samples every hop samples, multiplied by a periodic Hann window of
//     window_len samples zero-padded at the end to n_fft, through mtmd's radix-2 FFT (its own
//     float twiddle table and operation order), magnitude |X| (not power);
//   * an HTK mel filterbank (0 Hz to Nyquist, no area normalisation) summed as mtmd sums it
//     (float products in fours, a double accumulator), floored at 0.001, natural log; no
//     normalisation.
// Gemma 4's feature extractor: 16 kHz, n_fft 512, a 320-sample (20 ms) window, hop 160 (10 ms),
// n_mel from the projector file (128). Compiled without FMA contraction, as mtmd is.
// Thread-safe: a LogMel is read-only after construction; frames are split over the thread pool.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"

namespace sniper {

class ThreadPool;

struct LogMelParams {
  int sample_rate = 16000;
  int n_fft = 512;       // a power of two (mtmd falls back to a DFT otherwise; refused here)
  int window_len = 320;  // periodic Hann window, zero-padded at the end to n_fft
  int hop = 160;
  int n_mel = 128;
  double chunk_seconds = 30;  // each chunk of audio is its own spectrogram
  float mel_floor = 0.001f;
};

// Gemma 4 audio (gemma4a) with `n_mel` mel bins.
LogMelParams gemma4a_log_mel_params(int n_mel);

// One spectrogram: n_mel rows of n_frames values (mel-major, mtmd's layout).
struct MelSpectrogram {
  int n_mel = 0;
  int n_frames = 0;
  std::vector<float> data;  // [n_mel][n_frames]
};

class LogMel {
 public:
  // Errors: parameters outside their ranges (named).
  static Result<LogMel> create(const LogMelParams& params);

  // The spectrograms of `samples` (one per chunk). Errors: no samples, or a chunk too short to
  // make one frame (a single sample after a 30-second boundary; mtmd fails there too).
  Result<std::vector<MelSpectrogram>> compute(std::span<const float> samples, ThreadPool* pool) const;

  // The frames a chunk of `n` samples makes (0 when too short).
  int64_t frames_for(int64_t n) const;

  const LogMelParams& params() const { return p_; }
  const std::vector<float>& filters() const { return filters_; }  // [n_mel][n_fft / 2 + 1]
  const std::vector<float>& window() const { return window_; }    // [n_fft]

  // One frame: `frame` (n_fft samples, already windowed) to n_mel log-mel values written with
  // stride `stride` into `out`. `scratch` holds 8 * n_fft floats.
  void frame(const float* frame, float* scratch, float* out, int64_t stride) const;

 private:
  LogMelParams p_;
  std::vector<float> sin_, cos_;  // mtmd's twiddle table: sinf/cosf(2 pi i / n_fft)
  std::vector<float> window_;
  std::vector<float> filters_;
};

}  // namespace sniper
