// SPDX-License-Identifier: MIT
// Round trips GgufWriter -> gguf_parse / gguf_open: every metadata type (nested arrays
// included), every tensor type, several alignments; the typed getters; file writing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "gguf/gguf_test_util.h"
#include "gguf/reader.h"
#include "gguf/writer.h"

namespace sniper {
namespace {

using T = GgufValueType;
using test::parse;

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "sniper_gguf_" + std::to_string(::getpid()) + "_" + name;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Every scalar type at its extremes, every array element type (empty arrays included) and
// nested arrays up to 3 levels with differing element types.
std::vector<std::pair<std::string, GgufValue>> all_values() {
  std::vector<std::pair<std::string, GgufValue>> kv = {
      {"u8.min", GgufValue::make_uint(T::kUint8, 0)},
      {"u8.max", GgufValue::make_uint(T::kUint8, 255)},
      {"i8.min", GgufValue::make_int(T::kInt8, -128)},
      {"i8.max", GgufValue::make_int(T::kInt8, 127)},
      {"u16.max", GgufValue::make_uint(T::kUint16, 65535)},
      {"i16.min", GgufValue::make_int(T::kInt16, -32768)},
      {"u32.max", GgufValue::make_uint(T::kUint32, 4294967295u)},
      {"i32.min", GgufValue::make_int(T::kInt32, INT32_MIN)},
      {"u64.max", GgufValue::make_uint(T::kUint64, UINT64_MAX)},
      {"u64.small", GgufValue::make_uint(T::kUint64, 42)},
      {"i64.min", GgufValue::make_int(T::kInt64, INT64_MIN)},
      {"i64.max", GgufValue::make_int(T::kInt64, INT64_MAX)},
      {"f32.eps", GgufValue::make_float(T::kFloat32, 1e-5)},
      {"f32.inf", GgufValue::make_float(T::kFloat32, -std::numeric_limits<double>::infinity())},
      {"f64.tiny", GgufValue::make_float(T::kFloat64, 4.9e-324)},
      {"bool.t", GgufValue::make_bool(true)},
      {"bool.f", GgufValue::make_bool(false)},
      {"str.empty", GgufValue::make_string("")},
      {"str.utf8", GgufValue::make_string("h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80")},
      {"str.nul", GgufValue::make_string(std::string("a\0b", 3))},
      {"arr.str", GgufValue::make_string_array({"<unk>", "", "\xe2\x96\x81the"})},
      {"arr.str.empty", GgufValue::make_string_array({})},
      {"arr.f32", GgufValue::make_float_array(T::kFloat32, {0.0, -1.5, 3.25e10})},
      {"arr.f64", GgufValue::make_float_array(T::kFloat64, {1e300, -0.0})},
      {"arr.bool", GgufValue::make_int_array(T::kBool, {1, 0, 1})},
      {"arr.empty.u8", GgufValue::make_int_array(T::kUint8, {})},
      {"arr.nested.empty", GgufValue::make_nested_array({})},
      {"arr.nested",
       GgufValue::make_nested_array(
           {GgufValue::make_int_array(T::kInt16, {-1, 2}), GgufValue::make_string_array({"a", "bc"}),
            GgufValue::make_nested_array({GgufValue::make_float_array(T::kFloat64, {0.5}),
                                          GgufValue::make_nested_array({GgufValue::make_int_array(T::kUint64, {7})})}),
            GgufValue::make_int_array(T::kBool, {})})},
  };
  const T int_types[] = {T::kUint8, T::kInt8, T::kUint16, T::kInt16, T::kUint32, T::kInt32, T::kUint64, T::kInt64};
  for (T t : int_types) {
    bool is_signed = t == T::kInt8 || t == T::kInt16 || t == T::kInt32 || t == T::kInt64;
    std::vector<int64_t> items = {0, 1, 100};
    if (is_signed) items.push_back(-100);
    kv.emplace_back(std::string("arr.") + gguf_value_type_name(t), GgufValue::make_int_array(t, items));
  }
  return kv;
}

struct TensorSpec {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;
};

// One tensor per type with 1..4 dims; returns the specs in add order.
std::vector<TensorSpec> all_tensor_specs() {
  std::vector<TensorSpec> specs;
  int i = 0;
  for (uint32_t number = 0; number < 64; ++number) {
    const GgmlTypeInfo* info = find_type_info(number);
    if (info == nullptr) continue;
    std::vector<int64_t> ne = {info->block_size * (1 + i % 3)};
    for (int d = 1; d <= i % 4; ++d) ne.push_back(1 + (i + d) % 3);
    specs.push_back({std::string("t.") + info->name, info->type, ne});
    ++i;
  }
  return specs;
}

uint64_t expected_nbytes(const TensorSpec& s) {
  const GgmlTypeInfo& info = get_type_info(s.type);
  uint64_t n = static_cast<uint64_t>(s.ne[0] / info.block_size) * info.type_size;
  for (size_t d = 1; d < s.ne.size(); ++d) n *= static_cast<uint64_t>(s.ne[d]);
  return n;
}

void check_round_trip(uint32_t alignment, bool set_key) {
  SCOPED_TRACE("alignment " + std::to_string(alignment));
  GgufWriter w;
  if (set_key) w.set_alignment(alignment);
  auto kv = all_values();
  for (const auto& [k, v] : kv) w.set_value(k, v);
  auto specs = all_tensor_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, test::pattern_fill(static_cast<uint32_t>(i)));
  }
  std::vector<uint8_t> img = w.to_bytes();
  auto file = parse(img);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->version, 3u);
  EXPECT_EQ(file->alignment, alignment);
  EXPECT_EQ(file->file_size, img.size());
  EXPECT_EQ(file->data_offset % alignment, 0u);

  const auto& md = file->metadata();
  size_t first = set_key ? 1 : 0;
  ASSERT_EQ(md.size(), kv.size() + first);
  if (set_key) {
    EXPECT_EQ(md[0].first, "general.alignment");
    EXPECT_EQ(md[0].second, GgufValue::make_uint(T::kUint32, alignment));
  }
  for (size_t i = 0; i < kv.size(); ++i) {
    EXPECT_EQ(md[first + i].first, kv[i].first);
    EXPECT_TRUE(md[first + i].second == kv[i].second)
        << kv[i].first << ": " << md[first + i].second.to_display_string();
  }

  ASSERT_EQ(file->tensors().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const GgufTensorInfo& t = file->tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.type, specs[i].type);
    ASSERT_EQ(t.n_dims, static_cast<int>(specs[i].ne.size()));
    for (int d = 0; d < kGgufMaxDims; ++d) {
      EXPECT_EQ(t.ne[d], d < t.n_dims ? specs[i].ne[d] : 1);
    }
    EXPECT_EQ(t.nbytes, expected_nbytes(specs[i]));
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(t.file_offset, file->data_offset + t.offset);
    EXPECT_EQ(t.row_bytes() * static_cast<size_t>(t.ne[1] * t.ne[2] * t.ne[3]), t.nbytes);
    ASSERT_LE(t.file_offset + t.nbytes, img.size());
    bool same = true;
    for (size_t b = 0; b < t.nbytes; ++b)
      same = same && img[t.file_offset + b] == test::pattern_byte(static_cast<uint32_t>(i), b);
    EXPECT_TRUE(same);
    EXPECT_EQ(file->find_tensor(t.name), &t);
  }
  EXPECT_EQ(file->find_tensor("nope"), nullptr);
}

TEST(GgufRoundTrip, DefaultAlignment32WithoutKey) { check_round_trip(32, false); }
TEST(GgufRoundTrip, Alignment32) { check_round_trip(32, true); }
TEST(GgufRoundTrip, Alignment64) { check_round_trip(64, true); }
TEST(GgufRoundTrip, CustomAlignments) {
  for (uint32_t a : {1u, 2u, 8u, 16u, 128u, 4096u}) check_round_trip(a, true);
}

TEST(GgufRoundTrip, WriteMatchesToBytesAndOpenMatchesParse) {
  GgufWriter w = test::make_sample_writer(64);
  std::string path = temp_path("write.gguf");
  Status s = w.write(path);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_FALSE(file_exists(path + ".tmp"));
  std::vector<uint8_t> img = w.to_bytes();
  EXPECT_EQ(read_file_bytes(path), img);
  auto opened = gguf_open(path);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto parsed = parse(img);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(opened->path, path);
  EXPECT_EQ(opened->data_offset, parsed->data_offset);
  EXPECT_EQ(opened->metadata(), parsed->metadata());
  ASSERT_EQ(opened->tensors().size(), parsed->tensors().size());
  for (size_t i = 0; i < parsed->tensors().size(); ++i) {
    EXPECT_EQ(opened->tensors()[i].file_offset, parsed->tensors()[i].file_offset);
    EXPECT_EQ(opened->tensors()[i].nbytes, parsed->tensors()[i].nbytes);
  }
  ::unlink(path.c_str());
}

TEST(GgufRoundTrip, FillCalledOncePerTensorInOrder) {
  GgufWriter w;
  std::vector<int> calls;
  for (int i = 0; i < 3; ++i) {
    std::string name = "t";
    name += std::to_string(i);
    w.add_tensor(name, GgmlType::kF32, {static_cast<int64_t>(4 + i)}, [&calls, i](uint8_t* dst, size_t n) {
      calls.push_back(i);
      EXPECT_EQ(n, static_cast<size_t>(4 * (4 + i)));
      for (size_t b = 0; b < n; ++b) dst[b] = static_cast<uint8_t>(i);
    });
  }
  std::string path = temp_path("order.gguf");
  ASSERT_TRUE(w.write(path).ok());
  EXPECT_EQ(calls, (std::vector<int>{0, 1, 2}));
  ::unlink(path.c_str());
}

TEST(GgufRoundTrip, WriteFailureNamesThePathAndLeavesNoFile) {
  GgufWriter w = test::make_sample_writer();
  std::string path = temp_path("no/such/dir/x.gguf");
  Status s = w.write(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(path + ".tmp"), std::string::npos) << s.error().message;
  EXPECT_FALSE(file_exists(path));
}

TEST(GgufRoundTrip, SetValueReplacesInPlace) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_string("b", "x");
  w.set_u32("a", 2);
  auto file = parse(w.to_bytes());
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(file->metadata().size(), 2u);
  EXPECT_EQ(file->metadata()[0].first, "a");
  EXPECT_EQ(*file->get_int("a"), 2);
}

TEST(GgufRoundTrip, EmptyFileWithoutTensors) {
  GgufWriter w;
  auto file = parse(w.to_bytes());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_TRUE(file->metadata().empty());
  EXPECT_TRUE(file->tensors().empty());
}

// Metadata bigger than the file reader's 1 MiB chunk: items straddle chunk boundaries and one
// string is read past the chunk buffer.
TEST(GgufRoundTrip, OpenReadsMetadataLargerThanItsChunk) {
  GgufWriter w;
  std::vector<std::string> tokens;
  for (int i = 0; i < 150000; ++i) tokens.push_back("tok" + std::to_string(i * 7919));
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  std::string big(3u << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4097) big[i] = static_cast<char>('a' + i % 26);
  w.set_string("big", big);
  w.set_string("after", "end");
  w.add_tensor("t", GgmlType::kF32, {16}, test::pattern_fill(9));
  std::string path = temp_path("big.gguf");
  ASSERT_TRUE(w.write(path).ok());
  auto file = gguf_open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto got = file->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(**got, tokens);
  EXPECT_EQ(*file->get_string("big"), big);
  EXPECT_EQ(*file->get_string("after"), "end");
  ::unlink(path.c_str());
}

// A header claiming an 8 GiB tensor over a sparse file: opening reads only the header.
TEST(GgufRoundTrip, OpenDoesNotReadTensorData) {
  GgufWriter w;
  w.add_tensor("huge", GgmlType::kF32, {1024, 4}, test::pattern_fill(1));
  std::vector<uint8_t> img = w.to_bytes();
  test::FieldMap fields = test::map_fields(img);
  std::vector<test::Field> ne = fields.of(test::FieldKind::kNe);
  ASSERT_EQ(ne.size(), 2u);
  test::poke(img, ne[1], uint64_t{1} << 21);  // 1024 * 4 bytes * 2^21 = 8 GiB
  auto parsed_header = parse(img);
  ASSERT_FALSE(parsed_header.ok());  // the image itself is far too short
  std::string path = temp_path("sparse.gguf");
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  uint64_t data_offset = (fields.table_end + 31) / 32 * 32;
  ASSERT_EQ(std::fwrite(img.data(), 1, data_offset, f), data_offset);
  std::fclose(f);
  const uint64_t size = data_offset + (uint64_t{8} << 30);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(size)), 0);
  auto file = gguf_open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->file_size, size);
  EXPECT_EQ(file->tensors()[0].nbytes, uint64_t{8} << 30);
  EXPECT_EQ(file->tensors()[0].n_elements(), int64_t{1} << 31);
  ::unlink(path.c_str());
}

TEST(GgufRoundTrip, OpenMissingFileNamesThePath) {
  auto file = gguf_open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("/nonexistent/dir/model.gguf"), std::string::npos);
}

TEST(GgufGetters, GetIntAcceptsEveryIntegerType) {
  GgufWriter w;
  w.set_value("u8", GgufValue::make_uint(T::kUint8, 200));
  w.set_value("i8", GgufValue::make_int(T::kInt8, -5));
  w.set_value("u16", GgufValue::make_uint(T::kUint16, 60000));
  w.set_value("i16", GgufValue::make_int(T::kInt16, -30000));
  w.set_u32("u32", 4000000000u);
  w.set_i32("i32", -2000000000);
  w.set_u64("u64", uint64_t{1} << 62);
  w.set_value("i64", GgufValue::make_int(T::kInt64, INT64_MIN));
  w.set_u64("u64.big", UINT64_MAX);
  w.set_f32("f32", 0.5f);
  w.set_value("f64", GgufValue::make_float(T::kFloat64, 1e-300));
  w.set_bool("flag", true);
  w.set_string("name", "llama");
  w.set_string_array("strs", {"a"});
  w.set_i32_array("ints", {1, 2});
  w.set_f32_array("floats", {1.0f});
  auto f = parse(w.to_bytes());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_int("u8"), 200);
  EXPECT_EQ(*f->get_int("i8"), -5);
  EXPECT_EQ(*f->get_int("u16"), 60000);
  EXPECT_EQ(*f->get_int("i16"), -30000);
  EXPECT_EQ(*f->get_int("u32"), 4000000000ll);
  EXPECT_EQ(*f->get_int("i32"), -2000000000);
  EXPECT_EQ(*f->get_int("u64"), int64_t{1} << 62);
  EXPECT_EQ(*f->get_int("i64"), INT64_MIN);
  auto big = f->get_int("u64.big");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("u64.big"), std::string::npos);
  EXPECT_NE(big.error().message.find("18446744073709551615"), std::string::npos);

  EXPECT_EQ(*f->get_float("f32"), 0.5);
  EXPECT_EQ(*f->get_float("f64"), 1e-300);
  EXPECT_EQ(*f->get_bool("flag"), true);
  EXPECT_EQ(*f->get_string("name"), "llama");
  EXPECT_EQ(**f->get_string_array("strs"), std::vector<std::string>{"a"});
  EXPECT_EQ(**f->get_int_array("ints"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(**f->get_float_array("floats"), std::vector<double>{1.0});

  auto wrong = f->get_int("name");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "metadata key 'name' has type string, expected an integer");
  auto wrong_f = f->get_float("u8");
  ASSERT_FALSE(wrong_f.ok());
  EXPECT_NE(wrong_f.error().message.find("'u8' has type u8"), std::string::npos);
  EXPECT_FALSE(f->get_bool("u8").ok());
  EXPECT_FALSE(f->get_string("strs").ok());
  auto wrong_arr = f->get_string_array("ints");
  ASSERT_FALSE(wrong_arr.ok());
  EXPECT_NE(wrong_arr.error().message.find("array of i32"), std::string::npos);
  EXPECT_FALSE(f->get_int_array("floats").ok());
  EXPECT_FALSE(f->get_float_array("name").ok());
  auto missing = f->get_int("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "metadata key 'nope' is missing");

  EXPECT_EQ(*f->get_int_or("nope", 7), 7);
  EXPECT_EQ(*f->get_float_or("nope", 1.5), 1.5);
  EXPECT_EQ(*f->get_bool_or("nope", true), true);
  EXPECT_EQ(*f->get_string_or("nope", "dflt"), "dflt");
  EXPECT_EQ(*f->get_int_or("u8", 7), 200);
  EXPECT_FALSE(f->get_int_or("name", 7).ok());
  EXPECT_FALSE(f->get_float_or("name", 1.0).ok());
  EXPECT_FALSE(f->get_bool_or("name", false).ok());
  EXPECT_FALSE(f->get_string_or("u8", "x").ok());
  EXPECT_TRUE(f->has("u8"));
  EXPECT_FALSE(f->has("u9"));
}

TEST(GgufValue, DisplayString) {
  EXPECT_EQ(GgufValue::make_uint(T::kUint32, 7).to_display_string(), "7");
  EXPECT_EQ(GgufValue::make_int(T::kInt64, -3).to_display_string(), "-3");
  EXPECT_EQ(GgufValue::make_bool(false).to_display_string(), "false");
  EXPECT_EQ(GgufValue::make_string("a\"b\n").to_display_string(), "\"a\\\"b\\n\"");
  EXPECT_EQ(GgufValue::make_int_array(T::kInt32, {1, 2}).to_display_string(), "[1, 2]");
  EXPECT_EQ(GgufValue::make_string_array(std::vector<std::string>(512, "x")).to_display_string(), "[512 strings]");
  EXPECT_EQ(GgufValue::make_float_array(T::kFloat32, std::vector<double>(9, 1.0)).to_display_string(),
            "[9 f32 values]");
  EXPECT_EQ(GgufValue::make_nested_array({GgufValue::make_string_array({"a"})}).to_display_string(), "[[\"a\"]]");
  EXPECT_EQ(GgufValue::make_int_array(T::kUint8, {1, 2, 3}).array_size(), 3u);
  EXPECT_EQ(GgufValue::make_uint(T::kUint8, 1).array_size(), 0u);
}

TEST(GgufValue, BuildersCanonicalise) {
  GgufValue u = GgufValue::make_uint(T::kUint64, UINT64_MAX);
  EXPECT_EQ(u.i64, 0);  // does not fit: not mirrored
  EXPECT_EQ(GgufValue::make_uint(T::kUint16, 9).i64, 9);
  EXPECT_EQ(GgufValue::make_float(T::kFloat32, 0.1).f64, static_cast<double>(0.1f));
  EXPECT_TRUE(GgufValue::make_int(T::kInt8, 1).is_integer());
  EXPECT_FALSE(GgufValue::make_bool(true).is_integer());
}

TEST(GgufWriterDeathTest, RejectsProgrammerErrors) {
  GgufWriter w;
  EXPECT_DEATH(w.set_alignment(48), "power of two");
  EXPECT_DEATH(w.add_tensor("q", GgmlType::kQ4_0, {33}, test::pattern_fill(0)), "block");
  EXPECT_DEATH(w.add_tensor("z", GgmlType::kF32, {4, 0}, test::pattern_fill(0)), "dimension");
  EXPECT_DEATH(w.add_tensor("five", GgmlType::kF32, {1, 1, 1, 1, 1}, test::pattern_fill(0)), "dims");
  w.add_tensor("a", GgmlType::kF32, {4}, test::pattern_fill(0));
  EXPECT_DEATH(w.add_tensor("a", GgmlType::kF32, {4}, test::pattern_fill(0)), "duplicate");
  EXPECT_DEATH(w.add_tensor_bytes("b", GgmlType::kF32, {4}, std::vector<uint8_t>(15)), "15");
  EXPECT_DEATH((void)GgufValue::make_uint(T::kUint8, 256), "fit");
}

}  // namespace
}  // namespace sniper
