// SPDX-License-Identifier: MIT
// The generated src/quant/iq_grids.h (scripts/gen_iq_grids.py) equals ../shared/models/iq/grids.json
// entry by entry, so the checked-in header cannot drift from the tables llama.cpp decodes with.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "golden/shared_dir.h"
#include "quant/iq_grids.h"

namespace sniper {
namespace {

template <typename T, size_t N>
void expect_table(const nlohmann::json& grids, const char* key, const T (&table)[N]) {
  ASSERT_TRUE(grids.contains(key)) << key;
  const auto& values = grids[key]["values"];
  ASSERT_EQ(values.size(), N) << key;
  ASSERT_EQ(grids[key]["count"].get<size_t>(), N) << key;
  for (size_t i = 0; i < N; ++i)
    ASSERT_EQ(values[i].get<uint64_t>(), static_cast<uint64_t>(table[i])) << key << "[" << i << "]";
}

TEST(IqGrids, GeneratedHeaderMatchesGridsJson) {
  const std::string path = shared_dir() + "/models/iq/grids.json";
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << "cannot open " << path;
  const nlohmann::json grids = nlohmann::json::parse(f);
  expect_table(grids, "ksigns_iq2xs", kKsignsIq2xs);
  expect_table(grids, "ksigns64", kKsigns64);
  expect_table(grids, "iq2xxs_grid", kIq2xxsGrid);
  expect_table(grids, "iq2xs_grid", kIq2xsGrid);
  expect_table(grids, "iq2s_grid", kIq2sGrid);
  expect_table(grids, "iq3xxs_grid", kIq3xxsGrid);
  expect_table(grids, "iq3s_grid", kIq3sGrid);
  expect_table(grids, "iq1s_grid", kIq1sGrid);
}

}  // namespace
}  // namespace sniper
