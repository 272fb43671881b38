// SPDX-License-Identifier: MIT
// Decoding untrusted media bytes (an image a user attached, a data URL a server received) with
// well-kept libraries from the distribution: libpng, libjpeg-turbo, libwebp and giflib (the
// first frame). No hand-written decoders. Every decoder reads the header first and checks the
// limits (bytes, width, height, pixels) before it allocates or decodes anything, so a
// decompression bomb costs a header parse; errors name the format, the limit and the value.
//
// Audio (WAV, FLAC, MP3) goes through libsndfile (which reads MP3 through libmpg123), OGG Vorbis
// through libvorbisfile and OGG Opus through libopusfile; it is mixed down to mono as the channels' mean and resampled
// to 16 kHz with libsamplerate as it is read (media/audio_resample.h), so memory stays bounded by the output.
//
// The decoders form one table (media_decoders()): a format name, the media kind it yields, a
// signature test on the first bytes and a decode function. decode_media() sniffs the bytes
// against the table.
// Thread-safe: decoders keep no state between calls.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper {

enum class MediaKind { kImage, kAudio };
const char* media_kind_name(MediaKind kind);

// Bounds on what one request may hand the decoders. Defaults suit a server that takes bytes
// from anyone; the CLI uses the same.
struct MediaLimits {
  uint64_t max_bytes = uint64_t{64} << 20;  // encoded bytes of one media item
  int64_t max_side = 16384;                 // width or height of an image, pixels
  int64_t max_pixels = 40'000'000;          // width * height of an image (40 MP: 120 MB as RGB)
  int64_t max_media = 16;                   // media items in one prompt / request
  double max_audio_seconds = 600;           // duration of one audio item (10 minutes)
  int64_t max_audio_channels = 16;          // channels of one audio item before the mono mixdown
};

// The sample rate every audio item is resampled to (what mtmd's audio projectors all take), and
// the range of source rates the decoders accept.
inline constexpr int kAudioSampleRate = 16000;
inline constexpr int kAudioMinSourceRate = 1000;
inline constexpr int kAudioMaxSourceRate = 384000;

// Checks the limits themselves (a front end builds them from flags). Errors name the field.
[[nodiscard]] Status validate_media_limits(const MediaLimits& limits);

// An 8-bit RGB image, rows top to bottom, pixels left to right, 3 bytes each (what stb_image
// returns with 3 requested channels, which llama.cpp's mtmd uses).
struct Image {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> rgb;  // [height][width][3]
};

// Mono float PCM at kAudioSampleRate, nominally in [-1, 1] (integer PCM is scaled by 2^-(bits-1),
// as miniaudio, mtmd's decoder, does).
struct Audio {
  int sample_rate = kAudioSampleRate;
  std::vector<float> samples;
  int source_rate = 0;      // the file's sample rate
  int source_channels = 0;  // the file's channel count (mixed down to one)
  double seconds() const { return static_cast<double>(samples.size()) / sample_rate; }
};

struct DecodedMedia {
  MediaKind kind = MediaKind::kImage;
  std::string format;  // "png", "jpeg", "webp", "gif", "wav", "flac", "ogg", "mp3"
  Image image;         // kind == kImage
  Audio audio;         // kind == kAudio
};

// One format the decoders understand.
struct MediaDecoder {
  const char* format;
  MediaKind kind;
  // True when `bytes` start with the format's signature (bytes may be short).
  bool (*sniff)(std::span<const uint8_t> bytes);
  // Decodes `bytes` (already sniffed as this format) within `limits`.
  Result<DecodedMedia> (*decode)(std::span<const uint8_t> bytes, const MediaLimits& limits);
};

// Every decoder, in sniffing order.
std::span<const MediaDecoder> media_decoders();

// The decoder whose signature `bytes` carry, or nullptr.
const MediaDecoder* find_media_decoder(std::span<const uint8_t> bytes);

// Sniffs and decodes one media item. Errors: more than limits.max_bytes, an unknown format (the
// message lists the known ones), or the decoder's error (corrupt, truncated, over a limit).
Result<DecodedMedia> decode_media(std::span<const uint8_t> bytes, const MediaLimits& limits);

// Shared by the decoders: checks an image header's dimensions against the limits before any
// pixel is decoded. `format` names the format in the message.
[[nodiscard]] Status check_image_size(const char* format, int64_t width, int64_t height, const MediaLimits& limits);

// The individual decoders (media/*_decoder.cpp); media_decoders() lists them.
bool sniff_png(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_png(std::span<const uint8_t> bytes, const MediaLimits& limits);
bool sniff_jpeg(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_jpeg(std::span<const uint8_t> bytes, const MediaLimits& limits);
bool sniff_webp(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_webp(std::span<const uint8_t> bytes, const MediaLimits& limits);
bool sniff_gif(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_gif(std::span<const uint8_t> bytes, const MediaLimits& limits);
bool sniff_wav(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_wav(std::span<const uint8_t> bytes, const MediaLimits& limits);
bool sniff_flac(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_flac(std::span<const uint8_t> bytes, const MediaLimits& limits);
bool sniff_ogg(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_ogg(std::span<const uint8_t> bytes, const MediaLimits& limits);
bool sniff_mp3(std::span<const uint8_t> bytes);
Result<DecodedMedia> decode_mp3(std::span<const uint8_t> bytes, const MediaLimits& limits);

}  // namespace sniper
