// SPDX-License-Identifier: MIT
#include "bench_types.h"

#include <algorithm>
#include <map>

#include "common.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "model/tensor_names.h"

namespace sniper::cli {

std::vector<TypeMatvec> measure_type_matvecs(const Model& model, ThreadPool& pool, int reps, uint64_t max_bytes) {
  // The 2-D matrices (one per expert of a 3-D tensor) each resident weight type has.
  struct Group {
    std::vector<QTensor> matrices;
    uint64_t bytes = 0;
    int64_t n_tensors = 0;
    GgmlType file_type = GgmlType::kF32;
  };
  std::map<std::pair<uint32_t, uint32_t>, Group> groups;  // by (type in memory, type in the file)
  const ModelConfig& c = model.config();
  for (const GgufTensorInfo& info : model.gguf().tensors()) {
    const QTensor* t = model.store().find_tensor(info.name);
    if (t == nullptr || t->data == nullptr || info.ne[1] < 2 || !is_supported_weight_type(t->type)) continue;
    if (info.name == kPerLayerTokenEmbdName || (info.name == kTokenEmbdName && !c.tied_embeddings)) continue;
    Group& g = groups[{static_cast<uint32_t>(t->type), static_cast<uint32_t>(info.type)}];
    g.file_type = info.type;
    ++g.n_tensors;
    for (int64_t e = 0; e < t->ne[2] * t->ne[3]; ++e) {
      if (g.bytes >= max_bytes) break;
      const QTensor m = t->ne[2] * t->ne[3] > 1 ? t->matrix(e) : *t;
      g.matrices.push_back(m);
      g.bytes += m.nbytes();
    }
  }
  std::vector<TypeMatvec> out;
  ActBuffer act;
  for (const auto& entry : groups) {
    const Group& g = entry.second;  // named, not a structured binding: lambdas capture it
    int64_t max_n = 0, max_rows = 0;
    for (const QTensor& m : g.matrices) {
      max_n = std::max(max_n, m.ne[0]);
      max_rows = std::max(max_rows, m.n_rows());
    }
    std::vector<float> x(static_cast<size_t>(max_n)), y(static_cast<size_t>(max_rows));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
    auto pass = [&] {
      for (const QTensor& m : g.matrices) matmul(m, x.data(), y.data(), 1, act, pool, selected_tier());
    };
    pass();
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      const double t0 = now_s();
      pass();
      best = std::min(best, now_s() - t0);
    }
    TypeMatvec tm;
    const auto type = static_cast<GgmlType>(entry.first.first);
    tm.type = get_type_info(type).name;
    if (g.file_type != type) tm.file_type = get_type_info(g.file_type).name;
    tm.bytes = g.bytes;
    tm.n_tensors = g.n_tensors;
    tm.gb_per_s = best > 0 ? static_cast<double>(g.bytes) / best / 1e9 : 0;
    out.push_back(tm);
  }
  return out;
}

}  // namespace sniper::cli
