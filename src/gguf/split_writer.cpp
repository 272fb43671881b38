// SPDX-License-Identifier: MIT
#include "gguf/split_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/split_offset.h"
#include "gguf/split.h"
#include "gguf/writer.h"

namespace sniper {

namespace {

struct SourceFiles {
  std::vector<int> fds;
  ~SourceFiles() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

}  // namespace

Result<std::vector<std::string>> gguf_write_split(const GgufFile& model, const std::string& out_prefix,
                                                  const SplitLimits& limits) {
  if (limits.max_part_bytes == 0 && limits.max_part_tensors == 0) {
    return make_error("a split needs a limit: a maximum part size or a maximum tensor count per part");
  }
  if (model.parts.empty()) return make_error("the model was not read from a file: nothing to copy tensors from");
  auto src = std::make_shared<SourceFiles>();
  for (const GgufPart& p : model.parts) {
    const int fd = ::open(p.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error("cannot open '%s': %s", p.path.c_str(), std::strerror(errno));
    src->fds.push_back(fd);
  }
  // Group tensors into parts.
  const auto& tensors = model.tensors();
  std::vector<std::vector<size_t>> groups(1);
  uint64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const bool over_bytes = limits.max_part_bytes > 0 && bytes + tensors[i].nbytes > limits.max_part_bytes;
    const bool over_count = limits.max_part_tensors > 0 && groups.back().size() >= limits.max_part_tensors;
    if (!groups.back().empty() && (over_bytes || over_count)) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(i);
    bytes += tensors[i].nbytes;
  }
  const int n = static_cast<int>(groups.size());
  if (groups.size() >= kMaxParts)
    return make_error("the split would have %zu parts, more than %u", groups.size(), kMaxParts - 1);
  std::vector<std::string> paths;
  auto read_error = std::make_shared<std::string>();
  for (int k = 0; k < n; ++k) {
    GgufWriter w;
    if (model.alignment != kGgufDefaultAlignment) w.set_alignment(static_cast<uint32_t>(model.alignment));
    if (k == 0) {
      for (const auto& [key, value] : model.metadata()) {
        if (key.rfind("split.", 0) == 0 || key == "general.alignment") continue;
        w.set_value(key, value);
      }
    }
    w.set_value("split.no", GgufValue::make_uint(GgufValueType::kUint16, static_cast<uint64_t>(k)));
    w.set_value("split.count", GgufValue::make_uint(GgufValueType::kUint16, static_cast<uint64_t>(n)));
    w.set_value("split.tensors.count",
                GgufValue::make_int(GgufValueType::kInt32, static_cast<int64_t>(tensors.size())));
    for (size_t i : groups[static_cast<size_t>(k)]) {
      const GgufTensorInfo& t = tensors[i];
      std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
      const int fd = src->fds[part_of(t.file_offset)];
      const uint64_t at = offset_in_part(t.file_offset);
      const std::string name = t.name;
      w.add_tensor(t.name, t.type, ne, [src, fd, at, name, read_error](uint8_t* dst, size_t nbytes) {
        for (size_t done = 0; done < nbytes;) {
          const ssize_t got = ::pread(fd, dst + done, nbytes - done, static_cast<off_t>(at + done));
          if (got < 0 && errno == EINTR) continue;
          if (got <= 0) {
            if (read_error->empty()) {
              *read_error =
                  "reading tensor '" + name + "': " + (got == 0 ? "unexpected end of file" : std::strerror(errno));
            }
            std::memset(dst + done, 0, nbytes - done);
            return;
          }
          done += static_cast<size_t>(got);
        }
      });
    }
    const std::string path = gguf_split_path(out_prefix, k + 1, n);
    Status st = w.write(path);
    paths.push_back(path);
    if (st.ok() && !read_error->empty()) st = make_error("%s", read_error->c_str());
    if (!st.ok()) {
      for (const std::string& p : paths) std::remove(p.c_str());
      return make_error("writing split part '%s': %s", path.c_str(), st.error().message.c_str());
    }
  }
  return paths;
}

}  // namespace sniper
