// SPDX-License-Identifier: MIT
// SessionState: a Session's evaluated tokens and their sequence state (kv/sequence_state.h:
// KV rows per attention layer, recurrent states per delta-net layer), captured to memory and
// (de)serialized as a versioned binary file, so a long prompt is evaluated once and reloaded later.
//
// File layout (little-endian), version 3 (version 4: the same with a media table, written only
// when the session holds media, so text-only files stay readable by older builds):
//   0   char[8]  magic "SNPRKV1\0"
//   8   u32      version (kSessionStateVersion; version 1 files, KV-only, are refused by name;
//                version 2 files, whose u32 at 12 was 0 = f16 or 1 = q8_0 for K and V and whose
//                bytes 32..39 were zero, are read: f16 as f16 without flash attention, q8_0 as
//                q8_0 with flash attention and no rotation, which is what those caches held)
//   12  u32      K cache type (KvType code: 0 f16, 1 q8_0, 2 bf16, 3 q4_0, 4 q4_1, 5 iq4_nl,
//                6 q5_0, 7 q5_1)
//   16  u64      model fingerprint (model_fingerprint())
//   24  i64      n_layers
//   32  u32      V cache type (KvType code)
//   36  u32      flags: bit 0 flash attention (V stored in rows, else transposed), bit 1
//                Hadamard rotation of quantized K / V (kv/kv_cache.h); other bits 0
//   40  i64      compression of the kv sections (ContextCompression: 0 none, 1 q8_0, 2 q4_0;
//                engine/context_compression.h has their layout; loading restores the kv type)
//   48  i64      n_ctx (of the saving session, informational)
//   56  i64      n_tokens
//   64  u64      state bytes (the sum of the per-layer sections below)
//   72  i32      tokens[n_tokens] (kMediaToken, -1, at media cells)
//   ..  version 4 only: u64 n_media (>= 1), then per media chunk in cell order, 64 bytes: i64
//       start, i64 n_tokens, i64 n_pos (rope positions it takes), u32 kind (0 image, 1 audio),
//       u32 0, u8 sha256[32] (of the media file's bytes: engine/media_prompt.h MediaSpan). The
//       chunks' own embeddings are not stored: their cells' KV rows and recurrent state are, so a
//       restored session continues after them and a prompt with the same media reuses them by
//       hash; only a rewind into or before one needs the media again (Session::rewind says so)
//   ..  per layer, 64 bytes: u32 kind (LayerStateKind), u32 0, i64 n_kv_heads, head_dim,
//       window, shared_with, conv_floats, recurrent_floats, u64 section bytes
//   ..  per layer, its section (SequenceState::save_layer): kKv: K rows [m][row], then V: rows
//       the same (flash attention), else the transposed layout restricted to the m saved rows (m = n_tokens,
//       or a ring's min(n_tokens, capacity) slots in slot order); kRecurrent: conv state then
//       recurrent state, f32; others: nothing
//   end u64      FNV-1a 64 of every byte before it
// Only positions [0, n_tokens) are stored, so a state loads into a session of any context size
// that holds n_tokens. A state loads only into a session with the same KV config (K type, V
// type, flash attention, rotation): the bytes are the cache's own, and converting between
// types would change the logits silently, so another config is a clear error naming both. Invariant:
// restore_session_state() runs only after check_compatible() passed, and cannot fail part way (no half-restored
// session).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/context_compression.h"
#include "engine/media_prompt.h"
#include "engine/session.h"
#include "gguf/reader.h"

namespace sniper {

inline constexpr uint32_t kSessionStateVersion = 3;
inline constexpr uint32_t kSessionStateMediaVersion = 4;  // a state with media (layout above)

struct SessionState {
  uint64_t model_fingerprint = 0;
  KvConfig kv_type = KvConfig();  // K and V cache types, flash attention (kv/kv_cache.h)
  int64_t n_layers = 0;
  int64_t n_ctx = 0;                   // context of the session it was captured from (informational)
  std::vector<LayerStateSpec> layers;  // [n_layers] what each layer keeps
  std::vector<uint64_t> layer_bytes;   // [n_layers] bytes of each layer's section of `kv`
  std::vector<int32_t> tokens;         // kMediaToken at media cells
  std::vector<MediaSpan> media;        // the media chunks among the tokens, in order
  std::vector<uint8_t> kv;             // the per-layer sections, in layer order, as in the file layout

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

// FNV-1a 64 of `data`, continuing from `hash` (start with kFnvOffset).
inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
uint64_t fnv1a64(const void* data, size_t n, uint64_t hash = kFnvOffset);

// A hash of the GGUF's header, metadata and tensor table (the bytes before the data section)
// and the file size: the same file gives the same value. Reads the file at file.path. Errors
// name the path. Thread-safe.
[[nodiscard]] Result<uint64_t> model_fingerprint(const GgufFile& file);

// Copies the session's tokens and their sequence state. Thread-compatible with the session.
SessionState capture_session_state(const Session& session, uint64_t model_fingerprint);

// Ok when `state` can be restored into `session` of a model with `model_fingerprint`; the Error
// names what differs (model, KV config, a layer's state shape, or a context too small).
[[nodiscard]] Status check_compatible(const SessionState& state, const Session& session, uint64_t model_fingerprint);

// Writes the state and the history into the session. Precondition: check_compatible() ok.
void restore_session_state(const SessionState& state, Session& session);

// Ok when `state` can be saved with `compression` (every KV layer's head_dim a multiple of 32).
[[nodiscard]] Status check_compressible(const SessionState& state, ContextCompression compression);
// The file bytes of `state` (layout above, checksum included), its KV rows quantized when
// `compression` is not kNone. Precondition: check_compressible() ok.
std::string serialize_session_state(const SessionState& state,
                                    ContextCompression compression = ContextCompression::kNone);
// Parses file bytes (decompressing compressed KV rows into the file's kv type); Errors name the
// problem (magic, version, truncated, sizes, checksum, compression, and a value that is not
// finite: every KV value, quantized blocks' scales and recurrent states are checked, so a state
// that loads cannot poison the session it is restored into).
[[nodiscard]] Result<SessionState> parse_session_state(std::string_view bytes);

// Writes atomically (temp file in the same directory, fsync, rename). Errors name the path, or
// a shape that `compression` does not support.
[[nodiscard]] Status write_session_state_file(const std::string& path, const SessionState& state,
                                              ContextCompression compression = ContextCompression::kNone);
// Reads and parses a file. Errors name the path.
[[nodiscard]] Result<SessionState> read_session_state_file(const std::string& path);

}  // namespace sniper
