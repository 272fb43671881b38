// SPDX-License-Identifier: MIT
// Where a multimodal projector lives under the memory budget it shares with its language model.
// The language model runs every token and the projector once per image, so the projector gives
// way first: it stays resident when the language model still keeps every weight in RAM beside
// it; else its ViT layers stream (two layer buffers) if that lets the language model stay
// resident; when the language model streams either way, the projector stays resident if the
// language model's plan still works, else it streams; when neither fits, the error names both
// minimums. The projector's share (weights or stream buffers, and its encoder scratch for the
// largest image) comes off the budget before the language model plans.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "engine/plan.h"
#include "gguf/reader.h"
#include "media/mmproj.h"
#include "model/config.h"

namespace sniper {

struct MediaPlan {
  bool stream_projector = false;
  uint64_t projector_bytes = 0;  // the budget share it takes
  MmprojMemory memory;
  // Lines for `sniper inspect --plan` (what the projector takes, resident or streamed).
  std::string describe() const;
};

// Decides as above for a language model with `config` in `file` planned with `request` (its
// budget_bytes is the whole budget). Errors: neither placement fits (both numbers named).
Result<MediaPlan> plan_media(const GgufFile& file, const ModelConfig& config, const PlanRequest& request,
                             const MmprojMemory& memory);

}  // namespace sniper
