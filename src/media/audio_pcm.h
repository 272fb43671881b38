// SPDX-License-Identifier: MIT
// What every audio decoder does with the samples it reads (media/audio_decoder.cpp through
// libsndfile, media/vorbis_decoder.cpp through libvorbisfile, media/opus_decoder.cpp through
// libopusfile): checks the header's channels, rate
// and declared duration against MediaLimits before any sample is decoded, then takes interleaved
// float blocks, mixes them down to mono (the channels' mean, as miniaudio, mtmd's decoder, does
// for a mono output), resamples them to kAudioSampleRate as they come and checks the duration
// again as it grows (a header's length can lie or be missing), so memory stays within the
// output's bound whatever the file claims. Errors name the format, the limit and the value.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "media/audio_resample.h"
#include "media/media_decoder.h"

namespace sniper {

class AudioAccumulator {
 public:
  // `declared_frames` < 0: the header does not say.
  static Result<AudioAccumulator> create(const char* format, int channels, int64_t sample_rate, int64_t declared_frames,
                                         const MediaLimits& limits);

  // `interleaved` holds whole frames (a multiple of the channel count); `last` ends the stream.
  [[nodiscard]] Status push(std::span<const float> interleaved, bool last);

  int64_t frames() const { return frames_; }

  // The decoded media once the last block is in. Errors: no samples, a non-finite sample.
  Result<DecodedMedia> finish();

 private:
  AudioAccumulator(AudioResampler resampler) : resampler_(std::move(resampler)) {}
  AudioResampler resampler_;
  const char* format_ = "";
  int channels_ = 1;
  int64_t max_frames_ = 0;
  int64_t declared_frames_ = -1;
  double max_seconds_ = 0;
  int64_t frames_ = 0;
  std::vector<float> mono_;
  DecodedMedia out_;
};

// OGG Vorbis through libvorbisfile (media/vorbis_decoder.cpp) and OGG Opus through libopusfile
// (media/opus_decoder.cpp); decode_ogg sends each stream to its codec's reader.
Result<DecodedMedia> decode_ogg_vorbis(std::span<const uint8_t> bytes, const MediaLimits& limits);
Result<DecodedMedia> decode_ogg_opus(std::span<const uint8_t> bytes, const MediaLimits& limits);

}  // namespace sniper
