// SPDX-License-Identifier: MIT
// Mmproj: a loaded multimodal projector file and its encoders, the one object front ends hold
// beside the language model to turn media bytes into MediaChunks:
//   bytes -> decode_media (limits) -> preprocess (as mtmd) -> VisionEncoder -> MediaChunk;
//   audio: bytes -> decode_media (mono, 16 kHz) -> LogMel (30 s chunks) -> AudioEncoder -> one
//   MediaChunk holding every chunk's tokens in order (causal, as mtmd's consecutive chunks).
// The weights are resident (one allocation, or a read-only mapping) or, when the memory budget is
// tight, the ViT layers' matrices stream from the file through two layer buffers (LayerStreamer)
// while everything else stays resident. mmproj_memory() says what each choice costs, so that a
// caller plans the projector with the language model (engine/media_plan.h).
// Thread-compatible: one encode() at a time (the encoder's scratch and the stream buffers are
// shared); the loaded configuration is read-only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "io/direct_file.h"
#include "io/io_engine.h"
#include "media/audio_encoder.h"
#include "media/audio_mel.h"
#include "media/media_chunk.h"
#include "media/media_decoder.h"
#include "media/vision_encoder.h"
#include "weights/layer_streamer.h"
#include "weights/weight_store.h"

namespace sniper {

struct MmprojOptions {
  Residency residency = Residency::kResident;
  bool stream_layers = false;    // the ViT layers' matrices stream from the file (two layers in RAM)
  int64_t image_min_tokens = 0;  // 0: the projector's own (gemma4v 40, qwen3vl 8), else in [1, max]
  int64_t image_max_tokens = 0;  // 0: the projector's own (gemma4v 280, qwen3vl 4096)
  MediaLimits limits;            // decoding bounds
  int n_threads_hint = 2;        // threads the scratch estimate counts
};

// What a projector file costs in RAM, resident or streamed.
struct MmprojMemory {
  uint64_t weight_bytes = 0;        // every tensor the encoder reads
  uint64_t layer_matrix_bytes = 0;  // of which the ViT layers' matrices (what streams)
  uint64_t layer_buffer_bytes = 0;  // one stream buffer: the largest layer with O_DIRECT widening
  uint64_t scratch_bytes = 0;       // the encoder's activations for the largest image
  uint64_t resident_total() const { return weight_bytes + scratch_bytes; }
  uint64_t streamed_total() const { return weight_bytes - layer_matrix_bytes + 2 * layer_buffer_bytes + scratch_bytes; }
};

// Reads a projector file's header and reports its memory (no tensor data is read).
Result<MmprojMemory> mmproj_memory(const std::string& path, const MmprojOptions& options);

// Timings of one encode (seconds).
struct MediaTimings {
  double decode_s = 0;
  double preprocess_s = 0;
  double encode_s = 0;
};

class Mmproj {
 public:
  // Opens, validates and loads `path`. Errors name the file and the problem (not a projector, an
  // unsupported projector type, a bad key or tensor).
  static Result<std::unique_ptr<Mmproj>> load(const std::string& path, const MmprojOptions& options);
  ~Mmproj();

  const std::string& path() const { return gguf_.path; }
  const ProjectorFileInfo& info() const { return info_; }
  bool has_vision() const { return encoder_ != nullptr; }
  const VisionConfig& vision_config() const { return vision_; }
  bool has_audio() const { return audio_encoder_ != nullptr; }
  const AudioConfig& audio_config() const { return audio_; }
  const MmprojOptions& options() const { return options_; }
  bool streams() const { return streamer_ != nullptr; }
  const MmprojMemory& memory() const { return memory_; }
  // Bytes of encoder scratch held now (it grows to the largest image encoded; at most
  // memory().scratch_bytes).
  size_t scratch_bytes() const;
  // Media kinds this projector encodes, for capability reports ("vision", "audio").
  bool supports(MediaKind kind) const { return kind == MediaKind::kImage ? has_vision() : has_audio(); }

  // Checks that the projector's embeddings fit a language model of width lm_dim. The message
  // names both widths (the usual cause: the mmproj of another model).
  [[nodiscard]] Status check_language_model(int64_t lm_dim) const;

  // Decodes, preprocesses and encodes one media item. Errors: the limits, a corrupt or
  // unsupported file, a kind this projector does not encode, a failed streamed read.
  Result<MediaChunk> encode(std::span<const uint8_t> bytes, ThreadPool& pool, MediaTimings* timings = nullptr);
  // The preprocessing alone (what the vision encoder's input tensor holds).
  Result<PreprocessedImage> preprocess(const Image& image) const;
  // Encodes a preprocessed image into a chunk with the given hash.
  Result<MediaChunk> encode_preprocessed(const PreprocessedImage& image, const MediaHash& hash, ThreadPool& pool);
  // The audio encoder's input: the log-mel spectrogram of each 30-second chunk.
  Result<std::vector<MelSpectrogram>> audio_mel(const Audio& audio, ThreadPool& pool) const;
  // Encodes spectrogram chunks into one audio chunk with the given hash.
  Result<MediaChunk> encode_mel(std::span<const MelSpectrogram> mel, const MediaHash& hash, ThreadPool& pool);

 private:
  class StreamedLayers;
  Mmproj() = default;

  GgufFile gguf_;
  MmprojOptions options_;
  ProjectorFileInfo info_;
  VisionConfig vision_;
  MmprojMemory memory_;
  std::unique_ptr<WeightStore> store_;
  std::unique_ptr<DirectFile> file_;
  std::unique_ptr<IoEngine> io_;
  std::unique_ptr<LayerStreamer> streamer_;
  std::unique_ptr<StreamedLayers> streamed_;
  VisionWeights weights_;
  std::unique_ptr<VisionEncoder> encoder_;
  AudioConfig audio_;
  AudioWeights audio_weights_;
  std::unique_ptr<LogMel> mel_;
  std::unique_ptr<AudioEncoder> audio_encoder_;
};

}  // namespace sniper
