// SPDX-License-Identifier: MIT
// The GGUF parser (v2, v3), shared by gguf_open (file) and gguf_parse (memory) through
// ByteSource. It reads the header, the metadata and the tensor table, never the tensor data.
//
// Validation, in the order the bytes arrive (every check happens before the value is used):
//   - magic, version in {2, 3};
//   - n_kv, n_tensors, every array count and every string length against the bytes left in the
//     file (each item needs at least its smallest encoding), so a bogus count can cause neither
//     a large allocation nor a long loop; vectors grow as items are actually read;
//   - metadata: value types in 0..12, bools 0 or 1, non-empty and unique keys, arrays nested at
//     most kMaxArrayDepth deep, integer array items within int64; keys are not checked for
//     UTF-8 (they are only compared and printed);
//   - general.alignment: type u32, a nonzero power of two;
//   - tensors: non-empty unique names, n_dims in [1, 4], every ne in [1, INT64_MAX] (an empty
//     tensor, ne == 0, is rejected), element count and byte size without overflow, known type,
//     ne[0] a multiple of the type's block size, offset a multiple of the alignment, data range
//     inside the file, no two tensors' data overlapping.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gguf/byte_source.h"
#include "gguf/reader.h"

namespace sniper {

namespace {

constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kHeaderBytes = 4 + 4 + 8 + 8;
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // key length, value type, smallest value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name length, n_dims, one ne, type, offset
constexpr size_t kMaxReserve = size_t{1} << 16;              // items reserved ahead of reading them
constexpr uint32_t kNumValueTypes = 13;

using ull = unsigned long long;

// Smallest encoding of one value of a (valid) type.
uint64_t min_value_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32: return 4;
    case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 4 + 8;
    default: return 8;  // u64, i64, f64
  }
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

class Parser {
 public:
  explicit Parser(ByteSource& src) : src_(src) {}
  Result<GgufFile> parse();

 private:
  enum class Section { kHeader, kMetadata, kTensors };

  // Prefixes an error with where the parser is ("metadata key 'k'", "tensor 3", ...). The
  // context is only formatted when an error happens.
  Error fail(const Error& e) const;
  Status read_bytes(void* dst, size_t n, const char* field);
  template <typename T>
  Status read_le(T* out, const char* field);
  // A length-prefixed string; `item` (an array index, when >= 0) is named in messages.
  Result<std::string> read_string(const char* field, int64_t item = -1);
  Status read_scalar(GgufValueType type, GgufValue* out);
  Status read_array_body(GgufValue* out, int depth);
  Status read_header(GgufFile* file, uint64_t* n_tensors, uint64_t* n_kv);
  Status read_metadata(GgufFile* file, uint64_t n_kv);
  Status apply_alignment(GgufFile* file);
  Status read_tensor_info(const GgufFile& file, GgufTensorInfo* info);
  Status check_tensor_data(GgufFile* file, std::vector<GgufTensorInfo>* infos);

  ByteSource& src_;
  Section section_ = Section::kHeader;
  uint64_t index_ = 0;                 // entry index within the section
  const std::string* name_ = nullptr;  // key or tensor name once read
};

Error Parser::fail(const Error& e) const {
  std::string where;
  switch (section_) {
    case Section::kHeader: return e;
    case Section::kMetadata:
      where = name_ != nullptr ? "metadata key '" + *name_ + "'" : "metadata entry " + std::to_string(index_);
      break;
    case Section::kTensors:
      where = name_ != nullptr ? "tensor '" + *name_ + "'" : "tensor " + std::to_string(index_);
      break;
  }
  return Error{where + ": " + e.message};
}

Status Parser::read_bytes(void* dst, size_t n, const char* field) {
  if (n > src_.remaining()) {
    return fail(
        make_error("unexpected end of file reading %s: %zu bytes needed at offset %llu but the file "
                   "(%llu bytes) has only %llu left",
                   field, n, static_cast<ull>(src_.position()), static_cast<ull>(src_.size()),
                   static_cast<ull>(src_.remaining())));
  }
  Status s = src_.read(dst, n);
  if (!s.ok()) return fail(s.error());
  return ok_status();
}

template <typename T>
Status Parser::read_le(T* out, const char* field) {
  uint8_t bytes[sizeof(T)];
  SNIPER_TRY(read_bytes(bytes, sizeof(T), field));
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | static_cast<T>(T{bytes[i]} << (8 * i)));
  *out = v;
  return ok_status();
}

Result<std::string> Parser::read_string(const char* field, int64_t item) {
  uint64_t len = 0;
  SNIPER_TRY(read_le(&len, field));
  if (len > src_.remaining()) {
    std::string what = field;
    if (item >= 0) what += " of item " + std::to_string(item);
    return fail(make_error("%s is %llu but only %llu bytes of the file (%llu bytes) remain at offset %llu",
                           what.c_str(), static_cast<ull>(len), static_cast<ull>(src_.remaining()),
                           static_cast<ull>(src_.size()), static_cast<ull>(src_.position())));
  }
  std::string s(static_cast<size_t>(len), '\0');
  SNIPER_TRY(read_bytes(s.data(), s.size(), field));
  return s;
}

Status Parser::read_scalar(GgufValueType type, GgufValue* out) {
  const char* what = "value";
  switch (type) {
    case GgufValueType::kUint8: {
      uint8_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_uint(type, v);
      return ok_status();
    }
    case GgufValueType::kUint16: {
      uint16_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_uint(type, v);
      return ok_status();
    }
    case GgufValueType::kUint32: {
      uint32_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_uint(type, v);
      return ok_status();
    }
    case GgufValueType::kUint64: {
      uint64_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_uint(type, v);
      return ok_status();
    }
    case GgufValueType::kInt8: {
      uint8_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_int(type, static_cast<int8_t>(v));
      return ok_status();
    }
    case GgufValueType::kInt16: {
      uint16_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_int(type, static_cast<int16_t>(v));
      return ok_status();
    }
    case GgufValueType::kInt32: {
      uint32_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_int(type, static_cast<int32_t>(v));
      return ok_status();
    }
    case GgufValueType::kInt64: {
      uint64_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      *out = GgufValue::make_int(type, static_cast<int64_t>(v));
      return ok_status();
    }
    case GgufValueType::kFloat32: {
      uint32_t bits = 0;
      SNIPER_TRY(read_le(&bits, what));
      float f = 0;
      static_assert(sizeof(f) == sizeof(bits));
      std::memcpy(&f, &bits, sizeof(f));
      *out = GgufValue::make_float(type, f);
      return ok_status();
    }
    case GgufValueType::kFloat64: {
      uint64_t bits = 0;
      SNIPER_TRY(read_le(&bits, what));
      double d = 0;
      std::memcpy(&d, &bits, sizeof(d));
      *out = GgufValue::make_float(type, d);
      return ok_status();
    }
    case GgufValueType::kBool: {
      uint8_t v = 0;
      SNIPER_TRY(read_le(&v, what));
      if (v > 1) return fail(make_error("bool value is %u but must be 0 or 1", v));
      *out = GgufValue::make_bool(v != 0);
      return ok_status();
    }
    case GgufValueType::kString: {
      SNIPER_ASSIGN_OR_RETURN(std::string s, read_string("string length"));
      *out = GgufValue::make_string(std::move(s));
      return ok_status();
    }
    case GgufValueType::kArray: return read_array_body(out, 1);
  }
  return fail(
      make_error("value type %u is not a GGUF value type (0..%u)", static_cast<uint32_t>(type), kNumValueTypes - 1));
}

// Reads { u32 elem_type; u64 count; items } into *out. `depth` is this array's nesting level (1
// for a top-level array).
Status Parser::read_array_body(GgufValue* out, int depth) {
  uint32_t elem_raw = 0;
  SNIPER_TRY(read_le(&elem_raw, "array element type"));
  if (elem_raw >= kNumValueTypes) {
    return fail(make_error("array element type %u is not a GGUF value type (0..%u)", elem_raw, kNumValueTypes - 1));
  }
  auto elem = static_cast<GgufValueType>(elem_raw);
  if (elem == GgufValueType::kArray && depth >= kMaxArrayDepth) {
    return fail(make_error("arrays nest deeper than the maximum of %d levels", kMaxArrayDepth));
  }
  uint64_t count = 0;
  SNIPER_TRY(read_le(&count, "array count"));
  uint64_t max_count = src_.remaining() / min_value_bytes(elem);
  if (count > max_count) {
    return fail(
        make_error("array count is %llu but the remaining %llu bytes of the file can hold at most %llu %s items",
                   static_cast<ull>(count), static_cast<ull>(src_.remaining()), static_cast<ull>(max_count),
                   gguf_value_type_name(elem)));
  }
  GgufValue arr;
  arr.type = GgufValueType::kArray;
  arr.elem_type = elem;
  size_t reserve = static_cast<size_t>(std::min<uint64_t>(count, kMaxReserve));
  GgufValue item;
  switch (elem) {
    case GgufValueType::kString:
      arr.arr_str.reserve(reserve);
      for (uint64_t i = 0; i < count; ++i) {
        SNIPER_ASSIGN_OR_RETURN(std::string s, read_string("string length", static_cast<int64_t>(i)));
        arr.arr_str.push_back(std::move(s));
      }
      break;
    case GgufValueType::kArray:
      arr.arr_nested.reserve(std::min<size_t>(reserve, 1024));
      for (uint64_t i = 0; i < count; ++i) {
        SNIPER_TRY(read_array_body(&item, depth + 1));
        arr.arr_nested.push_back(std::move(item));
      }
      break;
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64:
      arr.arr_float.reserve(reserve);
      for (uint64_t i = 0; i < count; ++i) {
        SNIPER_TRY(read_scalar(elem, &item));
        arr.arr_float.push_back(item.f64);
      }
      break;
    default:  // integers and bool
      arr.arr_int.reserve(reserve);
      for (uint64_t i = 0; i < count; ++i) {
        SNIPER_TRY(read_scalar(elem, &item));
        if (elem == GgufValueType::kUint64 && item.u64 > static_cast<uint64_t>(INT64_MAX)) {
          return fail(make_error("item %llu is %llu, above the int64 maximum allowed in integer arrays",
                                 static_cast<ull>(i), static_cast<ull>(item.u64)));
        }
        arr.arr_int.push_back(item.i64);
      }
      break;
  }
  *out = std::move(arr);
  return ok_status();
}

Status Parser::read_header(GgufFile* file, uint64_t* n_tensors, uint64_t* n_kv) {
  file->file_size = src_.size();
  if (src_.size() < kHeaderBytes) {
    return make_error("the file is %llu bytes but a GGUF header needs %llu", static_cast<ull>(src_.size()),
                      static_cast<ull>(kHeaderBytes));
  }
  uint32_t magic = 0;
  SNIPER_TRY(read_le(&magic, "magic"));
  if (magic != kGgufMagic) {
    return make_error("bad magic 0x%08x, expected 0x%08x (\"GGUF\"): not a GGUF file", magic, kGgufMagic);
  }
  uint32_t version = 0;
  SNIPER_TRY(read_le(&version, "version"));
  if (version != 2 && version != 3) {
    uint32_t swapped = __builtin_bswap32(version);
    return make_error("GGUF version %u is not supported (supported: 2, 3)%s", version,
                      swapped == 2 || swapped == 3 ? "; the file looks big-endian" : "");
  }
  file->version = version;
  SNIPER_TRY(read_le(n_tensors, "n_tensors"));
  SNIPER_TRY(read_le(n_kv, "n_kv"));
  uint64_t max_tensors = src_.remaining() / kMinTensorInfoBytes;
  if (*n_tensors > max_tensors) {
    return make_error("n_tensors is %llu but the file (%llu bytes) can hold at most %llu", static_cast<ull>(*n_tensors),
                      static_cast<ull>(src_.size()), static_cast<ull>(max_tensors));
  }
  uint64_t max_kv = src_.remaining() / kMinKvBytes;
  if (*n_kv > max_kv) {
    return make_error("n_kv is %llu but the file (%llu bytes) can hold at most %llu", static_cast<ull>(*n_kv),
                      static_cast<ull>(src_.size()), static_cast<ull>(max_kv));
  }
  return ok_status();
}

Status Parser::read_metadata(GgufFile* file, uint64_t n_kv) {
  section_ = Section::kMetadata;
  for (uint64_t i = 0; i < n_kv; ++i) {
    index_ = i;
    name_ = nullptr;
    SNIPER_ASSIGN_OR_RETURN(std::string key, read_string("key length"));
    if (key.empty()) return fail(make_error("the key is empty"));
    name_ = &key;
    if (file->has(key)) return fail(make_error("duplicate key (metadata entry %llu)", static_cast<ull>(i)));
    uint32_t type_raw = 0;
    SNIPER_TRY(read_le(&type_raw, "value type"));
    if (type_raw >= kNumValueTypes) {
      return fail(make_error("value type %u is not a GGUF value type (0..%u)", type_raw, kNumValueTypes - 1));
    }
    GgufValue value;
    SNIPER_TRY(read_scalar(static_cast<GgufValueType>(type_raw), &value));
    name_ = nullptr;
    file->add_kv(std::move(key), std::move(value));
  }
  section_ = Section::kHeader;
  return ok_status();
}

Status Parser::apply_alignment(GgufFile* file) {
  const GgufValue* v = file->find("general.alignment");
  if (v == nullptr) {
    file->alignment = kGgufDefaultAlignment;
    return ok_status();
  }
  if (v->type != GgufValueType::kUint32) {
    return make_error("general.alignment has type %s but must be u32", gguf_value_type_name(v->type));
  }
  if (!is_power_of_two(v->u64)) {
    return make_error("general.alignment is %llu but must be a nonzero power of two", static_cast<ull>(v->u64));
  }
  file->alignment = v->u64;
  return ok_status();
}

Status Parser::read_tensor_info(const GgufFile& file, GgufTensorInfo* info) {
  name_ = nullptr;
  SNIPER_ASSIGN_OR_RETURN(info->name, read_string("name length"));
  if (info->name.empty()) return fail(make_error("the name is empty"));
  name_ = &info->name;
  uint32_t n_dims = 0;
  SNIPER_TRY(read_le(&n_dims, "n_dims"));
  if (n_dims < 1 || n_dims > static_cast<uint32_t>(kGgufMaxDims)) {
    return fail(make_error("n_dims is %u but must be in [1, %d]", n_dims, kGgufMaxDims));
  }
  info->n_dims = static_cast<int>(n_dims);
  info->ne = {1, 1, 1, 1};
  int64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t ne = 0;
    SNIPER_TRY(read_le(&ne, "ne"));
    if (ne < 1 || ne > static_cast<uint64_t>(INT64_MAX)) {
      return fail(make_error("ne[%u] is %llu but must be in [1, %lld]", d, static_cast<ull>(ne),
                             static_cast<long long>(INT64_MAX)));
    }
    info->ne[d] = static_cast<int64_t>(ne);
    if (__builtin_mul_overflow(n_elements, info->ne[d], &n_elements)) {
      return fail(make_error("the element count of its shape overflows int64"));
    }
  }
  uint32_t type_raw = 0;
  SNIPER_TRY(read_le(&type_raw, "type"));
  const GgmlTypeInfo* type = find_type_info(type_raw);
  if (type == nullptr) {
    const char* upper = ggml_type_upper_name(type_raw);
    if (upper != nullptr) return fail(make_error("its type %s (type %u) is not supported", upper, type_raw));
    return fail(make_error("type %u is not a known ggml type", type_raw));
  }
  info->type = type->type;
  if (info->ne[0] % type->block_size != 0) {
    return fail(make_error("ne[0] is %lld but type %s needs a multiple of its block size %lld",
                           static_cast<long long>(info->ne[0]), type->name, static_cast<long long>(type->block_size)));
  }
  // nbytes = (ne[0] / block_size) * type_size * ne[1] * ne[2] * ne[3], each step checked.
  uint64_t nbytes = static_cast<uint64_t>(info->ne[0] / type->block_size);
  bool overflow = __builtin_mul_overflow(nbytes, static_cast<uint64_t>(type->type_size), &nbytes);
  for (int d = 1; d < kGgufMaxDims; ++d) {
    overflow = overflow || __builtin_mul_overflow(nbytes, static_cast<uint64_t>(info->ne[d]), &nbytes);
  }
  if (overflow) return fail(make_error("its byte size overflows 64 bits"));
  info->nbytes = nbytes;
  SNIPER_TRY(read_le(&info->offset, "offset"));
  if (info->offset % file.alignment != 0) {
    return fail(make_error("offset %llu is not a multiple of the alignment %llu", static_cast<ull>(info->offset),
                           static_cast<ull>(file.alignment)));
  }
  return ok_status();
}

Status Parser::check_tensor_data(GgufFile* file, std::vector<GgufTensorInfo>* infos) {
  const uint64_t size = file->file_size;
  for (GgufTensorInfo& t : *infos) {
    const char* c = t.name.c_str();
    if (file->data_offset > size || t.offset > size - file->data_offset) {
      return make_error(
          "tensor '%s': offset %llu puts its data at file offset %llu, past the end of the file "
          "(%llu bytes)",
          c, static_cast<ull>(t.offset), static_cast<ull>(file->data_offset + std::min(t.offset, size)),
          static_cast<ull>(size));
    }
    t.file_offset = file->data_offset + t.offset;
    if (t.nbytes > size - t.file_offset) {
      return make_error(
          "tensor '%s': its %llu bytes of data at file offset %llu extend past the end of the file "
          "(%llu bytes)",
          c, static_cast<ull>(t.nbytes), static_cast<ull>(t.file_offset), static_cast<ull>(size));
    }
  }
  std::vector<size_t> order(infos->size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (*infos)[a].offset < (*infos)[b].offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensorInfo& prev = (*infos)[order[i - 1]];
    const GgufTensorInfo& cur = (*infos)[order[i]];
    if (prev.offset + prev.nbytes > cur.offset) {
      return make_error("tensor '%s': data at offset %llu overlaps tensor '%s' (data offset %llu, %llu bytes)",
                        cur.name.c_str(), static_cast<ull>(cur.offset), prev.name.c_str(),
                        static_cast<ull>(prev.offset), static_cast<ull>(prev.nbytes));
    }
  }
  return ok_status();
}

Result<GgufFile> Parser::parse() {
  GgufFile file;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  SNIPER_TRY(read_header(&file, &n_tensors, &n_kv));
  SNIPER_TRY(read_metadata(&file, n_kv));
  SNIPER_TRY(apply_alignment(&file));
  uint64_t max_tensors = src_.remaining() / kMinTensorInfoBytes;
  if (n_tensors > max_tensors) {
    return make_error(
        "n_tensors is %llu but the rest of the file after the metadata (%llu bytes) can hold at most %llu",
        static_cast<ull>(n_tensors), static_cast<ull>(src_.remaining()), static_cast<ull>(max_tensors));
  }
  std::vector<GgufTensorInfo> infos;
  infos.reserve(static_cast<size_t>(std::min<uint64_t>(n_tensors, kMaxReserve)));
  std::set<std::string, std::less<>> names;
  section_ = Section::kTensors;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    index_ = i;
    GgufTensorInfo info;
    SNIPER_TRY(read_tensor_info(file, &info));
    name_ = nullptr;
    if (!names.insert(info.name).second) {
      return make_error("tensor '%s': duplicate name (tensor %llu repeats an earlier one)", info.name.c_str(),
                        static_cast<ull>(i));
    }
    infos.push_back(std::move(info));
  }
  section_ = Section::kHeader;
  // The data section starts at the next multiple of the alignment. A file without tensors may
  // end before that point (vocab-only files do).
  uint64_t pos = src_.position();
  file.data_offset = (pos + file.alignment - 1) / file.alignment * file.alignment;
  SNIPER_TRY(check_tensor_data(&file, &infos));
  for (GgufTensorInfo& t : infos) file.add_tensor(std::move(t));
  return file;
}

}  // namespace

Result<GgufFile> gguf_open(const std::string& path) {
  auto src = FileSource::open(path);
  if (!src.ok()) return src.error();
  Parser parser(**src);
  Result<GgufFile> file = parser.parse();
  if (!file.ok()) return make_error("%s: %s", path.c_str(), file.error().message.c_str());
  file->path = path;
  file->parts = {{path, file->file_size, file->data_offset}};
  return file;
}

Result<GgufFile> gguf_parse(const uint8_t* data, size_t size) {
  static const uint8_t kEmpty = 0;
  MemorySource src(data != nullptr ? data : &kEmpty, data != nullptr ? size : 0);
  Parser parser(src);
  return parser.parse();
}

}  // namespace sniper
