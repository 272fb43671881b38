// SPDX-License-Identifier: MIT
#include "media/test_audio.h"

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sniper::test {

namespace {

struct Sink {
  std::vector<uint8_t> bytes;
  sf_count_t pos = 0;
};

sf_count_t sink_length(void* u) { return static_cast<sf_count_t>(static_cast<Sink*>(u)->bytes.size()); }
sf_count_t sink_seek(sf_count_t off, int whence, void* u) {
  auto* s = static_cast<Sink*>(u);
  sf_count_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? static_cast<sf_count_t>(s->bytes.size()) : 0;
  s->pos = std::max<sf_count_t>(0, base + off);
  return s->pos;
}
sf_count_t sink_read(void* ptr, sf_count_t n, void* u) {
  auto* s = static_cast<Sink*>(u);
  const sf_count_t avail = std::max<sf_count_t>(0, static_cast<sf_count_t>(s->bytes.size()) - s->pos);
  n = std::min(n, avail);
  std::memcpy(ptr, s->bytes.data() + s->pos, static_cast<size_t>(n));
  s->pos += n;
  return n;
}
sf_count_t sink_write(const void* ptr, sf_count_t n, void* u) {
  auto* s = static_cast<Sink*>(u);
  if (static_cast<size_t>(s->pos + n) > s->bytes.size()) s->bytes.resize(static_cast<size_t>(s->pos + n));
  std::memcpy(s->bytes.data() + s->pos, ptr, static_cast<size_t>(n));
  s->pos += n;
  return n;
}
sf_count_t sink_tell(void* u) { return static_cast<Sink*>(u)->pos; }

int sf_format(AudioFormat f) {
  switch (f) {
    case AudioFormat::kWav16: return SF_FORMAT_WAV | SF_FORMAT_PCM_16;
    case AudioFormat::kWavFloat: return SF_FORMAT_WAV | SF_FORMAT_FLOAT;
    case AudioFormat::kFlac16: return SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
    case AudioFormat::kOggVorbis: return SF_FORMAT_OGG | SF_FORMAT_VORBIS;
    case AudioFormat::kOggOpus: return SF_FORMAT_OGG | SF_FORMAT_OPUS;
    case AudioFormat::kMp3: return SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
  }
  return 0;
}

}  // namespace

std::vector<uint8_t> write_audio(AudioFormat format, int channels, int sample_rate,
                                 const std::vector<float>& interleaved) {
  Sink sink;
  SF_VIRTUAL_IO vio{sink_length, sink_seek, sink_read, sink_write, sink_tell};
  SF_INFO info{};
  info.channels = channels;
  info.samplerate = sample_rate;
  info.format = sf_format(format);
  SNDFILE* f = sf_open_virtual(&vio, SFM_WRITE, &info, &sink);
  if (f == nullptr) throw std::runtime_error(std::string("libsndfile cannot write: ") + sf_strerror(nullptr));
  const sf_count_t frames = static_cast<sf_count_t>(interleaved.size()) / channels;
  sf_count_t written = 0;
  if (format == AudioFormat::kWav16 || format == AudioFormat::kFlac16) {
    // As integers: libsndfile scales floats by 32767 on write but reads by 1/32768.
    std::vector<short> pcm(interleaved.size());
    for (size_t i = 0; i < pcm.size(); ++i) {
      pcm[i] = static_cast<short>(std::clamp(std::lrint(interleaved[i] * 32768.0f), -32768L, 32767L));
    }
    written = sf_writef_short(f, pcm.data(), frames);
  } else {
    written = sf_writef_float(f, interleaved.data(), frames);
  }
  if (written != frames) throw std::runtime_error("libsndfile short write");
  sf_close(f);
  return sink.bytes;
}

std::vector<float> sine(double hz, double amplitude, int sample_rate, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] =
        static_cast<float>(amplitude * std::sin(2.0 * M_PI * hz * static_cast<double>(i) / sample_rate));
  }
  return out;
}

}  // namespace sniper::test
