// SPDX-License-Identifier: MIT
// libFuzzer entry point for the GGUF parser: any input must parse or fail cleanly, and an
// accepted file's tensors must lie inside it. Build with Clang (see CMakeLists.txt) and run
//   ./gguf_fuzz -max_len=65536 corpus/gguf_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "gguf/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sniper::Result<sniper::GgufFile> file = sniper::gguf_parse(data, size);
  if (!file.ok()) return 0;
  for (const sniper::GgufTensorInfo& t : file->tensors()) {
    if (t.file_offset > size || t.nbytes > size - t.file_offset) std::abort();
    if (t.file_offset % file->alignment != 0) std::abort();
  }
  return 0;
}
