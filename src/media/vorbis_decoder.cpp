// SPDX-License-Identifier: MIT
// OGG Vorbis through libvorbisfile (Debian's libvorbis), read from memory through its callbacks.
// The stream's first logical bitstream is decoded (a chained file's later links are refused if
// their channel count or rate differ); the header's channels, rate and total length are checked
// before any sample is decoded, then AudioAccumulator (media/audio_pcm.h) takes the samples.
#include <vorbis/vorbisfile.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "media/audio_pcm.h"

namespace sniper {

namespace {

struct MemoryStream {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
};

size_t ms_read(void* ptr, size_t size, size_t count, void* user) {
  auto* m = static_cast<MemoryStream*>(user);
  if (size == 0) return 0;
  const size_t n = std::min(count, (m->bytes.size() - m->pos) / size);
  std::memcpy(ptr, m->bytes.data() + m->pos, n * size);
  m->pos += n * size;
  return n;
}

int ms_seek(void* user, ogg_int64_t offset, int whence) {
  auto* m = static_cast<MemoryStream*>(user);
  const auto size = static_cast<ogg_int64_t>(m->bytes.size());
  ogg_int64_t base = 0;
  if (whence == SEEK_CUR) base = static_cast<ogg_int64_t>(m->pos);
  else if (whence == SEEK_END) base = size;
  else if (whence != SEEK_SET) return -1;
  if (offset < -base || base + offset > size) return -1;
  m->pos = static_cast<size_t>(base + offset);
  return 0;
}

long ms_tell(void* user) { return static_cast<long>(static_cast<MemoryStream*>(user)->pos); }

const char* ov_error_name(long err) {
  switch (err) {
    case OV_EREAD: return "a read failed";
    case OV_ENOTVORBIS: return "not Vorbis data";
    case OV_EVERSION: return "an unsupported Vorbis version";
    case OV_EBADHEADER: return "a bad Vorbis header";
    case OV_EFAULT: return "an internal decoder fault";
    case OV_EBADLINK: return "a damaged link in the stream";
    case OV_ENOSEEK: return "the stream cannot seek";
    case OV_HOLE: return "a gap in the data (truncated or damaged pages)";
    default: return "a corrupt stream";
  }
}

}  // namespace

Result<DecodedMedia> decode_ogg_vorbis(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  MemoryStream stream{bytes, 0};
  const ov_callbacks callbacks{ms_read, ms_seek, nullptr, ms_tell};
  OggVorbis_File vf;
  const int open = ov_open_callbacks(&stream, &vf, nullptr, 0, callbacks);
  if (open != 0) return make_error("ogg audio (vorbis) is corrupt: %s", ov_error_name(open));
  struct Closer {
    OggVorbis_File* vf;
    ~Closer() { ov_clear(vf); }
  } closer{&vf};
  const vorbis_info* info = ov_info(&vf, -1);
  if (info == nullptr) return make_error("ogg audio (vorbis) is corrupt: no stream header");
  const int channels = info->channels;
  const long rate = info->rate;
  const ogg_int64_t total = ov_pcm_total(&vf, -1);  // OV_EINVAL when the length is unknown
  SNIPER_ASSIGN_OR_RETURN(AudioAccumulator acc,
                          AudioAccumulator::create("ogg", channels, rate, total < 0 ? -1 : total, limits));
  std::vector<float> block;
  for (;;) {
    float** pcm = nullptr;
    int link = 0;
    const long n = ov_read_float(&vf, &pcm, 4096, &link);
    if (n == 0) break;
    if (n < 0) return make_error("ogg audio (vorbis) is corrupt: %s", ov_error_name(n));
    const vorbis_info* now = ov_info(&vf, link);
    if (now == nullptr || now->channels != channels || now->rate != rate) {
      return make_error("ogg audio (vorbis) changes its channels or rate in a chained link (%d x %ld Hz first)",
                        channels, rate);
    }
    block.resize(static_cast<size_t>(n) * static_cast<size_t>(channels));
    for (long i = 0; i < n; ++i) {
      for (int c = 0; c < channels; ++c) block[static_cast<size_t>(i) * channels + c] = pcm[c][i];
    }
    SNIPER_TRY(acc.push(block, false));
  }
  SNIPER_TRY(acc.push({}, true));
  return acc.finish();
}

}  // namespace sniper
