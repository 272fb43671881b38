// SPDX-License-Identifier: MIT
// Named shapes for `sniper synth --preset`: the hyperparameters of real models (so a synthetic
// file has the real tensor table, quant mix and size, for out-of-core benchmarks) plus small
// shapes for tests and the README demo. Sizes are those of our Q4_K_M files (computed by
// synth_model_bytes and checked by tests against the real files where one exists).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "synth/synth_model.h"

namespace sniper {

struct SynthPreset {
  std::string name;
  std::string description;  // one line for --help: the model and its file size
  SynthSpec spec;
  uint64_t real_file_bytes;  // size of the real llama.cpp Q4_K_M file of this model; 0 if none
};

// Every preset, in display order. Thread-safe (immutable after first use).
const std::vector<SynthPreset>& synth_presets();

// Returns the preset called `name`, or nullptr.
const SynthPreset* find_synth_preset(std::string_view name);

// "a, b, c": the preset names, for error messages.
std::string synth_preset_names();

}  // namespace sniper
