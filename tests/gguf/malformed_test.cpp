// SPDX-License-Identifier: MIT
// Malformed GGUF images: truncations, absurd counts and lengths, unknown types, bad offsets
// and alignments, bad shapes, duplicates, deep nesting, and a deterministic random-mutation
// run. Every case must yield an Error (or, for mutations, a result that stays within bounds),
// never a crash, hang or huge allocation (run under ASan/UBSan).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_test_util.h"
#include "gguf/reader.h"
#include "gguf/writer.h"

namespace sniper {
namespace {

using test::Field;
using test::FieldKind;
using test::parse;
using test::poke;

// Parses exactly `len` bytes of img in a buffer of that size (so ASan sees any over-read).
Result<GgufFile> parse_prefix(const std::vector<uint8_t>& img, size_t len) {
  std::vector<uint8_t> copy(img.begin(), img.begin() + static_cast<std::ptrdiff_t>(len));
  return gguf_parse(copy.empty() ? nullptr : copy.data(), copy.size());
}

void expect_error(const Result<GgufFile>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
}

// What must hold for any image the reader accepts.
void check_within_bounds(const GgufFile& f, size_t size) {
  ASSERT_EQ(f.file_size, size);
  ASSERT_TRUE(f.alignment != 0 && (f.alignment & (f.alignment - 1)) == 0);
  ASSERT_EQ(f.data_offset % f.alignment, 0u);
  ASSERT_LE(f.metadata().size(), size / 13);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const GgufTensorInfo& t : f.tensors()) {
    ASSERT_GE(t.n_dims, 1);
    ASSERT_LE(t.n_dims, kGgufMaxDims);
    for (int d = 0; d < kGgufMaxDims; ++d) {
      ASSERT_GE(t.ne[d], 1);
      if (d >= t.n_dims) {
        ASSERT_EQ(t.ne[d], 1);
      }
    }
    const GgmlTypeInfo& info = get_type_info(t.type);
    ASSERT_EQ(t.ne[0] % info.block_size, 0);
    ASSERT_EQ(t.nbytes, t.row_bytes() * static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3]));
    ASSERT_EQ(t.file_offset, f.data_offset + t.offset);
    ASSERT_EQ(t.offset % f.alignment, 0u);
    ASSERT_LE(t.file_offset, size);
    ASSERT_LE(t.nbytes, size - t.file_offset);
    ranges.emplace_back(t.file_offset, t.file_offset + t.nbytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) ASSERT_LE(ranges[i - 1].second, ranges[i].first);
}

class GgufMalformed : public ::testing::Test {
 protected:
  void SetUp() override {
    img_ = test::make_sample_writer(32, true).to_bytes();
    fields_ = test::map_fields(img_);
    auto f = parse(img_);
    ASSERT_TRUE(f.ok()) << f.error().message;
    check_within_bounds(*f, img_.size());
    ASSERT_EQ(f->tensors().size(), 4u);
    data_end_ = 0;
    for (const GgufTensorInfo& t : f->tensors()) data_end_ = std::max<size_t>(data_end_, t.file_offset + t.nbytes);
    data_offset_ = f->data_offset;
  }
  std::vector<uint8_t> img_;
  test::FieldMap fields_;
  size_t data_end_ = 0;
  size_t data_offset_ = 0;
};

TEST_F(GgufMalformed, SampleHasTheFieldsTheTestsNeed) {
  EXPECT_EQ(fields_.of(FieldKind::kNKv).size(), 1u);
  EXPECT_EQ(fields_.of(FieldKind::kNameLen).size(), 4u);
  EXPECT_GE(fields_.of(FieldKind::kArrayCount).size(), 8u);
  EXPECT_GE(fields_.of(FieldKind::kStringLen).size(), 6u);
  EXPECT_EQ(fields_.of(FieldKind::kNe).size(), 2u + 2u + 1u + 4u);
  EXPECT_LE(fields_.table_end, data_offset_);
  EXPECT_LT(data_offset_ - fields_.table_end, 32u);
}

TEST_F(GgufMalformed, EveryTruncationIsAnError) {
  for (size_t len = 0; len <= data_offset_ + 8; ++len) {
    auto r = parse_prefix(img_, len);
    ASSERT_FALSE(r.ok()) << "truncated at " << len;
    ASSERT_FALSE(r.error().message.empty());
  }
  for (size_t len = data_offset_; len < data_end_; len += 7) {
    ASSERT_FALSE(parse_prefix(img_, len).ok()) << "truncated at " << len;
  }
  ASSERT_FALSE(parse_prefix(img_, data_end_ - 1).ok());
  ASSERT_TRUE(parse_prefix(img_, data_end_).ok());  // only trailing padding removed
}

TEST_F(GgufMalformed, TruncationMessagesNameTheField) {
  const Field& off = fields_.find(FieldKind::kTensorOffset, "blk.0.ffn.weight");
  expect_error(parse_prefix(img_, off.offset + 3), "tensor 'blk.0.ffn.weight': unexpected end of file reading offset");
  GgufWriter w;
  w.set_string("long", std::string(1000, 'x'));
  std::vector<uint8_t> img = w.to_bytes();
  expect_error(parse_prefix(img, img.size() - 500), "metadata key 'long': string length is 1000 but only");
}

TEST_F(GgufMalformed, AbsurdCountsAndLengthsAreErrors) {
  const FieldKind kinds[] = {FieldKind::kNTensors,   FieldKind::kNKv,     FieldKind::kKeyLen, FieldKind::kStringLen,
                             FieldKind::kArrayCount, FieldKind::kNameLen, FieldKind::kNe,     FieldKind::kTensorOffset};
  const uint64_t absurd[] = {UINT64_MAX,     uint64_t{1} << 40,       uint64_t{1} << 63,
                             INT64_MAX,      (uint64_t{1} << 32) + 1, uint64_t{1} << 32,
                             UINT64_MAX - 31};
  int n_cases = 0;
  for (FieldKind kind : kinds) {
    for (const Field& f : fields_.of(kind)) {
      for (uint64_t v : absurd) {
        std::vector<uint8_t> img = img_;
        poke(img, f, v);
        auto r = parse(img);
        ASSERT_FALSE(r.ok()) << "field at " << f.offset << " (" << f.owner << ") = " << v;
        ++n_cases;
      }
    }
  }
  EXPECT_GT(n_cases, 200);
}

TEST_F(GgufMalformed, SmallCountChangesNeverBreakBounds) {
  for (const Field& f : fields_.fields) {
    if (f.width != 8) continue;
    uint64_t orig = 0;
    for (size_t i = 0; i < 8; ++i) orig |= uint64_t{img_[f.offset + i]} << (8 * i);
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, orig - 1, orig + 1, orig + 32, orig * 2, uint64_t{img_.size()}}) {
      std::vector<uint8_t> img = img_;
      poke(img, f, v);
      auto r = parse(img);
      if (r.ok()) check_within_bounds(*r, img.size());
    }
  }
}

TEST_F(GgufMalformed, CountMessages) {
  std::vector<uint8_t> img = img_;
  poke(img, fields_.of(FieldKind::kNTensors)[0], 99999999);
  expect_error(parse(img), "n_tensors is 99999999 but the file (" + std::to_string(img.size()) +
                               " bytes) can hold at most " + std::to_string((img.size() - 24) / 32));
  img = img_;
  poke(img, fields_.of(FieldKind::kNKv)[0], UINT64_MAX);
  expect_error(parse(img), "n_kv is 18446744073709551615 but the file");
  img = img_;
  poke(img, fields_.find(FieldKind::kArrayCount, "v.strs"), uint64_t{1} << 40);
  expect_error(parse(img), "metadata key 'v.strs': array count is 1099511627776 but the remaining");
  img = img_;
  poke(img, fields_.find(FieldKind::kStringLen, "general.architecture"), 5000);
  expect_error(parse(img), "metadata key 'general.architecture': string length is 5000 but only");
}

TEST_F(GgufMalformed, UnknownValueTypes) {
  for (uint64_t bad : {13ull, 14ull, 255ull, 0xFFFFFFFFull}) {
    std::vector<uint8_t> img = img_;
    poke(img, fields_.find(FieldKind::kValueType, "v.i32"), bad);
    expect_error(parse(img), "metadata key 'v.i32': value type " + std::to_string(bad) + " is not a GGUF value type");
    img = img_;
    poke(img, fields_.find(FieldKind::kElemType, "v.f32s"), bad);
    expect_error(parse(img), "metadata key 'v.f32s': array element type " + std::to_string(bad));
  }
  // Retyping a value to another valid type never breaks bounds (usually an error).
  for (const Field& f : fields_.of(FieldKind::kValueType)) {
    for (uint64_t t = 0; t < 13; ++t) {
      std::vector<uint8_t> img = img_;
      poke(img, f, t);
      auto r = parse(img);
      if (r.ok()) check_within_bounds(*r, img.size());
    }
  }
  for (const Field& f : fields_.of(FieldKind::kElemType)) {
    for (uint64_t t = 0; t < 13; ++t) {
      std::vector<uint8_t> img = img_;
      poke(img, f, t);
      auto r = parse(img);
      if (r.ok()) check_within_bounds(*r, img.size());
    }
  }
}

TEST_F(GgufMalformed, UnknownTensorTypes) {
  // Numbers ggml assigned (retired ones and ones we cannot read) are named with their number.
  const std::pair<uint64_t, const char*> named[] = {{4, "Q4_2"}, {5, "Q4_3"}, {31, "Q4_0_4_4"}, {39, "MXFP4"}};
  for (const auto& [bad, name] : named) {
    std::vector<uint8_t> img = img_;
    poke(img, fields_.find(FieldKind::kTensorType, "blk.0.b"), bad);
    expect_error(parse(img), "tensor 'blk.0.b': its type " + std::string(name) + " (type " + std::to_string(bad) +
                                 ") is not supported");
  }
  for (uint64_t bad : {43ull, 999ull, 0xFFFFFFFFull}) {
    std::vector<uint8_t> img = img_;
    poke(img, fields_.find(FieldKind::kTensorType, "blk.0.b"), bad);
    expect_error(parse(img), "tensor 'blk.0.b': type " + std::to_string(bad) + " is not a known ggml type");
  }
  // A known type with a block size that ne[0] = 8 does not divide.
  std::vector<uint8_t> img = img_;
  poke(img, fields_.find(FieldKind::kTensorType, "blk.0.a"), static_cast<uint64_t>(GgmlType::kQ4_K));
  expect_error(parse(img), "tensor 'blk.0.a': ne[0] is 8 but type q4_K needs a multiple of its block size 256");
}

TEST_F(GgufMalformed, BadOffsets) {
  const Field& off = fields_.find(FieldKind::kTensorOffset, "tok.weight");
  uint64_t orig = 0;
  for (size_t i = 0; i < 8; ++i) orig |= uint64_t{img_[off.offset + i]} << (8 * i);
  std::vector<uint8_t> img = img_;
  poke(img, off, orig + 1);
  expect_error(parse(img),
               "tensor 'tok.weight': offset " + std::to_string(orig + 1) + " is not a multiple of the alignment 32");
  img = img_;
  uint64_t past = (img.size() - data_offset_ + 31) / 32 * 32;
  poke(img, off, past);
  expect_error(parse(img), "tensor 'tok.weight'");
  expect_error(parse(img), "past the end of the file");
  img = img_;
  poke(img, off, past - 32);  // starts inside the file, ends past it
  expect_error(parse(img), "extend past the end of the file");
  img = img_;
  poke(img, off, 0);  // same place as blk.0.a
  expect_error(parse(img), "overlaps tensor 'blk.0.a'");
}

TEST_F(GgufMalformed, BadAlignmentValues) {
  const Field& value = fields_.find(FieldKind::kScalar, "general.alignment");
  for (uint64_t bad : {0ull, 3ull, 48ull, 0x80000001ull, 0xFFFFFFFFull}) {
    std::vector<uint8_t> img = img_;
    poke(img, value, bad);
    expect_error(parse(img), "general.alignment is " + std::to_string(bad) + " but must be a nonzero power of two");
  }
  // A valid but huge alignment moves the data section past the end of the file.
  std::vector<uint8_t> img = img_;
  poke(img, value, 0x80000000ull);
  auto r = parse(img);
  ASSERT_FALSE(r.ok());
  // Wrong types.
  for (GgufValue v : {GgufValue::make_uint(GgufValueType::kUint64, 32), GgufValue::make_int(GgufValueType::kInt32, 32),
                      GgufValue::make_string("32")}) {
    GgufWriter w = test::make_sample_writer(32, false);
    w.set_value("general.alignment", v);
    expect_error(parse(w.to_bytes()),
                 std::string("general.alignment has type ") + gguf_value_type_name(v.type) + " but must be u32");
  }
  // A smaller valid alignment than the writer used: offsets stay multiples, still valid.
  img = img_;
  poke(img, value, 16);
  r = parse(img);
  ASSERT_TRUE(r.ok()) << r.error().message;
  check_within_bounds(*r, img.size());
}

TEST_F(GgufMalformed, BadDims) {
  for (uint64_t n : {0ull, 5ull, 0xFFFFFFFFull}) {
    std::vector<uint8_t> img = img_;
    poke(img, fields_.find(FieldKind::kNDims, "blk.0.b"), n);
    expect_error(parse(img), "tensor 'blk.0.b': n_dims is " + std::to_string(n) + " but must be in [1, 4]");
  }
  std::vector<uint8_t> img = img_;
  std::vector<Field> ne;
  for (const Field& f : fields_.of(FieldKind::kNe))
    if (f.owner == "blk.0.a") ne.push_back(f);
  ASSERT_EQ(ne.size(), 2u);
  poke(img, ne[1], 0);
  expect_error(parse(img), "tensor 'blk.0.a': ne[1] is 0 but must be in [1, 9223372036854775807]");
  img = img_;
  poke(img, ne[1], uint64_t{1} << 62);
  poke(img, ne[0], 8);
  expect_error(parse(img), "tensor 'blk.0.a'");
  img = img_;
  poke(img, ne[0], uint64_t{1} << 62);
  poke(img, ne[1], uint64_t{1} << 3);
  expect_error(parse(img), "overflows");
}

TEST_F(GgufMalformed, DuplicatesAndBadVersions) {
  std::vector<uint8_t> img = img_;
  const Field& a = fields_.find(FieldKind::kNameBytes, "blk.0.a");
  const Field& b = fields_.find(FieldKind::kNameBytes, "blk.0.b");
  ASSERT_EQ(a.width, b.width);
  std::copy(img.begin() + a.offset, img.begin() + a.offset + a.width, img.begin() + b.offset);
  expect_error(parse(img), "tensor 'blk.0.a': duplicate name");

  img = img_;
  const Field& k1 = fields_.find(FieldKind::kKeyBytes, "dup.key1");
  const Field& k2 = fields_.find(FieldKind::kKeyBytes, "dup.key2");
  std::copy(img.begin() + k1.offset, img.begin() + k1.offset + k1.width, img.begin() + k2.offset);
  expect_error(parse(img), "metadata key 'dup.key1': duplicate key");

  img = img_;
  poke(img, fields_.find(FieldKind::kKeyLen, "dup.key1"), 0);
  auto r = parse(img);
  ASSERT_FALSE(r.ok());

  for (uint64_t v : {0ull, 1ull, 4ull, 0x03000000ull}) {
    img = img_;
    poke(img, fields_.of(FieldKind::kVersion)[0], v);
    expect_error(parse(img), "GGUF version " + std::to_string(v) + " is not supported (supported: 2, 3)");
  }
  img = img_;
  poke(img, fields_.of(FieldKind::kVersion)[0], 2);  // v2 has the same layout as v3
  r = parse(img);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->version, 2u);
  img = img_;
  img[0] = 'X';
  expect_error(parse(img), "bad magic");
}

TEST_F(GgufMalformed, BadValues) {
  std::vector<uint8_t> img = img_;
  poke(img, fields_.find(FieldKind::kScalar, "v.bool"), 2);
  expect_error(parse(img), "metadata key 'v.bool': bool value is 2 but must be 0 or 1");
  img = img_;
  std::vector<Field> items;
  for (const Field& f : fields_.of(FieldKind::kArrayItem))
    if (f.owner == "v.u64s") items.push_back(f);
  ASSERT_EQ(items.size(), 3u);
  poke(img, items[1], UINT64_MAX);
  expect_error(parse(img), "metadata key 'v.u64s': item 1 is 18446744073709551615");
}

GgufValue nest(int depth) {
  GgufValue v = GgufValue::make_int_array(GgufValueType::kUint8, {1});
  for (int d = 1; d < depth; ++d) v = GgufValue::make_nested_array({v});
  return v;
}

TEST(GgufMalformedNesting, DepthIsBounded) {
  GgufWriter ok_writer;
  ok_writer.set_value("deep", nest(8));
  auto r = parse(ok_writer.to_bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r->find("deep"), nest(8));

  GgufWriter bad_writer;
  bad_writer.set_value("deeper", nest(9));
  expect_error(parse(bad_writer.to_bytes()), "metadata key 'deeper'");
  expect_error(parse(bad_writer.to_bytes()), "arrays nest deeper than the maximum of 8 levels");
}

TEST_F(GgufMalformed, RandomMutationsStayWithinBounds) {
  std::mt19937_64 rng(20240611);
  const size_t header_end = data_offset_;
  int n_ok = 0;
  int n_err = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> img = img_;
    int n_mut = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < n_mut; ++m) {
      size_t pos = rng() % 100 < 90 ? rng() % header_end : rng() % img.size();
      switch (rng() % 4) {
        case 0: img[pos] = static_cast<uint8_t>(rng()); break;
        case 1: img[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 2: img[pos] = 0xFF; break;
        default: img[pos] = static_cast<uint8_t>(img[pos] + 1); break;
      }
    }
    if (rng() % 20 == 0) img.resize(rng() % img.size());
    auto r = gguf_parse(img.empty() ? nullptr : img.data(), img.size());
    if (r.ok()) {
      ++n_ok;
      check_within_bounds(*r, img.size());
      if (::testing::Test::HasFatalFailure()) FAIL() << "mutation " << iter;
    } else {
      ++n_err;
      ASSERT_FALSE(r.error().message.empty());
    }
  }
  // Both outcomes must occur, or the mutations are not exercising the parser.
  EXPECT_GT(n_ok, 500);
  EXPECT_GT(n_err, 5000);
}

}  // namespace
}  // namespace sniper
