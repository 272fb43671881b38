// SPDX-License-Identifier: MIT
// Context compression: the KV rows of a saved context stored quantized (--context-compression
// q8_0|q4_0; none, exact, is the default). One kKv layer's section of a context file
// (engine/session_state.h) is m positions of K then V in the session cache's saved layout
// (kv/kv_cache.h save_layer: K [m][n_kv_heads][head] in the K type, V the same in the V type, or
// [n_kv_heads * head_dim][m] for an f16 V without flash attention). Compressed, it becomes
//   K [m][n_kv_heads][head_dim / 32 blocks], then V the same (V transposed back to rows),
// in q8_0 (34 bytes per 32 values) or q4_0 (18 bytes), quantized with the reference quantizers
// (quant/q8_0.h, quant/q4_0.h, bit-identical to ggml's), blocks never straddling heads.
// Decompression dequantizes to f32 and converts to the loading session's KV type. Recurrent
// states are never compressed. Lossy: measured in session_state_test (NMSE of the next-token
// logits against recomputing). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/result.h"
#include "kv/kv_cache.h"

namespace sniper {

enum class ContextCompression : uint32_t { kNone = 0, kQ8_0 = 1, kQ4_0 = 2 };

// "none" | "q8_0" | "q4_0"; the Error names the value and the choices.
[[nodiscard]] Result<ContextCompression> parse_context_compression(std::string_view text);
const char* context_compression_name(ContextCompression c);

// True when the codec knows the cache's saved layout: K and V each f16 or q8_0 (V in rows, or
// transposed for f16 without flash attention). Rotated (Hadamard) rows are compressed as they
// are: the loading session must have the same KvConfig, rotation included.
bool kv_type_compressible(const KvConfig& config);

// Bytes of one position's K and V (both) in the compressed form; 0 for kNone.
// Precondition: head_dim % 32 == 0.
size_t compressed_kv_position_bytes(int64_t n_kv_heads, int64_t head_dim, ContextCompression c);
// Bytes of one position's K and V (both) in a session cache of `config` (the saved layout).
size_t kv_position_bytes(int64_t n_kv_heads, int64_t head_dim, const KvConfig& config);

// Encodes a section of m positions saved from a `type` cache into `out`
// (m * compressed_kv_position_bytes bytes). Preconditions: c != kNone, head_dim % 32 == 0,
// kv_type_compressible(type).
void compress_kv_section(const uint8_t* in, const KvConfig& type, int64_t m, int64_t n_kv_heads, int64_t head_dim,
                         ContextCompression c, uint8_t* out);
// The inverse, into the saved layout of a `type` cache (m * kv_position_bytes bytes).
void decompress_kv_section(const uint8_t* in, ContextCompression c, int64_t m, int64_t n_kv_heads, int64_t head_dim,
                           const KvConfig& type, uint8_t* out);

}  // namespace sniper
