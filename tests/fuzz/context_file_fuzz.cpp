// SPDX-License-Identifier: MIT
// libFuzzer entry point for what context sync reads from outside: a context file (the input is
// the file without its 8-byte FNV-1a trailer, which the harness appends so that the fuzzer
// reaches the layout, compression and decompression checks behind the checksum), and the S3
// replies (ListObjectsV2 and error XML) on the same bytes. Any input must parse or be refused
// with an Error; a parsed state must be self-consistent and re-serialize to the same bytes
// when uncompressed. Build with Clang (see CMakeLists.txt); run
//   ./context_file_fuzz -max_len=65536 corpus/context_file_fuzz
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
