// SPDX-License-Identifier: MIT
// The audio decoders (media/audio_decoder.cpp through media/media_decoder.h) and the resampler
// (media/audio_resample.h) on audio written by libsndfile's encoders:
//   * 16-bit WAV and FLAC at 16 kHz decode to exactly sample / 32768 (what miniaudio, mtmd's
//     decoder, gives), float WAV to the samples themselves, several channels to their mean;
//   * lossy OGG Vorbis, OGG Opus and MP3 at 44.1 or 48 kHz come out at 16 kHz with the right
//     length and a sine's frequency and level kept; an Opus file and its WAV give the same
//     log-mel spectrogram up to the codec's loss;
//   * the resampler keeps a sine within 1e-3 (band-limited sinc), passes 16 kHz through bit for
//     bit, and a stream pushed in odd blocks equals the whole signal converted at once;
//   * limits (bytes, seconds from the header, channels, sample rate) fail before the samples are
//     decoded, the duration again while reading (AudioAccumulator, for a header that states no
//     length or too little), with errors naming the limit and the value; truncated,
//     corrupt, empty and unknown input fails with an error naming the problem.
// With SNIPER_WRITE_AUDIO_CORPUS=DIR set, the test also writes tiny files there (the fuzz corpus
// of tests/fuzz/corpus/audio_decode_fuzz was made so).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "media/audio_mel.h"
#include "media/audio_pcm.h"
#include "media/audio_resample.h"
#include "media/media_decoder.h"
#include "media/test_audio.h"

namespace sniper {
namespace {

using test::AudioFormat;
using test::sine;
using test::write_audio;

void maybe_write_corpus(const std::string& name, const std::vector<uint8_t>& bytes) {
  const char* dir = std::getenv("SNIPER_WRITE_AUDIO_CORPUS");
  if (dir == nullptr) return;
  std::ofstream(std::string(dir) + "/" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Samples that are exact in 16 bits: k / 32768.
std::vector<float> pcm16_ramp(int64_t n, int channels) {
  std::vector<float> out(static_cast<size_t>(n * channels));
  for (size_t i = 0; i < out.size(); ++i) {
    const int k = static_cast<int>((i * 7919) % 65536) - 32768;
    out[i] = static_cast<float>(k) / 32768.0f;
  }
  return out;
}

// Root-mean-square difference between a and b over [skip, n - skip).
double rms_diff(const std::vector<float>& a, const std::vector<float>& b, size_t skip) {
  const size_t n = std::min(a.size(), b.size());
  double s = 0;
  size_t count = 0;
  for (size_t i = skip; i + skip < n; ++i, ++count) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return count ? std::sqrt(s / count) : 1e9;
}

// The amplitude of the `hz` component of x at 16 kHz (one-bin DFT over whole periods).
double tone_level(const std::vector<float>& x, double hz, size_t skip) {
  double re = 0, im = 0;
  size_t n = 0;
  for (size_t i = skip; i + skip < x.size(); ++i, ++n) {
    const double ph = 2.0 * M_PI * hz * static_cast<double>(i) / kAudioSampleRate;
    re += x[i] * std::cos(ph);
    im += x[i] * std::sin(ph);
  }
  return 2.0 * std::sqrt(re * re + im * im) / static_cast<double>(n);
}

TEST(AudioDecoder, Wav16AndFlacAt16kHzAreExact) {
  const std::vector<float> in = pcm16_ramp(5000, 1);
  for (AudioFormat f : {AudioFormat::kWav16, AudioFormat::kFlac16}) {
    const std::vector<uint8_t> bytes = write_audio(f, 1, 16000, in);
    auto got = decode_media(bytes, MediaLimits{});
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->kind, MediaKind::kAudio);
    EXPECT_EQ(got->format, f == AudioFormat::kWav16 ? "wav" : "flac");
    EXPECT_EQ(got->audio.sample_rate, 16000);
    EXPECT_EQ(got->audio.source_rate, 16000);
    EXPECT_EQ(got->audio.source_channels, 1);
    ASSERT_EQ(got->audio.samples.size(), in.size());
    EXPECT_TRUE(got->audio.samples == in) << got->format;
  }
}

TEST(AudioDecoder, ChannelsMixToTheirMean) {
  const int channels = 3;
  const std::vector<float> in = pcm16_ramp(3000, channels);
  const std::vector<uint8_t> bytes = write_audio(AudioFormat::kWavFloat, channels, 16000, in);
  maybe_write_corpus("wav_float_3ch", write_audio(AudioFormat::kWavFloat, channels, 16000, pcm16_ramp(40, channels)));
  auto got = decode_media(bytes, MediaLimits{});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->audio.source_channels, channels);
  ASSERT_EQ(got->audio.samples.size(), in.size() / channels);
  for (size_t i = 0; i < got->audio.samples.size(); ++i) {
    const float want = (in[i * 3] + in[i * 3 + 1] + in[i * 3 + 2]) * (1.0f / 3.0f);
    ASSERT_EQ(got->audio.samples[i], want) << i;
  }
}

TEST(AudioDecoder, LossyFormatsAt441And48kHzComeOutAt16kHz) {
  struct Case {
    AudioFormat format;
    const char* name;
    int rate;
    int channels;
  };
  const Case cases[] = {{AudioFormat::kOggVorbis, "ogg", 44100, 2},
                        {AudioFormat::kMp3, "mp3", 44100, 2},
                        {AudioFormat::kWav16, "wav", 44100, 1},
                        {AudioFormat::kFlac16, "flac", 22050, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + " " + std::to_string(c.rate));
    const int64_t n = c.rate;  // one second
    const std::vector<float> mono = sine(440.0, 0.5, c.rate, n);
    std::vector<float> in;
    for (float s : mono) in.insert(in.end(), static_cast<size_t>(c.channels), s);
    const std::vector<uint8_t> bytes = write_audio(c.format, c.channels, c.rate, in);
    auto got = decode_media(bytes, MediaLimits{});
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->format, c.name);
    EXPECT_EQ(got->audio.source_rate, c.rate);
    EXPECT_EQ(got->audio.source_channels, c.channels);
    // Codec delay and padding (MP3) add at most a few tens of milliseconds.
    EXPECT_NEAR(static_cast<double>(got->audio.samples.size()), 16000.0, 1600.0);
    EXPECT_NEAR(tone_level(got->audio.samples, 440.0, 1600), 0.5, 0.03);
  }
}

void expect_error(const std::vector<uint8_t>& bytes, const MediaLimits& limits, const std::string& needle);

// OGG Opus goes through libopusfile (libsndfile's OGG reader leaks on corrupt streams:
// tests/fuzz/regressions/audio_decode_fuzz/ogg_opus_head_leaks): 48 kHz, mono or stereo, comes out
// at 16 kHz with the pre-skip removed (the length is the input's) and the tone's level kept.
TEST(AudioDecoder, OggOpusDecodesAt48kHzTo16kHz) {
  maybe_write_corpus("ogg_opus_stereo", write_audio(AudioFormat::kOggOpus, 2, 48000, sine(300.0, 0.3, 48000, 1920)));
  for (int channels : {1, 2}) {
    SCOPED_TRACE(channels);
    const std::vector<float> mono = sine(440.0, 0.5, 48000, 48000);
    std::vector<float> in;
    for (float s : mono) in.insert(in.end(), static_cast<size_t>(channels), s);
    auto got = decode_media(write_audio(AudioFormat::kOggOpus, channels, 48000, in), MediaLimits{});
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->format, "ogg");
    EXPECT_EQ(got->audio.source_rate, 48000);
    EXPECT_EQ(got->audio.source_channels, channels);
    EXPECT_NEAR(static_cast<double>(got->audio.samples.size()), 16000.0, 16.0);  // within 1 ms
    EXPECT_NEAR(tone_level(got->audio.samples, 440.0, 1600), 0.5, 0.03);
  }
}

// The limits hold for Opus as for the other formats (the length from the stream's last granule
// position, before any sample is decoded), and a cut, a corrupt or a foreign OGG stream is an error
// that says so.
TEST(AudioDecoder, OggOpusLimitsAndBadInput) {
  const std::vector<uint8_t> two_s = write_audio(AudioFormat::kOggOpus, 1, 48000, sine(440.0, 0.3, 48000, 96000));
  MediaLimits limits;
  limits.max_audio_seconds = 1;
  const auto t0 = std::chrono::steady_clock::now();
  expect_error(two_s, limits, "ogg audio lasts 2.0 seconds, over the limit of 1 seconds");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  MediaLimits two;
  two.max_audio_channels = 2;
  expect_error(write_audio(AudioFormat::kOggOpus, 3, 48000, std::vector<float>(3 * 4800, 0.1f)), two,
               "ogg audio has 3 channels, outside the limit of [1, 2]");
  MediaLimits small;
  small.max_bytes = 200;
  expect_error(two_s, small, "over the limit of 200 bytes");
  // Cut anywhere after the headers: the last page no longer ends the stream.
  for (size_t keep : {two_s.size() / 2, two_s.size() - 1, two_s.size() - 40}) {
    SCOPED_TRACE(keep);
    expect_error(std::vector<uint8_t>(two_s.begin(), two_s.begin() + static_cast<long>(keep)), MediaLimits{},
                 "ogg audio is truncated");
  }
  // The Opus header's signature over garbage, and a packet of no codec read in OGG.
  std::vector<uint8_t> garbage(two_s.begin(), two_s.begin() + 36);
  garbage.resize(400, 0x5a);
  expect_error(garbage, MediaLimits{}, "ogg audio");
  std::vector<uint8_t> speex = two_s;
  std::memcpy(speex.data() + 28, "Speex   ", 8);
  expect_error(speex, MediaLimits{}, "neither Vorbis nor Opus");
}

// An Opus file and the WAV of the same 48 kHz signal give the same log-mel spectrogram up to the
// codec's loss: both are resampled by the same libsamplerate converter, and where the tones put
// their energy (within e^4 of a frame's loudest bin) the values stay within the bound below.
TEST(AudioDecoder, OggOpusAndItsWavGiveTheSameMel) {
  std::vector<float> x(48000);
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / 48000.0;
    x[i] = static_cast<float>(0.25 * std::sin(2 * M_PI * 440 * t) + 0.125 * std::sin(2 * M_PI * 880 * t));
  }
  auto wav = decode_media(write_audio(AudioFormat::kWavFloat, 1, 48000, x), MediaLimits{});
  auto opus = decode_media(write_audio(AudioFormat::kOggOpus, 1, 48000, x), MediaLimits{});
  ASSERT_TRUE(wav.ok()) << wav.error().message;
  ASSERT_TRUE(opus.ok()) << opus.error().message;
  ASSERT_NEAR(static_cast<double>(opus->audio.samples.size()), static_cast<double>(wav->audio.samples.size()), 16.0);
  auto mel = LogMel::create(gemma4a_log_mel_params(128));
  ASSERT_TRUE(mel.ok()) << mel.error().message;
  auto a = mel->compute(wav->audio.samples, nullptr);
  auto b = mel->compute(opus->audio.samples, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 1u);
  ASSERT_EQ(b->size(), 1u);
  const MelSpectrogram& w = (*a)[0];
  const MelSpectrogram& o = (*b)[0];
  ASSERT_LE(std::abs(w.n_frames - o.n_frames), 1);
  const int n_frames = std::min(w.n_frames, o.n_frames);
  double loud_sum = 0, loud_max = 0;
  int64_t loud = 0;
  // The first and last frames see the codec's start-up and the padding: skipped.
  for (int f = 5; f + 5 < n_frames; ++f) {
    float peak = -1e30f;
    for (int m = 0; m < w.n_mel; ++m) peak = std::max(peak, w.data[static_cast<size_t>(m) * w.n_frames + f]);
    for (int m = 0; m < w.n_mel; ++m) {
      const size_t k = static_cast<size_t>(m) * w.n_frames + f;
      if (w.data[k] < peak - 4.0f) continue;
      const double d = std::fabs(static_cast<double>(w.data[k]) - o.data[static_cast<size_t>(m) * o.n_frames + f]);
      loud_sum += d;
      loud_max = std::max(loud_max, d);
      ++loud;
    }
  }
  ASSERT_GT(loud, 0);
  std::printf("opus vs wav log-mel over %lld loud values: mean |diff| %.4f, max %.4f\n", static_cast<long long>(loud),
              loud_sum / static_cast<double>(loud), loud_max);
  EXPECT_LT(loud_sum / static_cast<double>(loud), 0.03);
  EXPECT_LT(loud_max, 0.3);
}

TEST(AudioResample, SineStaysWithinBandLimitedError) {
  for (int rate : {8000, 22050, 44100, 48000, 96000}) {
    SCOPED_TRACE(rate);
    auto out = resample_audio(sine(1000.0, 0.5, rate, rate), rate, 16000);
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_NEAR(static_cast<double>(out->size()), 16000.0, 1.0);
    EXPECT_LT(rms_diff(*out, sine(1000.0, 0.5, 16000, 16000), 200), 1e-3);
  }
}

TEST(AudioResample, PassesThroughAndStreamsLikeOneShot) {
  const std::vector<float> x = pcm16_ramp(10000, 1);
  auto same = resample_audio(x, 16000, 16000);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(*same == x);

  auto whole = resample_audio(x, 44100, 16000);
  ASSERT_TRUE(whole.ok());
  auto r = AudioResampler::create(44100, 16000);
  ASSERT_TRUE(r.ok());
  std::vector<float> streamed;
  size_t pos = 0;
  for (size_t block : {1u, 7u, 4096u, 333u, 5000u}) {
    block = std::min(block, x.size() - pos);
    ASSERT_TRUE(r->push(std::span<const float>(x.data() + pos, block), false, streamed).ok());
    pos += block;
  }
  ASSERT_TRUE(r->push(std::span<const float>(x.data() + pos, x.size() - pos), true, streamed).ok());
  EXPECT_TRUE(streamed == *whole);

  EXPECT_FALSE(AudioResampler::create(0, 16000).ok());
  auto bad = AudioResampler::create(1000, 300000);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("ratio"), std::string::npos) << bad.error().message;
}

void expect_error(const std::vector<uint8_t>& bytes, const MediaLimits& limits, const std::string& needle) {
  auto got = decode_media(bytes, limits);
  ASSERT_FALSE(got.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(got.error().message.find(needle), std::string::npos) << got.error().message;
}

TEST(AudioDecoder, LimitsFailBeforeDecoding) {
  MediaLimits limits;
  limits.max_audio_seconds = 1.0;
  // Ten seconds of silence compress to a few hundred bytes in FLAC: refused from the header.
  const std::vector<uint8_t> long_flac = write_audio(AudioFormat::kFlac16, 1, 16000, std::vector<float>(160000, 0.0f));
  const auto t0 = std::chrono::steady_clock::now();
  expect_error(long_flac, limits, "lasts 10.0 seconds, over the limit of 1 seconds");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  maybe_write_corpus("flac_silence", write_audio(AudioFormat::kFlac16, 1, 16000, std::vector<float>(300, 0.0f)));

  MediaLimits two;
  two.max_audio_channels = 2;
  expect_error(write_audio(AudioFormat::kWav16, 3, 16000, pcm16_ramp(30, 3)), two,
               "3 channels, outside the limit of [1, 2]");
  expect_error(write_audio(AudioFormat::kWav16, 1, 500, pcm16_ramp(30, 1)), MediaLimits{},
               "sample rate of 500 Hz, outside [1000, 384000] Hz");
  MediaLimits small;
  small.max_bytes = 100;
  expect_error(write_audio(AudioFormat::kWav16, 1, 16000, pcm16_ramp(100, 1)), small, "over the limit of 100 bytes");
}

TEST(AudioDecoder, LengthIsCheckedWhileReading) {
  // libsndfile knows the length of every file its encoders write (LAME writes a Xing header), so
  // an MP3 over the limit is refused from its header...
  MediaLimits limits;
  limits.max_audio_seconds = 0.5;
  const std::vector<uint8_t> mp3 = write_audio(AudioFormat::kMp3, 1, 16000, sine(300.0, 0.3, 16000, 16000));
  maybe_write_corpus("mp3_short", write_audio(AudioFormat::kMp3, 1, 16000, sine(300.0, 0.3, 16000, 1200)));
  maybe_write_corpus("ogg_vorbis_short", write_audio(AudioFormat::kOggVorbis, 1, 16000, sine(300.0, 0.3, 16000, 800)));
  maybe_write_corpus("wav16_short", write_audio(AudioFormat::kWav16, 2, 8000, pcm16_ramp(64, 2)));
  expect_error(mp3, limits, "lasts 1.0 seconds, over the limit of 0.5 seconds");
  // ...and the accumulator every decoder feeds stops a stream whose header states no length, or
  // less than it holds, as soon as the samples pass the limit.
  for (int64_t declared : {int64_t{-1}, int64_t{100}}) {
    auto acc = AudioAccumulator::create("mp3", 2, 8000, declared, limits);
    ASSERT_TRUE(acc.ok()) << acc.error().message;
    const std::vector<float> block(2 * 1000, 0.25f);                             // 1000 frames, 0.125 s
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(acc->push(block, false).ok()) << i;  // 0.5 s: at the limit
    auto st = acc->push(block, false);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find(declared < 0 ? "lasts over 0.5 seconds, the limit (the header declared no length)"
                                                   : "the header declared less"),
              std::string::npos)
        << st.error().message;
  }
  // Blocks must hold whole frames; an accumulator with no samples has nothing to give.
  auto acc = AudioAccumulator::create("wav", 2, 16000, -1, MediaLimits{});
  ASSERT_TRUE(acc.ok());
  EXPECT_FALSE(acc->push(std::vector<float>(3, 0.0f), false).ok());
  ASSERT_TRUE(acc->push({}, true).ok());
  auto empty = acc->finish();
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("holds no samples"), std::string::npos) << empty.error().message;
}

TEST(AudioDecoder, BadInputGetsAClearError) {
  const std::vector<uint8_t> wav = write_audio(AudioFormat::kWav16, 1, 16000, pcm16_ramp(4000, 1));
  // Cut in the samples: fewer samples than the header declares.
  std::vector<uint8_t> cut(wav.begin(), wav.begin() + static_cast<long>(wav.size() / 2));
  expect_error(cut, MediaLimits{}, "wav audio");
  // Cut inside the header.
  expect_error(std::vector<uint8_t>(wav.begin(), wav.begin() + 20), MediaLimits{}, "wav audio is corrupt");
  // A RIFF/WAVE signature over garbage.
  std::vector<uint8_t> garbage(wav.begin(), wav.begin() + 12);
  for (int i = 0; i < 200; ++i) garbage.push_back(static_cast<uint8_t>(i * 37));
  expect_error(garbage, MediaLimits{}, "wav audio is corrupt");
  // FLAC and OGG signatures over garbage.
  std::vector<uint8_t> flac = {'f', 'L', 'a', 'C', 0, 0, 0, 34};
  flac.resize(200, 0x55);
  expect_error(flac, MediaLimits{}, "flac audio");
  std::vector<uint8_t> ogg = {'O', 'g', 'g', 'S'};
  ogg.resize(300, 0x11);
  expect_error(ogg, MediaLimits{}, "ogg audio");
  // A FLAC truncated after its header.
  const std::vector<uint8_t> good_flac = write_audio(AudioFormat::kFlac16, 1, 16000, pcm16_ramp(20000, 1));
  expect_error(std::vector<uint8_t>(good_flac.begin(), good_flac.begin() + static_cast<long>(good_flac.size() / 3)),
               MediaLimits{}, "flac audio");
  // Wrong type and empty.
  const std::string text = "this is a text file, not audio";
  expect_error(std::vector<uint8_t>(text.begin(), text.end()), MediaLimits{},
               "no known format (known: png, jpeg, webp, gif, wav, flac, ogg, mp3)");
  expect_error({}, MediaLimits{}, "empty");
}

TEST(AudioDecoder, LimitsAreValidated) {
  MediaLimits l;
  l.max_audio_seconds = 0;
  EXPECT_FALSE(validate_media_limits(l).ok());
  l.max_audio_seconds = 30;
  l.max_audio_channels = 0;
  auto st = validate_media_limits(l);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("audio channel limit is 0"), std::string::npos);
}

}  // namespace
}  // namespace sniper
