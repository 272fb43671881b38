// SPDX-License-Identifier: MIT
// Tests for the ggml type table and value type names against ggml's published numbers.
#include "gguf/format.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <string>

namespace sniper {
namespace {

struct Expected {
  uint32_t number;
  const char* name;
  int64_t block_size;
  size_t type_size;
};

// ggml.h type numbers and ggml type traits (blck_size, type_size).
constexpr Expected kGgml[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},       {2, "q4_0", 32, 18},      {3, "q4_1", 32, 20},
    {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},
    {10, "q2_K", 256, 84},    {11, "q3_K", 256, 110}, {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292}, {20, "iq4_nl", 32, 18},   {23, "iq4_xs", 256, 136},
    {24, "i8", 1, 1},         {25, "i16", 1, 2},      {26, "i32", 1, 4},        {27, "i64", 1, 8},
    {28, "f64", 1, 8},        {30, "bf16", 1, 2},     {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
    {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50}, {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {29, "iq1_m", 256, 56},   {34, "tq1_0", 256, 54}, {35, "tq2_0", 256, 66},
};

TEST(GgufFormat, TypeTableMatchesGgml) {
  for (const Expected& e : kGgml) {
    const GgmlTypeInfo* info = find_type_info(e.number);
    ASSERT_NE(info, nullptr) << e.name;
    EXPECT_EQ(static_cast<uint32_t>(info->type), e.number);
    EXPECT_STREQ(info->name, e.name);
    EXPECT_EQ(info->block_size, e.block_size) << e.name;
    EXPECT_EQ(info->type_size, e.type_size) << e.name;
    EXPECT_EQ(&get_type_info(info->type), info);
  }
}

TEST(GgufFormat, UpperNamesCoverEveryGgmlNumber) {
  EXPECT_STREQ(ggml_type_upper_name(21), "IQ3_S");
  EXPECT_STREQ(ggml_type_upper_name(4), "Q4_2");
  EXPECT_STREQ(ggml_type_upper_name(39), "MXFP4");
  EXPECT_STREQ(ggml_type_upper_name(42), "Q2_0");
  EXPECT_EQ(ggml_type_upper_name(43), nullptr);
  for (uint32_t t = 0; t < 43; ++t) {
    const GgmlTypeInfo* info = find_type_info(t);
    if (info == nullptr) continue;
    // Our lower-case names are ggml's upper-case ones with "K" kept upper-case.
    std::string lower = ggml_type_upper_name(t);
    for (char& c : lower) c = c == 'K' ? 'K' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(lower, info->name) << t;
  }
}

TEST(GgufFormat, UnknownTypeNumbersAreNotFound) {
  int known = 0;
  for (uint32_t t = 0; t < 64; ++t) {
    bool expected = false;
    for (const Expected& e : kGgml) expected = expected || e.number == t;
    EXPECT_EQ(find_type_info(t) != nullptr, expected) << t;
    known += expected ? 1 : 0;
  }
  EXPECT_EQ(known, 31);
  EXPECT_EQ(find_type_info(0xFFFFFFFFu), nullptr);
}

// The in-memory layouts (quant/iq_repack.h) have sizes and names but are never file types.
TEST(GgufFormat, MemoryLayoutsAreNotFileTypes) {
  for (uint32_t t = 43; t < kGgmlTypeSlots; ++t) EXPECT_EQ(find_type_info(t), nullptr) << t;
  const GgmlTypeInfo* rp = find_memory_type_info(static_cast<uint32_t>(GgmlType::kIQ2_RP));
  ASSERT_NE(rp, nullptr);
  EXPECT_STREQ(rp->name, "iq2_rp");
  EXPECT_EQ(rp->type_size, 106u);
  EXPECT_EQ(&get_type_info(GgmlType::kIQ3_S_RP), find_memory_type_info(66));
  EXPECT_EQ(find_memory_type_info(21), find_type_info(21));
  EXPECT_EQ(find_memory_type_info(kGgmlTypeSlots), nullptr);
  EXPECT_EQ(row_bytes(GgmlType::kIQ3_XXS_RP, 512), 276u);
}

TEST(GgufFormat, RowBytes) {
  EXPECT_EQ(row_bytes(GgmlType::kF32, 7), 28u);
  EXPECT_EQ(row_bytes(GgmlType::kQ4_0, 64), 36u);
  EXPECT_EQ(row_bytes(GgmlType::kQ6_K, 512), 420u);
  EXPECT_EQ(row_bytes(GgmlType::kIQ4_XS, 4096), 16u * 136u);
  EXPECT_EQ(row_bytes(GgmlType::kBF16, 0), 0u);
}

TEST(GgufFormatDeathTest, RowBytesChecksBlockMultiple) { EXPECT_DEATH((void)row_bytes(GgmlType::kQ4_K, 100), "block"); }

TEST(GgufFormat, ValueTypeNames) {
  const char* expected[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                            "bool", "string", "array", "u64", "i64", "f64"};
  for (uint32_t t = 0; t < 13; ++t) {
    EXPECT_STREQ(gguf_value_type_name(static_cast<GgufValueType>(t)), expected[t]);
  }
  EXPECT_EQ(gguf_value_type_name(static_cast<GgufValueType>(13)), nullptr);
  EXPECT_EQ(gguf_value_type_name(static_cast<GgufValueType>(0xFFFFFFFFu)), nullptr);
}

}  // namespace
}  // namespace sniper
