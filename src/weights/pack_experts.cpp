// SPDX-License-Identifier: MIT
#include "weights/pack_experts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "weights/expert_cache.h"

namespace sniper {

namespace {

struct SharedState {
  int fd = -1;
  uint64_t done = 0;
  uint64_t total = 0;
  std::string error;  // first read error; the writer's output is then discarded
  ~SharedState() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

Status pack_experts(const std::string& in_path, const std::string& out_path,
                    const std::function<void(uint64_t, uint64_t)>& progress) {
  auto in = gguf_open(in_path);
  if (!in.ok()) return in.error();
  const GgufFile& f = *in;
  if (auto split_count = f.get_int_or("split.count", 1); split_count.ok() && *split_count > 1) {
    return make_error(
        "%s is one part of a split model: pack reads a single file (join the parts first, e.g. "
        "llama-gguf-split --merge)",
        in_path.c_str());
  }
  auto arch = f.get_string("general.architecture");
  if (!arch.ok()) return arch.error();
  auto n_experts = f.get_int(*arch + ".expert_count");
  if (!n_experts.ok() || *n_experts <= 0) return make_error("%s is not a mixture-of-experts model", in_path.c_str());
  auto n_layers = f.get_int(*arch + ".block_count");
  if (!n_layers.ok()) return n_layers.error();
  std::unordered_set<std::string> expert_tensors;  // rewritten below, not copied
  auto located = locate_experts(f, *n_layers, *n_experts, &expert_tensors);
  if (!located.ok()) return make_error("%s: %s", in_path.c_str(), located.error().message.c_str());

  auto state = std::make_shared<SharedState>();
  state->fd = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (state->fd < 0) return make_error("cannot open '%s': %s", in_path.c_str(), std::strerror(errno));
  state->total = f.file_size;
  auto copy_range = [state, progress](uint64_t offset, uint8_t* dst, size_t n) {
    size_t got_total = 0;
    while (got_total < n && state->error.empty()) {
      const ssize_t got = pread(state->fd, dst + got_total, n - got_total, static_cast<off_t>(offset + got_total));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        state->error = got == 0 ? "unexpected end of file" : std::strerror(errno);
        std::memset(dst, 0, n);
        return;
      }
      got_total += static_cast<size_t>(got);
    }
    state->done += n;
    if (progress) progress(state->done, state->total);
  };

  GgufWriter w;
  for (const auto& [key, value] : f.metadata()) {
    if (key != "general.alignment") w.set_value(key, value);
  }
  w.set_alignment(4096);
  w.set_bool("sniper.packed_experts", true);
  for (const GgufTensorInfo& t : f.tensors()) {
    if (expert_tensors.count(t.name)) continue;
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    const uint64_t off = t.file_offset;
    w.add_tensor(t.name, t.type, ne, [copy_range, off](uint8_t* dst, size_t n) { copy_range(off, dst, n); });
  }
  static const char* kNames[3] = {"ffn_gate", "ffn_up", "ffn_down"};
  for (int64_t l = 0; l < *n_layers; ++l) {
    for (int64_t e = 0; e < *n_experts; ++e) {
      const ExpertLocation& x = (*located)[static_cast<size_t>(l)][static_cast<size_t>(e)];
      for (int p = 0; p < 3; ++p) {
        const ExpertSlice& s = x.part[p];
        const std::string name = "blk." + std::to_string(l) + "." + kNames[p] + "." + std::to_string(e) + ".weight";
        const uint64_t off = s.file_offset;
        w.add_tensor(name, s.type, {s.ne0, s.ne1},
                     [copy_range, off](uint8_t* dst, size_t n) { copy_range(off, dst, n); });
      }
    }
  }
  Status st = w.write(out_path);
  if (!state->error.empty()) {
    std::remove(out_path.c_str());
    return make_error("reading '%s' failed: %s", in_path.c_str(), state->error.c_str());
  }
  return st;
}

}  // namespace sniper
