// SPDX-License-Identifier: MIT
// Media flags shared by the commands that take images (run, logits): the projector file, the
// images, the image token bounds and the decoding limits; and loading the projector beside the
// language model under one memory budget (engine/media_plan.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "engine/media_plan.h"
#include "engine/model.h"
#include "media/mmproj.h"

namespace sniper::cli {

// --mmproj, --no-mmproj, --image and --audio (repeatable), --image-min-tokens, --image-max-tokens,
// --media-max-bytes, --media-max-pixels, --media-max-seconds.
std::vector<FlagSpec> media_flags();

// The projector options the flags ask for (limits validated, names in errors).
Result<MmprojOptions> mmproj_options_from_args(const Args& args);

// How many tokens the projector's images run in one language model forward: the largest image
// (--image-max-tokens or the projector's) when they attend both ways (gemma4v), else 0.
Result<int64_t> media_chunk_tokens_of(const std::string& mmproj_path, const MmprojOptions& options);

// Plans the projector of --mmproj beside the language model at model_path under lo->mem_bytes:
// takes its share off the budget, sets lo->media_chunk_tokens for a projector whose images attend
// both ways, and loads it (streamed layers when the plan says so). Errors name the file and the
// problem; --image without --mmproj is an error. `hub_mmproj` (the projector -hf fetched) stands
// for --mmproj when that is not given.
Result<std::unique_ptr<Mmproj>> load_mmproj_for_model(const Args& args, const std::string& model_path,
                                                      ModelLoadOptions* lo, MediaPlan* plan_out = nullptr,
                                                      const std::string& hub_mmproj = "");

// Reads (up to the projector's byte limit) and encodes the image at `path`; *total adds its
// timings. Errors name the file.
Result<MediaChunk> encode_image_file(const std::string& path, Mmproj& mmproj, ThreadPool& pool,
                                     MediaTimings* total = nullptr);

// Reads and encodes every --image and --audio, in command-line order. Errors name the file.
Result<std::vector<MediaChunk>> encode_images(const Args& args, Mmproj& mmproj, ThreadPool& pool,
                                              MediaTimings* total = nullptr);

}  // namespace sniper::cli
