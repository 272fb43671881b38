// SPDX-License-Identifier: MIT
// The 16 non-linear levels shared by IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl).
#pragma once

#include <cstdint>

namespace sniper {

inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

}  // namespace sniper
