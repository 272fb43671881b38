// SPDX-License-Identifier: MIT
#include "media/mmproj.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "base/check.h"
#include "kernels/matmul_widened.h"

namespace sniper {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

constexpr uint64_t kPage = 4096;

Status apply_token_limits(VisionConfig& c, const MmprojOptions& o) {
  const int64_t lo = o.image_min_tokens > 0 ? o.image_min_tokens : c.min_tokens;
  const int64_t hi = o.image_max_tokens > 0 ? o.image_max_tokens : c.max_tokens;
  if (o.image_min_tokens < 0 || o.image_max_tokens < 0 || lo > hi || hi > 16384) {
    return make_error("image token bounds [%lld, %lld] are invalid: need 1 <= min <= max <= 16384",
                      static_cast<long long>(lo), static_cast<long long>(hi));
  }
  c.min_tokens = lo;
  c.max_tokens = hi;
  const int64_t align = c.preprocess.align;
  c.preprocess.min_pixels = lo * align * align;
  c.preprocess.max_pixels = hi * align * align;
  return ok_status();
}

// The config and the byte counts of a projector's vision encoder, from the header alone.
struct Header {
  ProjectorFileInfo info;
  VisionConfig vision;
  AudioConfig audio;
  MmprojMemory memory;
  std::unordered_set<std::string> layer_matrices;
};

Result<Header> read_header(const GgufFile& gguf, const MmprojOptions& options) {
  Header h;
  SNIPER_ASSIGN_OR_RETURN(h.info, read_projector_file_info(gguf));
  if (h.info.audio != nullptr) {
    SNIPER_ASSIGN_OR_RETURN(h.audio, read_audio_config(gguf, *h.info.audio));
    // The scratch of the longest chunk (30 s), from the tensors' shapes as the header states them.
    auto dim = [&gguf](const char* name, int i) -> int64_t {
      const GgufTensorInfo* t = gguf.find_tensor(name);
      return t != nullptr ? t->ne[static_cast<size_t>(i)] : 1;
    };
    const int64_t c0 = dim("a.conv1d.0.weight", 3), c1 = dim("a.conv1d.1.weight", 3);
    const int64_t p =
        gguf.find_tensor("a.pre_encode.out.weight") != nullptr ? dim("a.pre_encode.out.weight", 1) : h.audio.n_embd;
    const int64_t out = dim("mm.a.input_projection.weight", 1);
    auto mel = LogMel::create(gemma4a_log_mel_params(static_cast<int>(h.audio.n_mel)));
    if (!mel.ok()) return mel.error();
    const int64_t frames = mel->frames_for(static_cast<int64_t>(mel->params().chunk_seconds * kAudioSampleRate));
    // Plus the per-thread weight slices of the linears (kernels/matmul_widened.h).
    h.memory.scratch_bytes = AudioEncoder::estimate_scratch_bytes(h.audio, frames, c0, c1, p, out) +
                             static_cast<uint64_t>(std::max(1, options.n_threads_hint)) * kWidenedChunkBytes;
  }
  if (h.info.vision == nullptr) {
    for (const GgufTensorInfo& t : gguf.tensors()) {
      if (t.name.rfind("a.", 0) == 0 || t.name.rfind("mm.", 0) == 0) h.memory.weight_bytes += t.nbytes;
    }
    return h;
  }
  SNIPER_ASSIGN_OR_RETURN(h.vision, read_vision_config(gguf, *h.info.vision));
  SNIPER_TRY(apply_token_limits(h.vision, options));
  for (int64_t l = 0; l < h.vision.n_layers; ++l) {
    uint64_t layer = 0;
    for (const std::string& name : vision_layer_tensor_names(h.vision, l)) {
      const GgufTensorInfo* t = gguf.find_tensor(name);
      if (t == nullptr) continue;  // bind_vision_weights names what is missing
      h.layer_matrices.insert(name);
      h.memory.layer_matrix_bytes += t->nbytes;
      layer += (t->nbytes + 2 * kPage + kPage - 1) / kPage * kPage;
    }
    h.memory.layer_buffer_bytes = std::max(h.memory.layer_buffer_bytes, layer);
  }
  for (const GgufTensorInfo& t : gguf.tensors()) {
    const bool audio = h.info.audio != nullptr && t.name.rfind("a.", 0) == 0;
    if (audio || t.name.rfind("v.", 0) == 0 || t.name.rfind("mm.", 0) == 0) h.memory.weight_bytes += t.nbytes;
  }
  // One encode at a time: the larger of the two encoders' scratch.
  h.memory.scratch_bytes = std::max<uint64_t>(
      h.memory.scratch_bytes, VisionEncoder::estimate_scratch_bytes(h.vision, std::max(1, options.n_threads_hint)));
  return h;
}

}  // namespace

// The ViT layers' matrices from the LayerStreamer, the rest from the resident store.
class Mmproj::StreamedLayers : public VisionLayerSource {
 public:
  StreamedLayers(const VisionConfig& c, const VisionWeights& w, LayerStreamer* s) : config_(c), weights_(w), s_(s) {}
  Result<const VisionLayerWeights*> acquire(int64_t layer_idx) override {
    SNIPER_TRY(s_->acquire(layer_idx));
    layer_ = weights_.layers[static_cast<size_t>(layer_idx)];
    QTensor* fields[] = {&layer_.q, &layer_.k, &layer_.v, &layer_.o, &layer_.gate, &layer_.up, &layer_.down};
    QTensor* qwen_fields[] = {&layer_.qkv, &layer_.o, &layer_.up, &layer_.down};
    const std::vector<std::string> names = vision_layer_tensor_names(config_, layer_idx);
    std::span<QTensor*> targets =
        config_.type == ProjectorType::kGemma4V ? std::span<QTensor*>(fields) : std::span<QTensor*>(qwen_fields);
    CHECK(targets.size() == names.size(), "vision layer tensor lists differ");
    for (size_t i = 0; i < names.size(); ++i) {
      const QTensor* v = s_->find(names[i]);
      CHECK(v != nullptr, "vision layer %lld: %s was not streamed", static_cast<long long>(layer_idx),
            names[i].c_str());
      *targets[i] = *v;
    }
    return &layer_;
  }

 private:
  const VisionConfig& config_;
  const VisionWeights& weights_;
  LayerStreamer* s_;
  VisionLayerWeights layer_;
};

Result<MmprojMemory> mmproj_memory(const std::string& path, const MmprojOptions& options) {
  SNIPER_ASSIGN_OR_RETURN(GgufFile gguf, gguf_open(path));
  auto h = read_header(gguf, options);
  if (!h.ok()) return make_error("%s: %s", path.c_str(), h.error().message.c_str());
  return h->memory;
}

Mmproj::~Mmproj() = default;

Result<std::unique_ptr<Mmproj>> Mmproj::load(const std::string& path, const MmprojOptions& options) {
  SNIPER_TRY(validate_media_limits(options.limits));
  std::unique_ptr<Mmproj> m(new Mmproj());
  m->options_ = options;
  SNIPER_ASSIGN_OR_RETURN(m->gguf_, gguf_open(path));
  auto header = read_header(m->gguf_, options);
  if (!header.ok()) return make_error("%s: %s", path.c_str(), header.error().message.c_str());
  m->info_ = header->info;
  m->vision_ = header->vision;
  m->audio_ = header->audio;
  m->memory_ = header->memory;
  const bool stream = options.stream_layers;
  if (stream && options.residency != Residency::kResident) {
    return make_error("%s: streamed projector layers need resident residency for the rest", path.c_str());
  }
  auto store = WeightStore::open(m->gguf_, options.residency, stream ? &header->layer_matrices : nullptr);
  if (!store.ok()) return make_error("%s: %s", path.c_str(), store.error().message.c_str());
  m->store_ = std::move(store).value();
  const WeightStore& st = *m->store_;
  const TensorLookup lookup = [&st](std::string_view name) { return st.find_tensor(name); };
  if (m->info_.audio != nullptr) {
    auto audio = bind_audio_weights(m->audio_, lookup);
    if (!audio.ok()) return make_error("%s: %s", path.c_str(), audio.error().message.c_str());
    m->audio_weights_ = std::move(audio).value();
    auto mel = LogMel::create(gemma4a_log_mel_params(static_cast<int>(m->audio_.n_mel)));
    if (!mel.ok()) return make_error("%s: %s", path.c_str(), mel.error().message.c_str());
    m->mel_ = std::make_unique<LogMel>(std::move(mel).value());
    m->audio_encoder_ = std::make_unique<AudioEncoder>(m->audio_, m->audio_weights_);
  }
  if (m->info_.vision == nullptr) return m;
  auto bound = bind_vision_weights(m->vision_, lookup);
  if (!bound.ok()) return make_error("%s: %s", path.c_str(), bound.error().message.c_str());
  m->weights_ = std::move(bound).value();
  VisionLayerSource* source = nullptr;
  if (stream) {
    auto file = DirectFile::open(path);
    if (!file.ok()) return file.error();
    m->file_ = std::make_unique<DirectFile>(std::move(file).value());
    auto io = IoEngine::create(*m->file_);
    if (!io.ok()) return io.error();
    m->io_ = std::make_unique<IoEngine>(std::move(io).value());
    std::vector<std::vector<const GgufTensorInfo*>> groups(static_cast<size_t>(m->vision_.n_layers));
    for (int64_t l = 0; l < m->vision_.n_layers; ++l) {
      for (const std::string& name : vision_layer_tensor_names(m->vision_, l)) {
        const GgufTensorInfo* t = m->gguf_.find_tensor(name);
        if (t != nullptr) groups[static_cast<size_t>(l)].push_back(t);
      }
    }
    auto streamer = LayerStreamer::create(std::move(groups), m->io_.get(), m->memory_.layer_buffer_bytes);
    if (!streamer.ok()) return streamer.error();
    m->streamer_ = std::move(streamer).value();
    m->streamed_ = std::make_unique<StreamedLayers>(m->vision_, m->weights_, m->streamer_.get());
    source = m->streamed_.get();
  }
  m->encoder_ = std::make_unique<VisionEncoder>(m->vision_, m->weights_, source);
  return m;
}

size_t Mmproj::scratch_bytes() const {
  return (encoder_ != nullptr ? encoder_->scratch_bytes() : 0) +
         (audio_encoder_ != nullptr ? audio_encoder_->scratch_bytes() : 0);
}

Status Mmproj::check_language_model(int64_t lm_dim) const {
  if (encoder_ != nullptr && encoder_->out_dim() != lm_dim) {
    return make_error(
        "%s projects images to embeddings of width %lld but the language model's width is %lld (is it "
        "the mmproj file of another model?)",
        gguf_.path.c_str(), static_cast<long long>(encoder_->out_dim()), static_cast<long long>(lm_dim));
  }
  if (audio_encoder_ != nullptr && audio_encoder_->out_dim() != lm_dim) {
    return make_error(
        "%s projects audio to embeddings of width %lld but the language model's width is %lld (is it "
        "the mmproj file of another model?)",
        gguf_.path.c_str(), static_cast<long long>(audio_encoder_->out_dim()), static_cast<long long>(lm_dim));
  }
  return ok_status();
}

Result<PreprocessedImage> Mmproj::preprocess(const Image& image) const {
  if (encoder_ == nullptr) return make_error("%s has no vision encoder", gguf_.path.c_str());
  return preprocess_image(image, vision_.preprocess);
}

Result<MediaChunk> Mmproj::encode_preprocessed(const PreprocessedImage& image, const MediaHash& hash,
                                               ThreadPool& pool) {
  if (encoder_ == nullptr) return make_error("%s has no vision encoder", gguf_.path.c_str());
  SNIPER_ASSIGN_OR_RETURN(EncodedImage enc, encoder_->encode(image, pool));
  MediaChunk chunk;
  chunk.kind = MediaKind::kImage;
  chunk.hash = hash;
  chunk.grid = enc.grid;
  chunk.dim = enc.dim;
  chunk.non_causal = vision_.non_causal;
  chunk.begin_text = vision_.image_begin;
  chunk.end_text = vision_.image_end;
  chunk.embd = std::move(enc.embd);
  return chunk;
}

Result<std::vector<MelSpectrogram>> Mmproj::audio_mel(const Audio& audio, ThreadPool& pool) const {
  if (mel_ == nullptr) return make_error("%s has no audio encoder", gguf_.path.c_str());
  if (audio.sample_rate != kAudioSampleRate) {
    return make_error("audio at %d Hz: the encoder takes %d Hz", audio.sample_rate, kAudioSampleRate);
  }
  return mel_->compute(audio.samples, &pool);
}

Result<MediaChunk> Mmproj::encode_mel(std::span<const MelSpectrogram> mel, const MediaHash& hash, ThreadPool& pool) {
  if (audio_encoder_ == nullptr) return make_error("%s has no audio encoder", gguf_.path.c_str());
  MediaChunk chunk;
  chunk.kind = MediaKind::kAudio;
  chunk.hash = hash;
  chunk.dim = audio_encoder_->out_dim();
  chunk.non_causal = false;
  chunk.begin_text = audio_.audio_begin;
  chunk.end_text = audio_.audio_end;
  for (const MelSpectrogram& m : mel) {
    SNIPER_ASSIGN_OR_RETURN(EncodedAudio enc, audio_encoder_->encode(m, pool));
    chunk.embd.insert(chunk.embd.end(), enc.embd.begin(), enc.embd.end());
    chunk.grid.nx += enc.n_tokens;
  }
  chunk.grid.ny = 1;
  if (chunk.grid.nx == 0) return make_error("audio makes no tokens");
  return chunk;
}

Result<MediaChunk> Mmproj::encode(std::span<const uint8_t> bytes, ThreadPool& pool, MediaTimings* timings) {
  auto t0 = std::chrono::steady_clock::now();
  SNIPER_ASSIGN_OR_RETURN(DecodedMedia media, decode_media(bytes, options_.limits));
  if (!supports(media.kind)) {
    const char* what = has_vision() ? (has_audio() ? "images and audio" : "images") : "audio";
    return make_error("%s media is not supported by the projector %s (it encodes: %s)", media_kind_name(media.kind),
                      gguf_.path.c_str(), what);
  }
  const double decode_s = seconds_since(t0);
  if (media.kind == MediaKind::kAudio) {
    t0 = std::chrono::steady_clock::now();
    SNIPER_ASSIGN_OR_RETURN(std::vector<MelSpectrogram> mel, audio_mel(media.audio, pool));
    const double mel_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    SNIPER_ASSIGN_OR_RETURN(MediaChunk chunk, encode_mel(mel, hash_media(bytes), pool));
    if (timings != nullptr) {
      timings->decode_s = decode_s;
      timings->preprocess_s = mel_s;
      timings->encode_s = seconds_since(t0);
    }
    return chunk;
  }
  t0 = std::chrono::steady_clock::now();
  SNIPER_ASSIGN_OR_RETURN(PreprocessedImage pre, preprocess(media.image));
  const double preprocess_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  SNIPER_ASSIGN_OR_RETURN(MediaChunk chunk, encode_preprocessed(pre, hash_media(bytes), pool));
  if (timings != nullptr) {
    timings->decode_s = decode_s;
    timings->preprocess_s = preprocess_s;
    timings->encode_s = seconds_since(t0);
  }
  return chunk;
}

}  // namespace sniper
