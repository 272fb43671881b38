// SPDX-License-Identifier: MIT
// Image preprocessing exactly as llama.cpp's mtmd does it for the dynamic-size projectors
// (mtmd_image_preprocessor_dyn_size: gemma4v and qwen3vl_merger), so that the float input of the
// vision encoder is the same, bit for bit, for the same decoded pixels:
//   1. the target size ("smart resize"): each side rounded to a multiple of align =
//      patch_size * merge, then, if the area is over max_pixels, both sides scaled down by
//      sqrt(area / max_pixels) and floored to the multiple, or if under min_pixels, scaled up by
//      sqrt(min_pixels / area) and ceiled, all in float as mtmd computes it;
//   2. a bilinear resize (mtmd's own: corner-aligned sample positions, float lerps, truncation to
//      8 bits) to the largest size of the source's aspect ratio that fits the target (its sides
//      ceiled), centred on a black canvas of the target size (mtmd's PAD_CEIL);
//   3. x / 255, then (x - mean[c]) / std[c] per channel, as float.
// The result is planar: [3][height][width], the layout of the encoder's input tensor.
// Pure functions; this file is compiled for the baseline ISA, without fused multiply-adds, as
// mtmd's is.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/result.h"
#include "media/media_decoder.h"

namespace sniper {

struct PreprocessSpec {
  int64_t align = 0;       // patch_size * merge: the resized sides are multiples of it
  int64_t min_pixels = 0;  // min_tokens * align^2
  int64_t max_pixels = 0;  // max_tokens * align^2
  std::array<float, 3> mean{0.0f, 0.0f, 0.0f};
  std::array<float, 3> std{1.0f, 1.0f, 1.0f};
};

struct ImageSize {
  int64_t width = 0;
  int64_t height = 0;
};

// Step 1: the size mtmd resizes a width x height image to (clip_image_size from
// calc_size_preserved_ratio). Requires width, height >= 1 and a spec with align >= 1,
// 1 <= min_pixels <= max_pixels (CHECKed: the projector loader validates).
ImageSize smart_resize_size(int64_t width, int64_t height, const PreprocessSpec& spec);

// The most pixels an image may have after step 1 and still be encoded: max_pixels, or more where
// scaling a small image up rounds both sides up. smart_resize_size() exceeds it only when it
// scales down an image of an extreme aspect ratio (beyond max_pixels / align^2 : 1) and holds the
// short side at align while the long one keeps growing (mtmd then gives more tokens than its
// maximum); preprocess_image() refuses those. Memory planning sizes the encoder's scratch for it.
// Same preconditions as smart_resize_size().
int64_t planned_preprocessed_pixels(const PreprocessSpec& spec);

// Step 2 alone: `src` resized into a target-size canvas as mtmd's img_tool::resize with
// RESIZE_ALGO_BILINEAR and PAD_CEIL (pad colour black).
Image resize_bilinear_pad(const Image& src, ImageSize target);

struct PreprocessedImage {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<float> planar;  // [3][height][width]
};

// Steps 1-3. An Error, naming the sizes, when the target size is degenerate or over
// planned_preprocessed_pixels() (an extreme aspect ratio).
Result<PreprocessedImage> preprocess_image(const Image& image, const PreprocessSpec& spec);

}  // namespace sniper
