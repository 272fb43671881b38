// SPDX-License-Identifier: MIT
#include "media/audio_resample.h"

#include <samplerate.h>

#include <cmath>

namespace sniper {

void AudioResampler::StateDeleter::operator()(void* state) const {
  if (state != nullptr) src_delete(static_cast<SRC_STATE*>(state));
}

AudioResampler::AudioResampler(AudioResampler&&) noexcept = default;
AudioResampler& AudioResampler::operator=(AudioResampler&&) noexcept = default;
AudioResampler::~AudioResampler() = default;

Result<AudioResampler> AudioResampler::create(int source_rate, int target_rate) {
  if (source_rate < 1 || source_rate > 1'000'000 || target_rate < 1 || target_rate > 1'000'000) {
    return make_error("resampling from %d Hz to %d Hz: rates must be in [1, 1000000] Hz", source_rate, target_rate);
  }
  AudioResampler r;
  r.ratio_ = static_cast<double>(target_rate) / source_rate;
  if (source_rate == target_rate) return r;
  if (!src_is_valid_ratio(r.ratio_)) {
    return make_error("resampling from %d Hz to %d Hz: the ratio %g is outside libsamplerate's [1/256, 256]",
                      source_rate, target_rate, r.ratio_);
  }
  int err = 0;
  SRC_STATE* state = src_new(SRC_SINC_MEDIUM_QUALITY, 1, &err);
  if (state == nullptr) return make_error("libsamplerate: %s", src_strerror(err));
  r.state_.reset(state);
  return r;
}

int64_t AudioResampler::output_length(int64_t n_in) const {
  return static_cast<int64_t>(std::llround(static_cast<double>(n_in) * ratio_));
}

Status AudioResampler::push(std::span<const float> in, bool last, std::vector<float>& out) {
  if (state_ == nullptr) {
    out.insert(out.end(), in.begin(), in.end());
    return ok_status();
  }
  auto* state = static_cast<SRC_STATE*>(state_.get());
  // libsamplerate may hold back input; feed it until it has taken everything and, at the end,
  // until it produces nothing more.
  float buf[4096];
  SRC_DATA d{};
  d.src_ratio = ratio_;
  d.data_out = buf;
  d.output_frames = static_cast<long>(sizeof(buf) / sizeof(buf[0]));
  size_t pos = 0;
  int stalled = 0;
  for (;;) {
    d.data_in = in.data() + pos;
    d.input_frames = static_cast<long>(in.size() - pos);
    d.end_of_input = last ? 1 : 0;
    const int err = src_process(state, &d);
    if (err != 0) return make_error("libsamplerate: %s", src_strerror(err));
    out.insert(out.end(), buf, buf + d.output_frames_gen);
    pos += static_cast<size_t>(d.input_frames_used);
    const bool input_done = pos >= in.size();
    if (input_done && (!last || d.output_frames_gen == 0)) break;
    if (d.input_frames_used == 0 && d.output_frames_gen == 0 && (!input_done || ++stalled > 2)) {
      return make_error("libsamplerate made no progress (%zu of %zu samples taken)", pos, in.size());
    }
  }
  return ok_status();
}

Result<std::vector<float>> resample_audio(std::span<const float> in, int source_rate, int target_rate) {
  SNIPER_ASSIGN_OR_RETURN(AudioResampler r, AudioResampler::create(source_rate, target_rate));
  std::vector<float> out;
  out.reserve(static_cast<size_t>(r.output_length(static_cast<int64_t>(in.size()))) + 16);
  SNIPER_TRY(r.push(in, true, out));
  return out;
}

}  // namespace sniper
