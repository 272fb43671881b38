// SPDX-License-Identifier: MIT
// libFuzzer entry point for what context sync reads from outside: a context file (the input is
// the file without its 8-byte FNV-1a trailer, which the harness appends so that the fuzzer
// reaches the layout, compression and decompression checks behind the checksum), and the S3
// replies (ListObjectsV2 and error XML) on the same bytes. Any input must parse or be refused
// with an Error; a parsed state must be self-consistent, hold only finite values (f16 caches and
// recurrent states are checked here) and re-serialize to the same bytes when uncompressed. Build with Clang (see
// CMakeLists.txt); run
//   ./context_file_fuzz -max_len=65536 corpus/context_file_fuzz
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/session_state.h"
#include "remote/s3_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sniper;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  const uint64_t h = fnv1a64(bytes.data(), bytes.size());
  bytes.append(reinterpret_cast<const char*>(&h), sizeof(h));
  auto state = parse_session_state(bytes);
  if (!state.ok()) {
    if (state.error().message.empty()) std::abort();
  } else {
    uint64_t sum = 0;
    for (uint64_t b : state->layer_bytes) sum += b;
    if (sum != state->kv.size() || state->layers.size() != static_cast<size_t>(state->n_layers)) std::abort();
    // An accepted state holds only finite values (issue 40 finding 6): checked here without the
    // parser's code for f16 caches (every 2 bytes of a KV section is one value) and recurrent
    // states (f32).
    size_t at = 0;
    for (size_t l = 0; l < state->layers.size(); ++l) {
      const uint8_t* p = state->kv.data() + at;
      const size_t n = state->layer_bytes[l];
      at += n;
      if (state->layers[l].kind == LayerStateKind::kKv && state->kv_type.k == KvType::kF16 &&
          state->kv_type.v == KvType::kF16) {
        for (size_t i = 0; i + 2 <= n; i += 2) {
          uint16_t h;
          std::memcpy(&h, p + i, 2);
          if ((h & 0x7C00u) == 0x7C00u) std::abort();
        }
      }
      if (state->layers[l].kind == LayerStateKind::kRecurrent) {
        for (size_t i = 0; i + 4 <= n; i += 4) {
          float f;
          std::memcpy(&f, p + i, 4);
          if (!std::isfinite(f)) std::abort();
        }
      }
    }
    int64_t compression = 0;
    std::memcpy(&compression, bytes.data() + 40, sizeof(compression));
    uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 8, sizeof(version));
    if (compression == 0) {
      // The fixed header re-serializes as it was read: magic, version, K type, fingerprint,
      // n_layers and (versions 3 and 4) V type and flags; a version 2 file comes back as the current
      // version with the same fields.
      const std::string again = serialize_session_state(*state);
      const bool same = version == kSessionStateVersion || version == kSessionStateMediaVersion
                            ? again.substr(0, 40) == bytes.substr(0, 40)
                            : again.substr(0, 8) == bytes.substr(0, 8) && again.substr(12, 20) == bytes.substr(12, 20);
      if (!same) std::abort();
    }
  }
  std::string token, code, message;
  auto objects = parse_list_objects_v2(std::string_view(reinterpret_cast<const char*>(data), size), &token);
  if (!objects.ok() && objects.error().message.empty()) std::abort();
  parse_s3_error(std::string_view(reinterpret_cast<const char*>(data), size), &code, &message);
  return 0;
}
