// SPDX-License-Identifier: MIT
// WAV, FLAC and MP3 through libsndfile (Debian's libsndfile1, which decodes FLAC with libFLAC and
// MP3 with libmpg123); OGG Vorbis through libvorbisfile (media/vorbis_decoder.cpp) and OGG Opus
// through libopusfile (media/opus_decoder.cpp). The bytes are read from memory through libsndfile's virtual I/O.
// The header is checked before any sample is decoded and the samples go through
// AudioAccumulator (media/audio_pcm.h: limits, mono mixdown, resampling to 16 kHz) block by
// block.
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "media/audio_pcm.h"
#include "media/media_decoder.h"

namespace sniper {

namespace {

struct MemoryFile {
  std::span<const uint8_t> bytes;
  sf_count_t pos = 0;
};

sf_count_t vio_length(void* user) { return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes.size()); }

sf_count_t vio_seek(sf_count_t offset, int whence, void* user) {
  auto* f = static_cast<MemoryFile*>(user);
  const auto size = static_cast<sf_count_t>(f->bytes.size());
  sf_count_t base = 0;
  if (whence == SEEK_CUR) base = f->pos;
  if (whence == SEEK_END) base = size;
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return -1;
  // Out-of-range offsets clamp (reads there return nothing); libsndfile sees the position.
  if (offset < -base) return -1;
  f->pos = std::min(base + offset, size);
  return f->pos;
}

sf_count_t vio_read(void* ptr, sf_count_t count, void* user) {
  auto* f = static_cast<MemoryFile*>(user);
  if (count <= 0) return 0;
  const sf_count_t n = std::min(count, static_cast<sf_count_t>(f->bytes.size()) - f->pos);
  if (n <= 0) return 0;
  std::memcpy(ptr, f->bytes.data() + f->pos, static_cast<size_t>(n));
  f->pos += n;
  return n;
}

sf_count_t vio_write(const void*, sf_count_t, void*) { return 0; }

sf_count_t vio_tell(void* user) { return static_cast<MemoryFile*>(user)->pos; }

struct SndfileCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};

uint32_t read_le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// A WAV whose "data" chunk declares more bytes than the file holds was cut short (libsndfile
// reads what is there). 0 and 0xFFFFFFFF are what streaming recorders write when they do not
// know the length: those are taken as "to the end". At most 64 chunks are walked.
Status check_wav_complete(std::span<const uint8_t> bytes) {
  size_t pos = 12;
  for (int i = 0; i < 64 && pos + 8 <= bytes.size(); ++i) {
    const uint32_t size = read_le32(bytes.data() + pos + 4);
    if (std::memcmp(bytes.data() + pos, "data", 4) == 0) {
      const uint64_t have = bytes.size() - (pos + 8);
      if (size != 0 && size != 0xFFFFFFFFu && size > have) {
        return make_error("wav audio is truncated: its data chunk declares %u bytes but the file holds %llu", size,
                          static_cast<unsigned long long>(have));
      }
      return ok_status();
    }
    pos += 8 + static_cast<size_t>(size) + (size & 1);
  }
  return ok_status();  // libsndfile found the data; the walk gave up on an odd layout
}

// The container types libsndfile may report for each sniffed format.
bool major_matches(const char* format, int major) {
  if (std::strcmp(format, "wav") == 0) return major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX;
  if (std::strcmp(format, "flac") == 0) return major == SF_FORMAT_FLAC;
  if (std::strcmp(format, "ogg") == 0) return major == SF_FORMAT_OGG;
  if (std::strcmp(format, "mp3") == 0) return major == SF_FORMAT_MPEG;
  return false;
}

Result<DecodedMedia> decode_sndfile(std::span<const uint8_t> bytes, const MediaLimits& limits, const char* format) {
  MemoryFile file{bytes, 0};
  SF_VIRTUAL_IO vio{vio_length, vio_seek, vio_read, vio_write, vio_tell};
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndfileCloser> sf(sf_open_virtual(&vio, SFM_READ, &info, &file));
  if (sf == nullptr) {
    return make_error("%s audio is corrupt or unsupported: %s", format, sf_strerror(nullptr));
  }
  const int major = info.format & SF_FORMAT_TYPEMASK;
  if (!major_matches(format, major)) {
    return make_error("%s audio: the file's signature says %s but its content reads as another container", format,
                      format);
  }
  // libsndfile reports SF_COUNT_MAX when it cannot tell the length (checked while reading).
  const int64_t declared = info.frames == SF_COUNT_MAX ? -1 : static_cast<int64_t>(info.frames);
  SNIPER_ASSIGN_OR_RETURN(AudioAccumulator acc,
                          AudioAccumulator::create(format, info.channels, info.samplerate, declared, limits));
  if (major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX) SNIPER_TRY(check_wav_complete(bytes));
  constexpr sf_count_t kBlockFrames = 4096;
  std::vector<float> block(static_cast<size_t>(kBlockFrames) * static_cast<size_t>(info.channels));
  for (;;) {
    const sf_count_t n = sf_readf_float(sf.get(), block.data(), kBlockFrames);
    if (n < 0 || n > kBlockFrames) return make_error("%s audio is corrupt: the samples do not decode", format);
    if (sf_error(sf.get()) != SF_ERR_NO_ERROR) {
      return make_error("%s audio is corrupt or truncated: %s", format, sf_strerror(sf.get()));
    }
    const bool last = n < kBlockFrames;
    SNIPER_TRY(acc.push(std::span<const float>(block.data(), static_cast<size_t>(n * info.channels)), last));
    if (last) break;
  }
  // WAV and FLAC headers state the exact length: fewer samples means the file was cut short.
  if ((major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX || major == SF_FORMAT_FLAC) && declared >= 0 &&
      acc.frames() < declared) {
    return make_error("%s audio is truncated: %lld of the %lld samples the header declares are present", format,
                      static_cast<long long>(acc.frames()), static_cast<long long>(declared));
  }
  return acc.finish();
}

// The codec of an OGG stream, from its first packet (the first page's first segment).
const char* ogg_codec(std::span<const uint8_t> bytes) {
  if (bytes.size() < 27) return nullptr;
  const size_t segments = bytes[26];
  const size_t packet = 27 + segments;
  auto starts = [&](const char* magic, size_t len) {
    return bytes.size() >= packet + len && std::memcmp(bytes.data() + packet, magic, len) == 0;
  };
  if (starts("\x01vorbis", 7)) return "vorbis";
  if (starts("OpusHead", 8)) return "opus";
  return nullptr;
}

// An OGG stream whose last page does not carry the end-of-stream flag was cut short: Vorbis and
// Opus headers state no length to compare with. The last page is found from the end: a capture
// pattern whose page (27-byte header, segment table, segments) ends exactly at the end of the
// bytes, within the largest page's reach (27 + 255 + 255 * 255 bytes).
Status check_ogg_complete(std::span<const uint8_t> bytes) {
  constexpr size_t kMaxPage = 27 + 255 + 255 * 255;
  const size_t n = bytes.size();
  if (n < 27) return make_error("ogg audio is truncated: %zu bytes hold no whole page", n);
  const size_t lowest = n > kMaxPage ? n - kMaxPage : 0;
  for (size_t pos = n - 27;; --pos) {
    const uint8_t* p = bytes.data() + pos;
    if (std::memcmp(p, "OggS", 4) == 0 && p[4] == 0 && pos + 27 + p[26] <= n) {
      size_t end = pos + 27 + p[26];
      for (size_t k = 0; k < p[26]; ++k) end += p[27 + k];
      if (end == n) {
        if ((p[5] & 0x04) == 0) {
          return make_error("ogg audio is truncated: its last page does not end the stream (no end-of-stream flag)");
        }
        return ok_status();
      }
    }
    if (pos == lowest) break;
  }
  return make_error("ogg audio is truncated or has trailing bytes: no page ends where the file ends");
}

}  // namespace

bool sniff_wav(std::span<const uint8_t> bytes) {
  return bytes.size() >= 12 && std::memcmp(bytes.data(), "RIFF", 4) == 0 &&
         std::memcmp(bytes.data() + 8, "WAVE", 4) == 0;
}

bool sniff_flac(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "fLaC", 4) == 0;
}

bool sniff_ogg(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "OggS", 4) == 0;
}

// An ID3v2 tag, or an MPEG audio frame sync (11 set bits) with a valid layer and bitrate index,
// as mtmd's helper sniffs it (its check is the sync word alone).
bool sniff_mp3(std::span<const uint8_t> bytes) {
  if (bytes.size() >= 3 && std::memcmp(bytes.data(), "ID3", 3) == 0) return true;
  if (bytes.size() < 4 || bytes[0] != 0xFF || (bytes[1] & 0xE0) != 0xE0) return false;
  const int layer = (bytes[1] >> 1) & 3;
  const int bitrate = bytes[2] >> 4;
  const int rate = (bytes[2] >> 2) & 3;
  return layer != 0 && bitrate != 15 && rate != 3;
}

Result<DecodedMedia> decode_wav(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  return decode_sndfile(bytes, limits, "wav");
}
Result<DecodedMedia> decode_flac(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  return decode_sndfile(bytes, limits, "flac");
}
// OGG goes through libvorbisfile (Vorbis) and libopusfile (Opus) only: libsndfile 1.2.0's OGG
// reader leaks the Vorbis header state of a corrupt stream, also one whose first packet is Opus
// (both found by audio_decode_fuzz), so no OGG bytes reach it.
Result<DecodedMedia> decode_ogg(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  const char* codec = ogg_codec(bytes);
  if (codec == nullptr) {
    return make_error("ogg audio: the stream's first packet is neither Vorbis nor Opus (the codecs read in OGG)");
  }
  SNIPER_TRY(check_ogg_complete(bytes));
  if (std::strcmp(codec, "vorbis") == 0) return decode_ogg_vorbis(bytes, limits);
  return decode_ogg_opus(bytes, limits);
}
Result<DecodedMedia> decode_mp3(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  return decode_sndfile(bytes, limits, "mp3");
}

}  // namespace sniper
