// SPDX-License-Identifier: MIT
#include "gguf/split.h"

#include <cstdio>
#include <vector>

#include "base/split_offset.h"

namespace sniper {

namespace {

constexpr const char* kSplitNo = "split.no";
constexpr const char* kSplitCount = "split.count";
constexpr const char* kSplitTensors = "split.tensors.count";

}  // namespace

std::string gguf_split_path(const std::string& prefix, int index, int count) {
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), "-%05d-of-%05d.gguf", index, count);
  return prefix + suffix;
}

Result<GgufFile> gguf_open_model(const std::string& path) {
  SNIPER_ASSIGN_OR_RETURN(GgufFile given, gguf_open(path));
  if (!given.has(kSplitCount)) return given;
  auto count = given.get_int(kSplitCount);
  if (!count.ok()) return make_error("%s: %s", path.c_str(), count.error().message.c_str());
  if (*count < 0 || *count >= static_cast<int64_t>(kMaxParts)) {
    return make_error("%s: split.count is %lld but must be in [0, %u]", path.c_str(), static_cast<long long>(*count),
                      kMaxParts - 1);
  }
  if (*count <= 1) return given;
  const int n = static_cast<int>(*count);
  auto no = given.get_int(kSplitNo);
  if (!no.ok())
    return make_error("%s: a split part (split.count %d) needs split.no: %s", path.c_str(), n,
                      no.error().message.c_str());
  if (*no < 0 || *no >= n) {
    return make_error("%s: split.no is %lld but must be in [0, %d) (split.count %d)", path.c_str(),
                      static_cast<long long>(*no), n, n);
  }
  // The other parts' names follow from this one's, as llama.cpp derives them.
  const std::string suffix = gguf_split_path("", static_cast<int>(*no) + 1, n);
  if (path.size() <= suffix.size() || path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return make_error(
        "%s: split part %lld of %d but the name does not end in '%s', so the other parts cannot be "
        "found (keep gguf-split's names)",
        path.c_str(), static_cast<long long>(*no) + 1, n, suffix.c_str());
  }
  const std::string prefix = path.substr(0, path.size() - suffix.size());
  std::vector<GgufFile> parts;
  parts.reserve(static_cast<size_t>(n));
  int64_t total_tensors = -1;
  for (int i = 0; i < n; ++i) {
    const std::string part_path = gguf_split_path(prefix, i + 1, n);
    Result<GgufFile> part = i == *no ? Result<GgufFile>(std::move(given)) : gguf_open(part_path);
    if (!part.ok()) {
      return make_error("split model %s: part %d of %d: %s", path.c_str(), i + 1, n, part.error().message.c_str());
    }
    auto pc = part->get_int(kSplitCount);
    auto pn = part->get_int(kSplitNo);
    auto pt = part->get_int(kSplitTensors);
    if (!pc.ok() || !pn.ok() || !pt.ok()) {
      return make_error("%s: part %d of %d lacks the split.* keys (split.no, split.count, split.tensors.count)",
                        part_path.c_str(), i + 1, n);
    }
    if (*pc != n || *pn != i) {
      return make_error(
          "%s: has split.no %lld and split.count %lld but its name says part %d of %d (parts of "
          "another split set mixed in?)",
          part_path.c_str(), static_cast<long long>(*pn), static_cast<long long>(*pc), i + 1, n);
    }
    if (total_tensors >= 0 && *pt != total_tensors) {
      return make_error("%s: split.tensors.count is %lld but part 1 says %lld", part_path.c_str(),
                        static_cast<long long>(*pt), static_cast<long long>(total_tensors));
    }
    total_tensors = *pt;
    if (part->file_size >= kMaxPartBytes) {
      return make_error("%s: %llu bytes is more than a split part may hold here (2^48)", part_path.c_str(),
                        static_cast<unsigned long long>(part->file_size));
    }
    parts.push_back(std::move(part).value());
  }
  GgufFile model = std::move(parts[0]);
  model.parts.clear();
  model.parts.push_back({model.path, model.file_size, model.data_offset});
  for (int i = 1; i < n; ++i) {
    const GgufFile& p = parts[static_cast<size_t>(i)];
    model.parts.push_back({p.path, p.file_size, p.data_offset});
    for (GgufTensorInfo t : p.tensors()) {
      if (model.find_tensor(t.name) != nullptr) {
        return make_error("%s: tensor '%s' is also in an earlier part", p.path.c_str(), t.name.c_str());
      }
      t.file_offset = make_part_offset(static_cast<uint32_t>(i), t.file_offset);
      model.add_tensor(std::move(t));
    }
  }
  if (static_cast<int64_t>(model.tensors().size()) != total_tensors) {
    return make_error("split model %s: the %d parts hold %zu tensors but split.tensors.count is %lld", path.c_str(), n,
                      model.tensors().size(), static_cast<long long>(total_tensors));
  }
  return model;
}

}  // namespace sniper
