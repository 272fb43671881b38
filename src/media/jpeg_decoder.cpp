// SPDX-License-Identifier: MIT
// JPEG through libjpeg-turbo (its defaults: accurate integer IDCT, fancy upsampling), to 8-bit
// RGB. Grayscale is replicated to RGB; Adobe CMYK / YCCK files are read as CMYK and converted as
// stb_image does (r = c * k / 255 with its rounding: the stored values are inverted). The pixels
// differ from stb_image's (another IDCT and upsampler): docs/media.md gives the measured
// difference. A progressive file may hold at most kMaxScans scans (a known way to make a small
// file decode for minutes), and libjpeg's working memory is capped.
// libjpeg reports errors by longjmp: the function that calls setjmp constructs no C++ object
// after it, and keeps its state in a struct the caller owns.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>  // needs size_t and FILE first
#include <jerror.h>
// clang-format on

#include <csetjmp>
#include <cstring>

#include "media/media_decoder.h"

namespace sniper {

namespace {

constexpr int kMaxScans = 500;  // libjpeg-turbo's own fuzzers use this bound

struct JpegError {
  jpeg_error_mgr mgr;  // first: libjpeg casts the err pointer back to this
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 32];
  bool premature_end;  // libjpeg warned that the data ended early (it fills the rest with gray)
};

struct JpegState {
  std::span<const uint8_t> bytes;
  const MediaLimits* limits = nullptr;
  JDIMENSION width = 0;
  JDIMENSION height = 0;
  bool size_ok = false;
  std::vector<uint8_t>* rgb = nullptr;
  std::vector<uint8_t>* row = nullptr;  // one CMYK row
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_output_message(j_common_ptr) {}

// Warnings are ignored (extraneous bytes before a marker are common in camera files) except the
// premature end of the data, which a truncated file gives.
void jpeg_emit_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF)
    reinterpret_cast<JpegError*>(cinfo->err)->premature_end = true;
}

void jpeg_progress(j_common_ptr cinfo) {
  if (cinfo->is_decompressor == 0) return;
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto* e = reinterpret_cast<JpegError*>(cinfo->err);
    std::snprintf(e->message, sizeof(e->message), "more than %d scans (a progressive-scan bomb)", kMaxScans);
    std::longjmp(e->jump, 1);
  }
}

// stb_image's stbi__blinn_8x8: x * y / 255, rounded.
inline uint8_t blinn_8x8(uint8_t x, uint8_t y) {
  const unsigned t = static_cast<unsigned>(x) * y + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

bool run_libjpeg(JpegState* s, JpegError* err) {
  jpeg_decompress_struct cinfo;
  jpeg_progress_mgr progress;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_error_exit;
  err->mgr.output_message = jpeg_output_message;
  err->mgr.emit_message = jpeg_emit_message;
  err->message[0] = '\0';
  err->premature_end = false;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.mem->max_memory_to_use = 256L << 20;
  progress.progress_monitor = jpeg_progress;
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, s->bytes.data(), static_cast<unsigned long>(s->bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  s->width = cinfo.image_width;
  s->height = cinfo.image_height;
  if (!check_image_size("jpeg", s->width, s->height, *s->limits).ok()) {
    jpeg_destroy_decompress(&cinfo);
    return true;
  }
  s->size_ok = true;
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const size_t w = cinfo.output_width;
  if (cinfo.output_width != s->width || cinfo.output_height != s->height || cinfo.output_components != (cmyk ? 4 : 3)) {
    std::snprintf(err->message, sizeof(err->message), "unexpected output layout");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  s->rgb->resize(w * s->height * 3);
  if (cmyk) s->row->resize(w * 4);
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* dst = s->rgb->data() + static_cast<size_t>(cinfo.output_scanline) * w * 3;
    JSAMPROW rows[1] = {cmyk ? s->row->data() : dst};
    if (jpeg_read_scanlines(&cinfo, rows, 1) != 1) {
      std::snprintf(err->message, sizeof(err->message), "the file ends early (truncated)");
      jpeg_destroy_decompress(&cinfo);
      return false;
    }
    if (cmyk) {
      const uint8_t* src = s->row->data();
      for (size_t x = 0; x < w; ++x) {
        const uint8_t k = src[4 * x + 3];
        dst[3 * x + 0] = blinn_8x8(src[4 * x + 0], k);
        dst[3 * x + 1] = blinn_8x8(src[4 * x + 1], k);
        dst[3 * x + 2] = blinn_8x8(src[4 * x + 2], k);
      }
    }
  }
  // A file cut inside the entropy data decodes with a warning and gray fill; refuse it.
  if (err->premature_end) {
    std::snprintf(err->message, sizeof(err->message), "the file ends early (truncated)");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

bool sniff_jpeg(std::span<const uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff;
}

Result<DecodedMedia> decode_jpeg(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  DecodedMedia out;
  out.kind = MediaKind::kImage;
  out.format = "jpeg";
  std::vector<uint8_t> row;
  JpegError err;
  JpegState s;
  s.bytes = bytes;
  s.limits = &limits;
  s.rgb = &out.image.rgb;
  s.row = &row;
  if (!run_libjpeg(&s, &err)) return make_error("jpeg image is corrupt: %s", err.message);
  if (!s.size_ok) {
    SNIPER_TRY(check_image_size("jpeg", s.width, s.height, limits));
    return make_error("jpeg image size check failed");
  }
  out.image.width = s.width;
  out.image.height = s.height;
  return out;
}

}  // namespace sniper
