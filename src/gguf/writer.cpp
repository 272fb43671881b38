// SPDX-License-Identifier: MIT
// GgufWriter: serialises metadata and the tensor table (GGUF v3, little-endian) and streams
// tensor data from fill callbacks. Layout: header, metadata, tensor table, zero padding to the
// alignment, then each tensor at data_offset + offset (offsets are multiples of the alignment),
// each followed by zero padding to the alignment.
// Memory: write() holds the header bytes plus one reusable buffer as large as the largest
// tensor; tensors are filled and written one at a time.
#include "gguf/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "base/check.h"

namespace sniper {

namespace {

constexpr size_t kWriteChunkBytes = size_t{64} << 20;  // bytes per write() system call at most

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

class Bytes {
 public:
  explicit Bytes(std::vector<uint8_t>* out) : out_(out) {}
  template <typename T>
  void le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) out_->push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  void str(const std::string& s) {
    le<uint64_t>(s.size());
    out_->insert(out_->end(), s.begin(), s.end());
  }
  void f32(double v) {
    float f = static_cast<float>(v);
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof(bits));
    le(bits);
  }
  void f64(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    le(bits);
  }

 private:
  std::vector<uint8_t>* out_;
};

bool int_fits(GgufValueType t, int64_t v, uint64_t uv) {
  switch (t) {
    case GgufValueType::kUint8: return uv <= UINT8_MAX;
    case GgufValueType::kUint16: return uv <= UINT16_MAX;
    case GgufValueType::kUint32: return uv <= UINT32_MAX;
    case GgufValueType::kBool: return uv <= 1;
    case GgufValueType::kInt8: return v >= INT8_MIN && v <= INT8_MAX;
    case GgufValueType::kInt16: return v >= INT16_MIN && v <= INT16_MAX;
    case GgufValueType::kInt32: return v >= INT32_MIN && v <= INT32_MAX;
    default: return true;
  }
}

// Writes one integer (or bool) item of type t: unsigned types and bool from uv, signed from v.
// CHECKs that the value fits.
void put_int(Bytes& b, GgufValueType t, int64_t v, uint64_t uv) {
  CHECK(int_fits(t, v, uv), "value %lld / %llu does not fit type %s", static_cast<long long>(v),
        static_cast<unsigned long long>(uv), gguf_value_type_name(t));
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kBool: b.le(static_cast<uint8_t>(uv)); return;
    case GgufValueType::kUint16: b.le(static_cast<uint16_t>(uv)); return;
    case GgufValueType::kUint32: b.le(static_cast<uint32_t>(uv)); return;
    case GgufValueType::kUint64: b.le(uv); return;
    case GgufValueType::kInt8: b.le(static_cast<uint8_t>(v)); return;
    case GgufValueType::kInt16: b.le(static_cast<uint16_t>(v)); return;
    case GgufValueType::kInt32: b.le(static_cast<uint32_t>(v)); return;
    case GgufValueType::kInt64: b.le(static_cast<uint64_t>(v)); return;
    default: CHECK(false, "type %u is not an integer type", static_cast<unsigned>(t));
  }
}

bool is_signed(GgufValueType t) {
  return t == GgufValueType::kInt8 || t == GgufValueType::kInt16 || t == GgufValueType::kInt32 ||
         t == GgufValueType::kInt64;
}

// Writes { u32 elem_type; u64 count; items } of an array value.
void put_array_body(Bytes& b, const GgufValue& v) {
  CHECK(v.type == GgufValueType::kArray, "not an array");
  const GgufValueType et = v.elem_type;
  b.le(static_cast<uint32_t>(et));
  b.le(static_cast<uint64_t>(v.array_size()));
  switch (et) {
    case GgufValueType::kString:
      CHECK(v.arr_int.empty() && v.arr_float.empty() && v.arr_nested.empty(), "string array with other items");
      for (const std::string& s : v.arr_str) b.str(s);
      return;
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64:
      CHECK(v.arr_int.empty() && v.arr_str.empty() && v.arr_nested.empty(), "float array with other items");
      for (double d : v.arr_float) et == GgufValueType::kFloat32 ? b.f32(d) : b.f64(d);
      return;
    case GgufValueType::kArray:
      CHECK(v.arr_int.empty() && v.arr_str.empty() && v.arr_float.empty(), "nested array with other items");
      for (const GgufValue& item : v.arr_nested) put_array_body(b, item);
      return;
    default:
      CHECK(static_cast<uint32_t>(et) <= static_cast<uint32_t>(GgufValueType::kFloat64), "bad element type %u",
            static_cast<unsigned>(et));
      CHECK(v.arr_str.empty() && v.arr_float.empty() && v.arr_nested.empty(), "integer array with other items");
      for (int64_t x : v.arr_int) {
        CHECK(is_signed(et) || x >= 0, "negative item %lld in an unsigned array", static_cast<long long>(x));
        put_int(b, et, x, static_cast<uint64_t>(x));
      }
      return;
  }
}

void put_value(Bytes& b, const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kFloat32: b.f32(v.f64); return;
    case GgufValueType::kFloat64: b.f64(v.f64); return;
    case GgufValueType::kString: b.str(v.str); return;
    case GgufValueType::kArray: put_array_body(b, v); return;
    default: put_int(b, v.type, v.i64, v.u64); return;
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Status write_all(int fd, const uint8_t* data, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t put = ::write(fd, data, std::min(n, kWriteChunkBytes));
    if (put < 0) {
      if (errno == EINTR) continue;
      return make_error("writing '%s': %s", path.c_str(), std::strerror(errno));
    }
    data += put;
    n -= static_cast<size_t>(put);
  }
  return ok_status();
}

}  // namespace

void GgufWriter::set_alignment(uint32_t alignment) {
  CHECK(is_power_of_two(alignment), "alignment %u is not a nonzero power of two", alignment);
  set_u32("general.alignment", alignment);
}

void GgufWriter::set_value(const std::string& key, GgufValue value) {
  CHECK(!key.empty(), "empty metadata key");
  // A valid u32 general.alignment also sets the layout; any other value is stored as given
  // (readers reject it), which tests use to produce bad files.
  if (key == "general.alignment" && value.type == GgufValueType::kUint32 && is_power_of_two(value.u64)) {
    alignment_ = static_cast<uint32_t>(value.u64);
  }
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
  set_value(key, GgufValue::make_uint(GgufValueType::kUint32, v));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) {
  set_value(key, GgufValue::make_int(GgufValueType::kInt32, v));
}
void GgufWriter::set_u64(const std::string& key, uint64_t v) {
  set_value(key, GgufValue::make_uint(GgufValueType::kUint64, v));
}
void GgufWriter::set_f32(const std::string& key, float v) {
  set_value(key, GgufValue::make_float(GgufValueType::kFloat32, v));
}
void GgufWriter::set_bool(const std::string& key, bool v) { set_value(key, GgufValue::make_bool(v)); }
void GgufWriter::set_string(const std::string& key, const std::string& v) { set_value(key, GgufValue::make_string(v)); }
void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  set_value(key, GgufValue::make_string_array(v));
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  set_value(key, GgufValue::make_float_array(GgufValueType::kFloat32, std::vector<double>(v.begin(), v.end())));
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  set_value(key, GgufValue::make_int_array(GgufValueType::kInt32, std::vector<int64_t>(v.begin(), v.end())));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, FillFn fill) {
  CHECK(!name.empty(), "empty tensor name");
  CHECK(fill != nullptr, "tensor '%s' has no fill callback", name.c_str());
  CHECK(!ne.empty() && ne.size() <= static_cast<size_t>(kGgufMaxDims), "tensor '%s' has %zu dims", name.c_str(),
        ne.size());
  for (const PendingTensor& t : tensors_) CHECK(t.name != name, "duplicate tensor '%s'", name.c_str());
  for (int64_t n : ne) CHECK(n >= 1, "tensor '%s' has a dimension of %lld", name.c_str(), static_cast<long long>(n));
  size_t nbytes = row_bytes(type, ne[0]);
  for (size_t d = 1; d < ne.size(); ++d) {
    CHECK(!__builtin_mul_overflow(nbytes, static_cast<size_t>(ne[d]), &nbytes), "tensor '%s' size overflows",
          name.c_str());
  }
  tensors_.push_back(PendingTensor{name, type, ne, nbytes, std::move(fill)});
}

void GgufWriter::add_tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne,
                                  std::vector<uint8_t> bytes) {
  auto data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  add_tensor(name, type, ne, [data, name](uint8_t* dst, size_t nbytes) {
    CHECK(nbytes == data->size(), "tensor '%s' has %zu bytes but %zu were given", name.c_str(), nbytes, data->size());
    std::memcpy(dst, data->data(), nbytes);
  });
  CHECK(tensors_.back().nbytes == data->size(), "tensor '%s' needs %zu bytes but %zu were given", name.c_str(),
        tensors_.back().nbytes, data->size());
}

// Serialises everything before the data section (padding included) and returns each tensor's
// offset relative to the data section.
std::vector<uint8_t> GgufWriter::header_bytes(std::vector<uint64_t>* offsets) const {
  std::vector<uint8_t> out;
  Bytes b(&out);
  b.le(kGgufMagic);
  b.le(uint32_t{3});
  b.le(static_cast<uint64_t>(tensors_.size()));
  b.le(static_cast<uint64_t>(kv_.size()));
  for (const auto& [key, value] : kv_) {
    b.str(key);
    b.le(static_cast<uint32_t>(value.type));
    put_value(b, value);
  }
  offsets->clear();
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    b.str(t.name);
    b.le(static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) b.le(static_cast<uint64_t>(n));
    b.le(static_cast<uint32_t>(t.type));
    b.le(offset);
    offsets->push_back(offset);
    offset = align_up(offset + t.nbytes, alignment_);
  }
  out.resize(align_up(out.size(), alignment_), 0);
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> header = header_bytes(&offsets);
  const std::string tmp = path + ".tmp";
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return make_error("cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  auto fail = [&](Error e) {
    ::close(fd.release());
    ::unlink(tmp.c_str());
    return e;
  };
  Status s = write_all(fd.get(), header.data(), header.size(), tmp);
  if (!s.ok()) return fail(s.error());
  std::vector<uint8_t> buffer;  // reused for every tensor; grows to the largest one
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const PendingTensor& t : tensors_) {
    if (buffer.size() < t.nbytes) buffer.resize(t.nbytes);
    t.fill(buffer.data(), t.nbytes);
    s = write_all(fd.get(), buffer.data(), t.nbytes, tmp);
    if (!s.ok()) return fail(s.error());
    size_t pad = static_cast<size_t>(align_up(t.nbytes, alignment_) - t.nbytes);
    s = write_all(fd.get(), zeros.data(), pad, tmp);
    if (!s.ok()) return fail(s.error());
  }
  if (::fsync(fd.get()) != 0) return fail(make_error("syncing '%s': %s", tmp.c_str(), std::strerror(errno)));
  if (::close(fd.release()) != 0) {
    Error e = make_error("closing '%s': %s", tmp.c_str(), std::strerror(errno));
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = make_error("renaming '%s' to '%s': %s", tmp.c_str(), path.c_str(), std::strerror(errno));
    ::unlink(tmp.c_str());
    return e;
  }
  return ok_status();
}

uint64_t GgufWriter::file_bytes() const {
  std::vector<uint64_t> offsets;
  uint64_t end = header_bytes(&offsets).size();
  const uint64_t data_offset = end;
  for (size_t i = 0; i < tensors_.size(); ++i)
    end = data_offset + align_up(offsets[i] + tensors_[i].nbytes, alignment_);
  return end;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> out = header_bytes(&offsets);
  const uint64_t data_offset = out.size();
  uint64_t end = data_offset;
  for (size_t i = 0; i < tensors_.size(); ++i)
    end = data_offset + align_up(offsets[i] + tensors_[i].nbytes, alignment_);
  out.resize(end, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    tensors_[i].fill(out.data() + data_offset + offsets[i], tensors_[i].nbytes);
  }
  return out;
}

}  // namespace sniper
