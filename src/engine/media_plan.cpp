// SPDX-License-Identifier: MIT
#include "engine/media_plan.h"

#include <cstdio>

#include "base/memory_limit.h"

namespace sniper {

std::string MediaPlan::describe() const {
  std::string s;
  auto line = [&](const char* what, uint64_t bytes, const char* note) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "  %-28s %12s %s\n", what, format_bytes(bytes).c_str(), note);
    s += buf;
  };
  s += "projector (mmproj):\n";
  if (stream_projector) {
    line("projector resident weights", memory.weight_bytes - memory.layer_matrix_bytes,
         "(patch, positions, norms, projection)");
    line("projector layer buffers", 2 * memory.layer_buffer_bytes, "(ViT layers streamed, double-buffered)");
  } else {
    line("projector weights", memory.weight_bytes, "(resident)");
  }
  line("projector scratch", memory.scratch_bytes, "(the largest image's activations)");
  line("projector total", projector_bytes, "");
  return s;
}

Result<MediaPlan> plan_media(const GgufFile& file, const ModelConfig& config, const PlanRequest& request,
                             const MmprojMemory& memory) {
  MediaPlan out;
  out.memory = memory;
  const uint64_t resident = memory.resident_total(), streamed = memory.streamed_total();
  const uint64_t budget = request.budget_bytes;
  auto try_plan = [&](uint64_t share) -> Result<MemoryPlan> {
    if (share >= budget) {
      return make_error("the projector alone takes %s of the %s budget", format_bytes(share).c_str(),
                        format_bytes(budget).c_str());
    }
    PlanRequest r = request;
    r.budget_bytes = budget - share;
    return make_plan(file, config, r);
  };
  auto with_resident = try_plan(resident);
  auto with_streamed = try_plan(streamed);
  const bool r_ok = with_resident.ok(), s_ok = with_streamed.ok();
  bool stream;
  if (r_ok && with_resident->all_resident) {
    stream = false;
  } else if (s_ok && with_streamed->all_resident) {
    stream = true;
  } else if (r_ok) {
    stream = false;
  } else if (s_ok) {
    stream = true;
  } else {
    return make_error(
        "the memory budget %s holds neither the language model with its projector resident (%s: %s) nor "
        "with the projector's layers streamed (%s: %s)",
        format_bytes(budget).c_str(), format_bytes(resident).c_str(), with_resident.error().message.c_str(),
        format_bytes(streamed).c_str(), with_streamed.error().message.c_str());
  }
  out.stream_projector = stream;
  out.projector_bytes = stream ? streamed : resident;
  return out;
}

}  // namespace sniper
