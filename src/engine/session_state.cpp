// SPDX-License-Identifier: MIT
#include "engine/session_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/check.h"
#include "kv/kv_values.h"

namespace sniper {

namespace {

constexpr char kMagic[8] = {'S', 'N', 'P', 'R', 'K', 'V', '1', '\0'};
constexpr size_t kHeaderBytes = 72;

template <typename T>
void put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

constexpr size_t kLayerRecordBytes = 64;
constexpr size_t kMediaRecordBytes = 64;

// Reads n_media records at `at` into s->media and checks them against s->tokens: in cell order,
// inside the tokens, not overlapping, 1 <= n_pos <= n_tokens, a known kind, and the media cells
// (kMediaToken) exactly the chunks' cells.
Status read_media_table(std::string_view bytes, size_t at, int64_t n_media, SessionState* s) {
  const int64_t n_tokens = s->n_tokens();
  int64_t end = 0, media_cells = 0;
  for (int64_t i = 0; i < n_media; ++i, at += kMediaRecordBytes) {
    MediaSpan span;
    span.start = get<int64_t>(bytes, at);
    span.n_tokens = get<int64_t>(bytes, at + 8);
    span.n_pos = get<int64_t>(bytes, at + 16);
    const uint32_t kind = get<uint32_t>(bytes, at + 24);
    const uint32_t zero = get<uint32_t>(bytes, at + 28);
    if (span.start < end || span.n_tokens < 1 || span.start > n_tokens || span.n_tokens > n_tokens - span.start ||
        span.n_pos < 1 || span.n_pos > span.n_tokens || kind > static_cast<uint32_t>(MediaKind::kAudio) || zero != 0) {
      return make_error(
          "the context file's media %ld (cells %ld + %ld, %ld positions, kind %u) is out of range or order for %ld "
          "tokens",
          static_cast<long>(i), static_cast<long>(span.start), static_cast<long>(span.n_tokens),
          static_cast<long>(span.n_pos), kind, static_cast<long>(n_tokens));
    }
    span.kind = static_cast<MediaKind>(kind);
    std::memcpy(span.hash.bytes.data(), bytes.data() + at + 32, span.hash.bytes.size());
    for (int64_t c = span.start; c < span.end(); ++c) {
      if (s->tokens[static_cast<size_t>(c)] != kMediaToken) {
        return make_error("the context file's media %ld covers cell %ld, which holds token %d", static_cast<long>(i),
                          static_cast<long>(c), s->tokens[static_cast<size_t>(c)]);
      }
    }
    media_cells += span.n_tokens;
    end = span.end();
    s->media.push_back(span);
  }
  int64_t marked = 0;
  for (int32_t t : s->tokens) marked += t == kMediaToken ? 1 : 0;
  if (marked != media_cells) {
    return make_error("the context file has %ld media cells but its media table covers %ld", static_cast<long>(marked),
                      static_cast<long>(media_cells));
  }
  return ok_status();
}

const char* state_kind_name(LayerStateKind k) {
  switch (k) {
    case LayerStateKind::kNone: return "none";
    case LayerStateKind::kKv: return "kv";
    case LayerStateKind::kSharedKv: return "shared kv";
    case LayerStateKind::kRecurrent: return "recurrent";
  }
  return "?";
}

// Replaces s->kv's compressed KV sections by the session layout of s->kv_type (context_compression.h).
// The compressed section sizes come from the file: each must be a whole number m <= n_tokens of
// compressed positions of a valid shape.
Status decompress_sections(SessionState* s, ContextCompression c) {
  if (!kv_type_compressible(s->kv_type)) {
    return make_error("the context file is compressed but has a %s KV cache, which compression does not support",
                      kv_config_name(s->kv_type).c_str());
  }
  std::vector<uint8_t> kv;
  kv.reserve(s->kv.size() * 4);  // at most 64/18 of a q4_0 section's bytes: one allocation
  size_t at = 0;
  for (size_t l = 0; l < s->layers.size(); ++l) {
    const LayerStateSpec& spec = s->layers[l];
    const uint64_t section = s->layer_bytes[l];
    if (spec.kind != LayerStateKind::kKv) {
      kv.insert(kv.end(), s->kv.begin() + static_cast<long>(at), s->kv.begin() + static_cast<long>(at + section));
      at += section;
      continue;
    }
    constexpr int64_t kMaxHeads = 1 << 16;
    if (spec.n_kv_heads < 1 || spec.n_kv_heads > kMaxHeads || spec.head_dim < 32 || spec.head_dim > kMaxHeads ||
        spec.head_dim % 32 != 0) {
      return make_error(
          "the compressed context's layer %zu has kv heads %ld and head_dim %ld but needs kv heads in "
          "[1, %ld] and head_dim a multiple of 32 in [32, %ld]",
          l, static_cast<long>(spec.n_kv_heads), static_cast<long>(spec.head_dim), static_cast<long>(kMaxHeads),
          static_cast<long>(kMaxHeads));
    }
    const size_t per_pos = compressed_kv_position_bytes(spec.n_kv_heads, spec.head_dim, c);
    const uint64_t m = section / per_pos;
    if (section % per_pos != 0 || m > static_cast<uint64_t>(s->n_tokens())) {
      return make_error(
          "the compressed context's layer %zu section of %llu bytes is not a whole number of positions "
          "(%zu bytes each, at most %ld)",
          l, static_cast<unsigned long long>(section), per_pos, static_cast<long>(s->n_tokens()));
    }
    const size_t raw = static_cast<size_t>(m) * kv_position_bytes(spec.n_kv_heads, spec.head_dim, s->kv_type);
    kv.resize(kv.size() + raw);
    decompress_kv_section(s->kv.data() + at, c, static_cast<int64_t>(m), spec.n_kv_heads, spec.head_dim, s->kv_type,
                          kv.data() + kv.size() - raw);
    s->layer_bytes[l] = raw;
    at += section;
  }
  s->kv = std::move(kv);
  return ok_status();
}

// Every value the state holds must be finite (issue 40 finding 6): a NaN in one KV row poisons
// every attention output that reads it, and so every later request that reuses the slot's
// prefix. Runs on the decompressed sections (their bytes are what the cache would hold).
// KV section of m positions: K, m * kv_dim values of the K type, then V, m * kv_dim values of
// the V type (rows, or f16/bf16 transposed: the same values in another order).
Status check_state_values(const SessionState& s) {
  size_t at = 0;
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const LayerStateSpec& spec = s.layers[l];
    const uint64_t section = s.layer_bytes[l];
    const uint8_t* p = s.kv.data() + at;
    at += section;
    if (spec.kind == LayerStateKind::kRecurrent) {
      for (uint64_t i = 0; i + sizeof(float) <= section; i += sizeof(float)) {
        float v;
        std::memcpy(&v, p + i, sizeof(v));
        if (!std::isfinite(v)) {
          return make_error("the context file's layer %zu recurrent state holds a non-finite value (%g at float %llu)",
                            l, static_cast<double>(v), static_cast<unsigned long long>(i / sizeof(float)));
        }
      }
      continue;
    }
    if (spec.kind != LayerStateKind::kKv || section == 0) continue;
    constexpr int64_t kMaxHeads = int64_t{1} << 16;
    if (spec.n_kv_heads < 1 || spec.n_kv_heads > kMaxHeads || spec.head_dim < 1 || spec.head_dim > kMaxHeads) {
      return make_error("the context file's layer %zu has kv heads %ld and head_dim %ld but both must be in [1, %ld]",
                        l, static_cast<long>(spec.n_kv_heads), static_cast<long>(spec.head_dim),
                        static_cast<long>(kMaxHeads));
    }
    const int64_t kv_dim = spec.n_kv_heads * spec.head_dim;
    const bool blocks = kv_type_quantized(s.kv_type.k) || kv_type_quantized(s.kv_type.v);
    const size_t k_bytes = blocks && spec.head_dim % 32 != 0 ? 0 : kv_values_bytes(s.kv_type.k, kv_dim);
    const size_t v_bytes = k_bytes == 0 ? 0 : kv_values_bytes(s.kv_type.v, kv_dim);
    // A section holds whole positions of its types; anything else is a damaged file (and would
    // leave values unchecked).
    if (k_bytes == 0) {
      return make_error("the context file's layer %zu has head_dim %ld but the %s/%s cache needs a multiple of 32", l,
                        static_cast<long>(spec.head_dim), kv_type_name(s.kv_type.k), kv_type_name(s.kv_type.v));
    }
    if (section % (k_bytes + v_bytes) != 0) {
      return make_error(
          "the context file's layer %zu KV section has %llu bytes, not a whole number of positions (%zu bytes each)", l,
          static_cast<unsigned long long>(section), k_bytes + v_bytes);
    }
    const int64_t m = static_cast<int64_t>(section / (k_bytes + v_bytes));
    const int64_t k_bad = first_non_finite_kv_value(p, m * kv_dim, s.kv_type.k);
    const int64_t v_bad =
        k_bad >= 0 ? -1 : first_non_finite_kv_value(p + k_bytes * static_cast<size_t>(m), m * kv_dim, s.kv_type.v);
    if (k_bad >= 0 || v_bad >= 0) {
      return make_error("the context file's layer %zu %s cache holds a non-finite value (%s, value %lld of %lld)", l,
                        k_bad >= 0 ? "K" : "V", kv_type_name(k_bad >= 0 ? s.kv_type.k : s.kv_type.v),
                        static_cast<long long>(k_bad >= 0 ? k_bad : v_bad), static_cast<long long>(m * kv_dim));
    }
  }
  return ok_status();
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t n, uint64_t hash) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

Result<uint64_t> model_fingerprint(const GgufFile& file) {
  std::ifstream f(file.path, std::ios::binary);
  if (!f) return make_error("cannot open '%s' to fingerprint the model", file.path.c_str());
  std::vector<char> buf(1 << 20);
  uint64_t left = file.data_offset;
  uint64_t hash = kFnvOffset;
  while (left > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    f.read(buf.data(), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(f.gcount()) != n)
      return make_error("'%s' ended while fingerprinting its header", file.path.c_str());
    hash = fnv1a64(buf.data(), n, hash);
    left -= n;
  }
  // A split model's later parts count by size (an unsplit file's value is unchanged).
  for (size_t k = 1; k < file.parts.size(); ++k) hash = fnv1a64(&file.parts[k].file_size, sizeof(uint64_t), hash);
  return fnv1a64(&file.file_size, sizeof(file.file_size), hash);
}

SessionState capture_session_state(const Session& session, uint64_t fingerprint) {
  const SequenceState& st = session.state();
  SessionState s;
  s.model_fingerprint = fingerprint;
  s.kv_type = st.kv_config();
  s.n_layers = st.n_layers();
  s.n_ctx = st.n_ctx();
  s.tokens = session.history();
  s.media = session.media_spans();
  const int64_t n = s.n_tokens();
  s.layers.assign(st.specs().begin(), st.specs().end());
  size_t total = 0;
  for (int64_t l = 0; l < s.n_layers; ++l) {
    s.layer_bytes.push_back(st.saved_layer_bytes(l, n));
    total += s.layer_bytes.back();
  }
  s.kv.resize(total);
  size_t at = 0;
  for (int64_t l = 0; l < s.n_layers; ++l) {
    st.save_layer(l, n, s.kv.data() + at);
    at += s.layer_bytes[static_cast<size_t>(l)];
  }
  return s;
}

// The same cache bytes: types, V layout and rotation (flash_attn's auto resolved).
// (Rotation matters only for a quantized K or V.)
static bool same_cache(const KvConfig& a, const KvConfig& b) {
  const bool rotated = kv_type_quantized(a.k) || kv_type_quantized(a.v);
  return a.k == b.k && a.v == b.v && a.flash() == b.flash() && (!rotated || a.rotate == b.rotate);
}

Status check_compatible(const SessionState& s, const Session& session, uint64_t fingerprint) {
  const SequenceState& st = session.state();
  const ModelConfig& c = session.model().config();
  if (s.model_fingerprint != fingerprint) {
    return make_error("the saved context was made with another model file (fingerprint %016llx, this model is %016llx)",
                      static_cast<unsigned long long>(s.model_fingerprint),
                      static_cast<unsigned long long>(fingerprint));
  }
  if (!same_cache(s.kv_type, st.kv_config())) {
    return make_error(
        "the saved context has a KV cache of %s but this session uses %s (start it with the saved "
        "context's -ctk / -ctv / -fa to load it)",
        kv_config_name(s.kv_type).c_str(), kv_config_name(st.kv_config()).c_str());
  }
  if (s.n_layers != st.n_layers()) {
    return make_error("the saved context has %ld layers but the model has %ld", static_cast<long>(s.n_layers),
                      static_cast<long>(st.n_layers()));
  }
  if (s.n_tokens() > st.n_ctx()) {
    return make_error("the saved context holds %ld tokens but the server's context is %ld",
                      static_cast<long>(s.n_tokens()), static_cast<long>(st.n_ctx()));
  }
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const LayerStateSpec& a = s.layers[static_cast<size_t>(l)];
    const LayerStateSpec& b = st.spec(l);
    if (!(a == b) || s.layer_bytes[static_cast<size_t>(l)] != st.saved_layer_bytes(l, s.n_tokens())) {
      return make_error(
          "the saved context's layer %ld state (%s, kv heads %ld, head_dim %ld, window %ld) differs from the "
          "model's (%s, kv heads %ld, head_dim %ld, window %ld)",
          static_cast<long>(l), state_kind_name(a.kind), static_cast<long>(a.n_kv_heads), static_cast<long>(a.head_dim),
          static_cast<long>(a.window), state_kind_name(b.kind), static_cast<long>(b.n_kv_heads),
          static_cast<long>(b.head_dim), static_cast<long>(b.window));
    }
  }
  // Media cells hold kMediaToken (parse_session_state checked that they are exactly the spans').
  for (int32_t t : s.tokens) {
    if ((t < 0 && t != kMediaToken) || t >= c.vocab_size)
      return make_error("the saved context holds token %d outside the vocabulary", t);
  }
  for (const MediaSpan& span : s.media) {
    // Without M-RoPE a media chunk takes one rope position per token; with it, at most as many.
    if (c.has_mrope() ? span.n_pos > span.n_tokens : span.n_pos != span.n_tokens) {
      return make_error(
          "the saved context's media at cell %ld takes %ld rope positions for %ld tokens, which this model (%s) "
          "does not assign",
          static_cast<long>(span.start), static_cast<long>(span.n_pos), static_cast<long>(span.n_tokens),
          c.has_mrope() ? "M-RoPE" : "one position per token");
    }
  }
  return ok_status();
}

void restore_session_state(const SessionState& s, Session& session) {
  SequenceState& st = session.state_mut();
  CHECK(s.n_layers == st.n_layers() && s.n_tokens() <= st.n_ctx(), "restore_session_state without check_compatible");
  size_t at = 0;
  for (int64_t l = 0; l < s.n_layers; ++l) {
    CHECK(s.layer_bytes[static_cast<size_t>(l)] == st.saved_layer_bytes(l, s.n_tokens()),
          "restore_session_state without check_compatible");
    st.load_layer(l, s.n_tokens(), s.kv.data() + at);
    at += s.layer_bytes[static_cast<size_t>(l)];
  }
  session.set_history(s.tokens, s.media);
}

Status check_compressible(const SessionState& s, ContextCompression c) {
  if (c == ContextCompression::kNone) return ok_status();
  if (!kv_type_compressible(s.kv_type)) {
    return make_error("--context-compression %s supports f16 and q8_0 K/V caches, not %s", context_compression_name(c),
                      kv_config_name(s.kv_type).c_str());
  }
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const LayerStateSpec& spec = s.layers[l];
    if (spec.kind == LayerStateKind::kKv && (spec.head_dim % 32 != 0 || spec.head_dim <= 0)) {
      return make_error("--context-compression %s needs head_dim a multiple of 32 but layer %zu has head_dim %ld",
                        context_compression_name(c), l, static_cast<long>(spec.head_dim));
    }
  }
  return ok_status();
}

std::string serialize_session_state(const SessionState& s, ContextCompression c) {
  // The per-layer sections as written: the state's own bytes, or its KV rows compressed.
  std::vector<uint8_t> packed;
  std::vector<uint64_t> packed_bytes = s.layer_bytes;
  if (c != ContextCompression::kNone) {
    packed.reserve(s.kv.size());  // compressed sections are never larger than f16 or q8_0 ones
    CHECK(check_compressible(s, c).ok(), "serialize_session_state without check_compressible");
    size_t at = 0;
    for (size_t l = 0; l < s.layers.size(); ++l) {
      const LayerStateSpec& spec = s.layers[l];
      const size_t raw = s.layer_bytes[l];
      if (spec.kind == LayerStateKind::kKv) {
        const int64_t m = static_cast<int64_t>(raw / kv_position_bytes(spec.n_kv_heads, spec.head_dim, s.kv_type));
        packed_bytes[l] = static_cast<uint64_t>(m) * compressed_kv_position_bytes(spec.n_kv_heads, spec.head_dim, c);
        packed.resize(packed.size() + packed_bytes[l]);
        compress_kv_section(s.kv.data() + at, s.kv_type, m, spec.n_kv_heads, spec.head_dim, c,
                            packed.data() + packed.size() - packed_bytes[l]);
      } else {
        packed.insert(packed.end(), s.kv.begin() + static_cast<long>(at), s.kv.begin() + static_cast<long>(at + raw));
      }
      at += raw;
    }
  }
  const std::vector<uint8_t>& sections = c == ContextCompression::kNone ? s.kv : packed;
  std::string out;
  out.reserve(kHeaderBytes + s.tokens.size() * 4 + 8 + s.media.size() * kMediaRecordBytes +
              static_cast<size_t>(s.n_layers) * kLayerRecordBytes + sections.size() + 8);
  out.append(kMagic, sizeof(kMagic));
  put<uint32_t>(&out, s.media.empty() ? kSessionStateVersion : kSessionStateMediaVersion);
  put<uint32_t>(&out, static_cast<uint32_t>(s.kv_type.k));
  put<uint64_t>(&out, s.model_fingerprint);
  put<int64_t>(&out, s.n_layers);
  put<uint32_t>(&out, static_cast<uint32_t>(s.kv_type.v));
  put<uint32_t>(&out, (s.kv_type.flash() ? 1u : 0u) | (s.kv_type.rotate ? 2u : 0u));
  put<int64_t>(&out, static_cast<int64_t>(c));
  put<int64_t>(&out, s.n_ctx);
  put<int64_t>(&out, s.n_tokens());
  put<uint64_t>(&out, sections.size());
  out.append(reinterpret_cast<const char*>(s.tokens.data()), s.tokens.size() * sizeof(int32_t));
  if (!s.media.empty()) {
    put<uint64_t>(&out, s.media.size());
    for (const MediaSpan& span : s.media) {
      put<int64_t>(&out, span.start);
      put<int64_t>(&out, span.n_tokens);
      put<int64_t>(&out, span.n_pos);
      put<uint32_t>(&out, static_cast<uint32_t>(span.kind));
      put<uint32_t>(&out, 0);
      out.append(reinterpret_cast<const char*>(span.hash.bytes.data()), span.hash.bytes.size());
    }
  }
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const LayerStateSpec& spec = s.layers[l];
    put<uint32_t>(&out, static_cast<uint32_t>(spec.kind));
    put<uint32_t>(&out, 0);
    put<int64_t>(&out, spec.n_kv_heads);
    put<int64_t>(&out, spec.head_dim);
    put<int64_t>(&out, spec.window);
    put<int64_t>(&out, spec.shared_with);
    put<int64_t>(&out, spec.conv_floats);
    put<int64_t>(&out, spec.recurrent_floats);
    put<uint64_t>(&out, packed_bytes[l]);
  }
  out.append(reinterpret_cast<const char*>(sections.data()), sections.size());
  put<uint64_t>(&out, fnv1a64(out.data(), out.size()));
  return out;
}

Result<SessionState> parse_session_state(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes + 8) {
    return make_error("the context file is %zu bytes, too short for a header (%zu)", bytes.size(), kHeaderBytes + 8);
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return make_error("the file is not a sniper context (bad magic)");
  const uint32_t version = get<uint32_t>(bytes, 8);
  if (version == 1) {
    return make_error(
        "the context file has version 1 (KV cache only, written by an older sniper) but this build reads "
        "version %u (per-layer sequence state); evaluate the prompt again and save a new context",
        kSessionStateVersion);
  }
  if (version != kSessionStateVersion && version != kSessionStateMediaVersion && version != 2) {
    return make_error("the context file has version %u but this build reads versions 2 to %u", version,
                      kSessionStateMediaVersion);
  }
  const uint64_t want = get<uint64_t>(bytes, bytes.size() - 8);
  const uint64_t got = fnv1a64(bytes.data(), bytes.size() - 8);
  if (want != got) {
    return make_error("the context file is corrupt: checksum %016llx but the contents hash to %016llx",
                      static_cast<unsigned long long>(want), static_cast<unsigned long long>(got));
  }
  SessionState s;
  const uint32_t k_code = get<uint32_t>(bytes, 12);
  const uint32_t v_code = version == 2 ? k_code : get<uint32_t>(bytes, 32);
  const uint32_t flags = version == 2 ? (k_code == 1 ? 1u : 0u) : get<uint32_t>(bytes, 36);
  const uint32_t max_code = version == 2 ? 1 : kKvTypeCount - 1;
  if (k_code > max_code || v_code > max_code) {
    return make_error("the context file's KV cache types are %u (K) and %u (V) but must be in [0, %u]", k_code, v_code,
                      max_code);
  }
  if (flags > 3) return make_error("the context file's KV flags are %u but must be in [0, 3]", flags);
  s.kv_type = KvConfig(static_cast<KvType>(k_code), static_cast<KvType>(v_code),
                       (flags & 1u) != 0 ? FlashAttn::kOn : FlashAttn::kOff);
  s.kv_type.rotate = (flags & 2u) != 0;
  if (!validate_kv_config(s.kv_type).ok()) {
    return make_error("the context file's V cache type %s is quantized but its flags say no flash attention",
                      kv_type_name(s.kv_type.v));
  }
  s.model_fingerprint = get<uint64_t>(bytes, 16);
  s.n_layers = get<int64_t>(bytes, 24);
  const int64_t compression = get<int64_t>(bytes, 40);
  if (compression < 0 || compression > static_cast<int64_t>(ContextCompression::kQ4_0)) {
    return make_error("the context file's compression is %ld but must be 0 (none), 1 (q8_0) or 2 (q4_0)",
                      static_cast<long>(compression));
  }
  s.n_ctx = get<int64_t>(bytes, 48);
  const int64_t n_tokens = get<int64_t>(bytes, 56);
  const uint64_t state_bytes = get<uint64_t>(bytes, 64);
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  if (s.n_layers < 1 || s.n_layers > 4096 || n_tokens < 0 || n_tokens > kMaxDim || state_bytes > bytes.size()) {
    return make_error("the context file's shape is out of range (layers %ld, tokens %ld, state bytes %llu)",
                      static_cast<long>(s.n_layers), static_cast<long>(n_tokens),
                      static_cast<unsigned long long>(state_bytes));
  }
  const uint64_t records = static_cast<uint64_t>(s.n_layers) * kLayerRecordBytes;
  const uint64_t media_at = kHeaderBytes + static_cast<uint64_t>(n_tokens) * 4;
  uint64_t n_media = 0;
  if (version == kSessionStateMediaVersion) {
    if (media_at + 16 > bytes.size()) {
      return make_error("the context file is %zu bytes, too short for its %ld tokens and media table", bytes.size(),
                        static_cast<long>(n_tokens));
    }
    n_media = get<uint64_t>(bytes, media_at);
    if (n_media < 1 || n_media > static_cast<uint64_t>(n_tokens)) {
      return make_error("the context file's media table holds %llu chunks but must hold 1 to %ld (its tokens)",
                        static_cast<unsigned long long>(n_media), static_cast<long>(n_tokens));
    }
  }
  const uint64_t media_bytes = version == kSessionStateMediaVersion ? 8 + n_media * kMediaRecordBytes : 0;
  const uint64_t expect = media_at + media_bytes + records + state_bytes + 8;
  if (expect != bytes.size()) {
    return make_error("the context file is %zu bytes but its header describes %llu", bytes.size(),
                      static_cast<unsigned long long>(expect));
  }
  s.tokens.resize(static_cast<size_t>(n_tokens));
  if (n_tokens > 0)
    std::memcpy(s.tokens.data(), bytes.data() + kHeaderBytes, s.tokens.size() * 4);  // data() may be null
  size_t at = static_cast<size_t>(media_at) + (media_bytes > 0 ? 8 : 0);
  SNIPER_TRY(read_media_table(bytes, at, static_cast<int64_t>(n_media), &s));
  at += static_cast<size_t>(n_media) * kMediaRecordBytes;
  uint64_t sum = 0;
  for (int64_t l = 0; l < s.n_layers; ++l, at += kLayerRecordBytes) {
    LayerStateSpec spec;
    const uint32_t kind = get<uint32_t>(bytes, at);
    if (kind > static_cast<uint32_t>(LayerStateKind::kRecurrent)) {
      return make_error("the context file's layer %ld has state kind %u but must be in [0, 3]", static_cast<long>(l),
                        kind);
    }
    spec.kind = static_cast<LayerStateKind>(kind);
    spec.n_kv_heads = get<int64_t>(bytes, at + 8);
    spec.head_dim = get<int64_t>(bytes, at + 16);
    spec.window = get<int64_t>(bytes, at + 24);
    spec.shared_with = get<int64_t>(bytes, at + 32);
    spec.conv_floats = get<int64_t>(bytes, at + 40);
    spec.recurrent_floats = get<int64_t>(bytes, at + 48);
    const uint64_t section = get<uint64_t>(bytes, at + 56);
    if (section > state_bytes - sum) {
      return make_error("the context file's layer %ld section of %llu bytes overruns the state (%llu bytes)",
                        static_cast<long>(l), static_cast<unsigned long long>(section),
                        static_cast<unsigned long long>(state_bytes));
    }
    sum += section;
    s.layers.push_back(spec);
    s.layer_bytes.push_back(section);
  }
  if (sum != state_bytes) {
    return make_error("the context file's layer sections add up to %llu bytes but its header says %llu",
                      static_cast<unsigned long long>(sum), static_cast<unsigned long long>(state_bytes));
  }
  s.kv.assign(bytes.begin() + static_cast<long>(at), bytes.end() - 8);
  if (compression != 0) SNIPER_TRY(decompress_sections(&s, static_cast<ContextCompression>(compression)));
  SNIPER_TRY(check_state_values(s));
  return s;
}

Status write_session_state_file(const std::string& path, const SessionState& state, ContextCompression compression) {
  SNIPER_TRY(check_compressible(state, compression));
  const std::string bytes = serialize_session_state(state, compression);
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error("cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error("cannot write '%s': %s", tmp.c_str(), std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error("cannot flush '%s': %s", tmp.c_str(), std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error("cannot rename '%s' to '%s': %s", tmp.c_str(), path.c_str(), std::strerror(err));
  }
  return ok_status();
}

Result<SessionState> read_session_state_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  std::string bytes;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    return make_error("cannot seek in '%s'", path.c_str());
  }
  bytes.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done != bytes.size())
    return make_error("'%s' shrank while being read (%zu of %zu bytes)", path.c_str(), done, bytes.size());
  auto state = parse_session_state(bytes);
  if (!state.ok()) return make_error("%s: %s", path.c_str(), state.error().message.c_str());
  return state;
}

}  // namespace sniper
