// SPDX-License-Identifier: MIT
// OGG Opus through libopusfile (Debian's opusfile, over libopus and libogg), read from memory.
// Opus always decodes at 48 kHz (the header's input rate is informative only), with the
// encoder's pre-skip removed and the output gain applied. The stream's channels and total length
// are checked before any sample is decoded; a chained file's later links must keep the first
// link's channel count. The samples then go through AudioAccumulator (media/audio_pcm.h: limits,
// mono mixdown, resampling from 48 kHz to 16 kHz like the other formats).
#include <opusfile.h>

#include <vector>

#include "media/audio_pcm.h"

namespace sniper {

namespace {

constexpr int kOpusRate = 48000;

const char* op_error_name(int err) {
  switch (err) {
    case OP_EREAD: return "a read failed";
    case OP_EFAULT: return "an internal decoder fault (out of memory or a corrupt state)";
    case OP_EIMPL: return "a feature the decoder does not implement";
    case OP_EINVAL: return "an invalid stream";
    case OP_ENOTFORMAT: return "no Opus stream in the OGG data";
    case OP_EBADHEADER: return "a bad Opus header";
    case OP_EVERSION: return "an unsupported Opus header version";
    case OP_EBADPACKET: return "a bad audio packet";
    case OP_EBADLINK: return "a damaged link in the stream";
    case OP_ENOSEEK: return "the stream cannot seek";
    case OP_EBADTIMESTAMP: return "an invalid timestamp (granule position)";
    case OP_HOLE: return "a gap in the data (truncated or damaged pages)";
    default: return "a corrupt stream";
  }
}

}  // namespace

Result<DecodedMedia> decode_ogg_opus(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  int open = 0;
  OggOpusFile* of = op_open_memory(bytes.data(), bytes.size(), &open);
  if (of == nullptr) return make_error("ogg audio (opus) is corrupt: %s", op_error_name(open));
  struct Closer {
    OggOpusFile* of;
    ~Closer() { op_free(of); }
  } closer{of};
  const int channels = op_channel_count(of, -1);
  // The total over every link, in 48 kHz samples per channel (negative when it cannot be told).
  const ogg_int64_t total = op_pcm_total(of, -1);
  SNIPER_ASSIGN_OR_RETURN(AudioAccumulator acc,
                          AudioAccumulator::create("ogg", channels, kOpusRate, total < 0 ? -1 : total, limits));
  // 120 ms at 48 kHz is the longest Opus frame: a block of that many frames per read.
  std::vector<float> block(static_cast<size_t>(5760) * static_cast<size_t>(channels));
  for (;;) {
    int link = 0;
    const int n = op_read_float(of, block.data(), static_cast<int>(block.size()), &link);
    if (n == 0) break;
    if (n < 0) {
      if (n == OP_HOLE) return make_error("ogg audio (opus) is truncated or damaged: %s", op_error_name(n));
      return make_error("ogg audio (opus) is corrupt: %s", op_error_name(n));
    }
    if (op_channel_count(of, link) != channels) {
      return make_error("ogg audio (opus) changes its channel count in a chained link (%d first, then %d)", channels,
                        op_channel_count(of, link));
    }
    SNIPER_TRY(
        acc.push(std::span<const float>(block.data(), static_cast<size_t>(n) * static_cast<size_t>(channels)), false));
  }
  SNIPER_TRY(acc.push({}, true));
  return acc.finish();
}

}  // namespace sniper
