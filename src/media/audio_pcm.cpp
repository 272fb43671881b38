// SPDX-License-Identifier: MIT
#include "media/audio_pcm.h"

#include <cmath>

namespace sniper {

Result<AudioAccumulator> AudioAccumulator::create(const char* format, int channels, int64_t sample_rate,
                                                  int64_t declared_frames, const MediaLimits& limits) {
  if (channels < 1 || channels > limits.max_audio_channels) {
    return make_error("%s audio has %d channels, outside the limit of [1, %lld]", format, channels,
                      static_cast<long long>(limits.max_audio_channels));
  }
  if (sample_rate < kAudioMinSourceRate || sample_rate > kAudioMaxSourceRate) {
    return make_error("%s audio has a sample rate of %lld Hz, outside [%d, %d] Hz", format,
                      static_cast<long long>(sample_rate), kAudioMinSourceRate, kAudioMaxSourceRate);
  }
  const double declared_seconds = static_cast<double>(declared_frames) / static_cast<double>(sample_rate);
  if (declared_frames >= 0 && declared_seconds > limits.max_audio_seconds) {
    return make_error("%s audio lasts %.1f seconds, over the limit of %g seconds", format, declared_seconds,
                      limits.max_audio_seconds);
  }
  SNIPER_ASSIGN_OR_RETURN(AudioResampler resampler,
                          AudioResampler::create(static_cast<int>(sample_rate), kAudioSampleRate));
  AudioAccumulator a(std::move(resampler));
  a.format_ = format;
  a.channels_ = channels;
  a.declared_frames_ = declared_frames;
  a.max_seconds_ = limits.max_audio_seconds;
  a.max_frames_ = static_cast<int64_t>(limits.max_audio_seconds * static_cast<double>(sample_rate));
  a.out_.kind = MediaKind::kAudio;
  a.out_.format = format;
  a.out_.audio.sample_rate = kAudioSampleRate;
  a.out_.audio.source_rate = static_cast<int>(sample_rate);
  a.out_.audio.source_channels = channels;
  if (declared_frames > 0) {
    a.out_.audio.samples.reserve(static_cast<size_t>(a.resampler_.output_length(declared_frames)) + 64);
  }
  return a;
}

Status AudioAccumulator::push(std::span<const float> interleaved, bool last) {
  const size_t c = static_cast<size_t>(channels_);
  if (interleaved.size() % c != 0) return make_error("%s audio: a block ends inside a frame", format_);
  const size_t n = interleaved.size() / c;
  frames_ += static_cast<int64_t>(n);
  if (frames_ > max_frames_) {
    return make_error("%s audio lasts over %g seconds, the limit (the header declared %s)", format_, max_seconds_,
                      declared_frames_ < 0 ? "no length" : "less");
  }
  mono_.resize(n);
  if (c == 1) {
    std::copy(interleaved.begin(), interleaved.end(), mono_.begin());
  } else {
    const float inv = 1.0f / static_cast<float>(c);
    for (size_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (size_t k = 0; k < c; ++k) sum += interleaved[i * c + k];
      mono_[i] = sum * inv;
    }
  }
  return resampler_.push(mono_, last, out_.audio.samples);
}

Result<DecodedMedia> AudioAccumulator::finish() {
  if (frames_ == 0 || out_.audio.samples.empty()) {
    return make_error("%s audio holds no samples (empty, or cut before the first)", format_);
  }
  for (float s : out_.audio.samples) {
    if (!std::isfinite(s)) return make_error("%s audio holds a sample that is not a finite number", format_);
  }
  return std::move(out_);
}

}  // namespace sniper
