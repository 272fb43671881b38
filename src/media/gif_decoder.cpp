// SPDX-License-Identifier: MIT
// GIF through giflib: the first frame only, as stb_image returns it (llama.cpp's mtmd decodes with
// stb_image): a canvas of the logical screen's size, black, with the first image drawn at its
// offset (transparent pixels left black; interlaced rows put in place), as RGB. Records are read
// one at a time up to the first image, so later frames cost nothing.
#include <gif_lib.h>

#include <cstring>
#include <memory>

#include "media/media_decoder.h"

namespace sniper {

namespace {

struct GifSource {
  std::span<const uint8_t> bytes;
  size_t cursor = 0;
};

int gif_read(GifFileType* gif, GifByteType* out, int n) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  const size_t left = src->bytes.size() - src->cursor;
  const size_t take = n < 0 ? 0 : std::min(left, static_cast<size_t>(n));
  std::memcpy(out, src->bytes.data() + src->cursor, take);
  src->cursor += take;
  return static_cast<int>(take);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int err = 0;
    DGifCloseFile(gif, &err);
  }
};

Error gif_error(const GifFileType* gif, const char* what) {
  const char* detail = GifErrorString(gif->Error);
  return make_error("gif image is corrupt: %s (%s)", what, detail != nullptr ? detail : "unknown error");
}

}  // namespace

bool sniff_gif(std::span<const uint8_t> bytes) {
  return bytes.size() >= 6 &&
         (std::memcmp(bytes.data(), "GIF87a", 6) == 0 || std::memcmp(bytes.data(), "GIF89a", 6) == 0);
}

Result<DecodedMedia> decode_gif(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  GifSource src{bytes, 0};
  int err = 0;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&src, gif_read, &err));
  if (gif == nullptr) {
    const char* detail = GifErrorString(err);
    return make_error("gif image is corrupt: unreadable header (%s)", detail != nullptr ? detail : "unknown error");
  }
  SNIPER_TRY(check_image_size("gif", gif->SWidth, gif->SHeight, limits));
  int transparent = -1;  // from the graphics control extension before the first image
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif.get(), &type) == GIF_ERROR) return gif_error(gif.get(), "bad record");
    if (type == TERMINATE_RECORD_TYPE) return make_error("gif image is corrupt: the file holds no image");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif.get(), &code, &ext) == GIF_ERROR) return gif_error(gif.get(), "bad extension");
      if (code == GRAPHICS_EXT_FUNC_CODE && ext != nullptr && ext[0] >= 4) {
        GraphicsControlBlock gcb;
        if (DGifExtensionToGCB(ext[0], ext + 1, &gcb) == GIF_OK) transparent = gcb.TransparentColor;
      }
      while (ext != nullptr) {
        if (DGifGetExtensionNext(gif.get(), &ext) == GIF_ERROR) return gif_error(gif.get(), "bad extension");
      }
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) return gif_error(gif.get(), "bad image descriptor");
    const GifImageDesc& d = gif->Image;
    const int64_t sw = gif->SWidth, sh = gif->SHeight;
    if (d.Left < 0 || d.Top < 0 || d.Width < 1 || d.Height < 1 || d.Left + int64_t{d.Width} > sw ||
        d.Top + int64_t{d.Height} > sh) {
      return make_error("gif image is corrupt: the first frame (%dx%d at %d,%d) lies outside the %lldx%lld screen",
                        d.Width, d.Height, d.Left, d.Top, static_cast<long long>(sw), static_cast<long long>(sh));
    }
    const ColorMapObject* map = d.ColorMap != nullptr ? d.ColorMap : gif->SColorMap;
    if (map == nullptr) return make_error("gif image is corrupt: the first frame has no color map");
    DecodedMedia out;
    out.kind = MediaKind::kImage;
    out.format = "gif";
    out.image.width = sw;
    out.image.height = sh;
    out.image.rgb.assign(static_cast<size_t>(sw * sh * 3), 0);
    std::vector<GifPixelType> line(static_cast<size_t>(d.Width));
    // Row order of an interlaced image: every 8th row from 0, every 8th from 4, every 4th from 2,
    // every 2nd from 1.
    static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
    const int passes = d.Interlace ? 4 : 1;
    for (int p = 0; p < passes; ++p) {
      const int start = d.Interlace ? kStart[p] : 0, step = d.Interlace ? kStep[p] : 1;
      for (int y = start; y < d.Height; y += step) {
        if (DGifGetLine(gif.get(), line.data(), d.Width) == GIF_ERROR) return gif_error(gif.get(), "bad pixel data");
        uint8_t* row = out.image.rgb.data() + ((d.Top + int64_t{y}) * sw + d.Left) * 3;
        for (int x = 0; x < d.Width; ++x) {
          const int idx = line[static_cast<size_t>(x)];
          if (idx == transparent || idx >= map->ColorCount) continue;
          const GifColorType& c = map->Colors[idx];
          row[3 * x + 0] = c.Red;
          row[3 * x + 1] = c.Green;
          row[3 * x + 2] = c.Blue;
        }
      }
    }
    return out;
  }
}

}  // namespace sniper
