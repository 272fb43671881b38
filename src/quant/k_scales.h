// SPDX-License-Identifier: MIT
// The packed 6-bit scale/min layout shared by Q4_K and Q5_K (12 bytes for 8 scales + 8 mins):
//   j < 4 : scale = q[j] & 63,               min = q[j+4] & 63
//   j >= 4: scale = (q[j+4] & 0xF) | ((q[j-4] >> 6) << 4),
//           min   = (q[j+4] >>  4) | ((q[j]   >> 6) << 4)
// i.e. bytes 0..3 hold scales 0..3 (+ the top 2 bits of scales 4..7), bytes 4..7 mins 0..3
// (+ top bits of mins 4..7), bytes 8..11 the low nibbles of scales/mins 4..7.
#pragma once

#include <cstdint>

namespace sniper {

// ggml's get_scale_min_k4: unpacks scale and min number j (0..7).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Packs scale and min number j (each in [0, 63]); call for j = 0..7 in order on zeroed q
// (entries j >= 4 OR into bytes written for j < 4).
inline void set_scale_min_k4(int j, uint8_t scale, uint8_t min, uint8_t* q) {
  if (j < 4) {
    q[j] = scale;
    q[j + 4] = min;
  } else {
    q[j + 4] = static_cast<uint8_t>((scale & 0xF) | ((min & 0xF) << 4));
    q[j - 4] = static_cast<uint8_t>(q[j - 4] | ((scale >> 4) << 6));
    q[j] = static_cast<uint8_t>(q[j] | ((min >> 4) << 6));
  }
}

}  // namespace sniper
