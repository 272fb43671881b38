// SPDX-License-Identifier: MIT
#include "media_args.h"

#include <fstream>
#include <iterator>

#include "base/memory_limit.h"
#include "base/thread_pool.h"
#include "engine/prefill_chunk.h"
#include "gguf/split.h"

namespace sniper::cli {

std::vector<FlagSpec> media_flags() {
  return {
      {"--mmproj", nullptr, "PATH",
       "multimodal projector (the mmproj GGUF beside the model): gemma4v, qwen3vl_merger, gemma4a (audio)"},
      {"--no-mmproj", nullptr, nullptr,
       "with -hf: do not fetch and load the repository's projector (fetched by default, as llama.cpp does)", nullptr,
       "--no-mmproj-auto"},
      {"--image", nullptr, "PATH",
       "an image (PNG, JPEG, WebP, GIF's first frame); repeat for several, each at one <__media__> marker in the "
       "prompt (run puts them before the prompt when it has none)"},
      {"--audio", nullptr, "PATH",
       "an audio file (WAV, FLAC, MP3, OGG Vorbis; mixed to mono, resampled to 16 kHz) for a projector with an audio "
       "encoder (gemma4a); repeatable, and takes the next <__media__> marker as --image does, in command-line order"},
      {"--image-min-tokens", nullptr, "N", "fewest tokens an image is resized to (default: the projector's)"},
      {"--image-max-tokens", nullptr, "N", "most tokens an image is resized to (default: the projector's)"},
      {"--media-max-bytes", nullptr, "SIZE", "largest media file (default 64M)"},
      {"--media-max-pixels", nullptr, "N", "largest decoded image in pixels (default 40000000)"},
      {"--media-max-seconds", nullptr, "S", "longest audio item in seconds (default 600)"},
  };
}

Result<MmprojOptions> mmproj_options_from_args(const Args& args) {
  MmprojOptions o;
  SNIPER_ASSIGN_OR_RETURN(o.image_min_tokens, args.get_int("--image-min-tokens", 0, 1, 16384));
  SNIPER_ASSIGN_OR_RETURN(o.image_max_tokens, args.get_int("--image-max-tokens", 0, 1, 16384));
  if (args.has("--media-max-bytes")) {
    SNIPER_ASSIGN_OR_RETURN(o.limits.max_bytes, parse_size(args.get_string("--media-max-bytes")));
  }
  SNIPER_ASSIGN_OR_RETURN(o.limits.max_pixels, args.get_int("--media-max-pixels", o.limits.max_pixels, 1, 1 << 30));
  SNIPER_ASSIGN_OR_RETURN(int64_t seconds, args.get_int("--media-max-seconds", 600, 1, 86400));
  o.limits.max_audio_seconds = static_cast<double>(seconds);
  SNIPER_ASSIGN_OR_RETURN(int64_t threads, args.get_int("--threads", 0, 0, 1024));
  o.n_threads_hint = threads > 0 ? static_cast<int>(threads) : hardware_threads();
  const int64_t n_media = static_cast<int64_t>(args.get_all_of({"--image", "--audio"}).size());
  if (n_media > o.limits.max_media) {
    return make_error("%lld media files given (--image, --audio) but at most %lld media items fit one prompt",
                      static_cast<long long>(n_media), static_cast<long long>(o.limits.max_media));
  }
  SNIPER_TRY(validate_media_limits(o.limits));
  return o;
}

Result<int64_t> media_chunk_tokens_of(const std::string& mmproj_path, const MmprojOptions& options) {
  SNIPER_ASSIGN_OR_RETURN(GgufFile header, gguf_open(mmproj_path));
  SNIPER_ASSIGN_OR_RETURN(ProjectorFileInfo info, read_projector_file_info(header));
  if (info.vision == nullptr) return int64_t{0};
  auto vc = read_vision_config(header, *info.vision);
  if (!vc.ok()) return make_error("%s: %s", mmproj_path.c_str(), vc.error().message.c_str());
  if (!vc->non_causal) return int64_t{0};
  return options.image_max_tokens > 0 ? options.image_max_tokens : vc->max_tokens;
}

Result<std::unique_ptr<Mmproj>> load_mmproj_for_model(const Args& args, const std::string& model_path,
                                                      ModelLoadOptions* lo, MediaPlan* plan_out,
                                                      const std::string& hub_mmproj) {
  if (args.has("--mmproj") && args.has("--no-mmproj"))
    return make_error("--mmproj and --no-mmproj contradict each other: drop one");
  if (!args.has("--mmproj") && hub_mmproj.empty()) {
    if (args.has("--image") || args.has("--audio")) {
      return make_error("%s needs a projector: pass --mmproj PATH (the model's mmproj file)",
                        args.has("--image") ? "--image" : "--audio");
    }
    return std::unique_ptr<Mmproj>();
  }
  const std::string path = args.has("--mmproj") ? args.get_string("--mmproj") : hub_mmproj;
  if (!args.has("--mmproj"))
    std::fprintf(stderr, "projector: %s (the repository's, fetched with -hf; --no-mmproj skips it)\n", path.c_str());
  SNIPER_ASSIGN_OR_RETURN(MmprojOptions mo, mmproj_options_from_args(args));
  SNIPER_ASSIGN_OR_RETURN(MmprojMemory mem, mmproj_memory(path, mo));
  // The projector's header says how long its images may get (for the batch and sliding rings).
  SNIPER_ASSIGN_OR_RETURN(lo->media_chunk_tokens, media_chunk_tokens_of(path, mo));
  if (lo->residency == ResidencyMode::kMmap) {
    mo.residency = Residency::kMmap;
  } else if (lo->mem_bytes > 0) {
    SNIPER_ASSIGN_OR_RETURN(GgufFile file, gguf_open_model(model_path));
    auto config = load_model_config(file);
    if (!config.ok()) return make_error("%s: %s", model_path.c_str(), config.error().message.c_str());
    if (lo->media_chunk_tokens > 0) widen_rings_for_chunks(*config, lo->media_chunk_tokens);
    PlanRequest req;
    req.budget_bytes = lo->mem_bytes;
    req.n_ctx = lo->n_ctx > 0 ? lo->n_ctx : std::min<int64_t>(config->n_ctx_train, 4096);
    req.kv_type = lo->kv_type;
    req.batch = std::max(lo->batch > 0 ? lo->batch : kShortPromptChunk, lo->media_chunk_tokens);
    req.n_sessions = lo->n_sessions;
    req.batch_pass_rows = lo->batch_pass_rows;
    req.n_checkpoints = lo->n_checkpoints;
    req.n_logit_rows = lo->n_logit_rows;
    req.force_stream = lo->residency == ResidencyMode::kStream;
    req.load_mtp = lo->load_mtp;
    SNIPER_ASSIGN_OR_RETURN(MediaPlan plan, plan_media(file, *config, req, mem));
    mo.stream_layers = plan.stream_projector;
    lo->mem_bytes -= plan.projector_bytes;
    if (plan_out != nullptr) *plan_out = plan;
  }
  return Mmproj::load(path, mo);
}

namespace {

// Reads and encodes one media file; `what` ("image", "audio") names it in errors.
Result<MediaChunk> encode_file(const char* what, const std::string& path, Mmproj& mmproj, ThreadPool& pool,
                               MediaTimings* total) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("cannot open %s '%s'", what, path.c_str());
  f.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(f.tellg());
  if (size > mmproj.options().limits.max_bytes) {
    return make_error("%s '%s' is %llu bytes, over the limit of %llu bytes (--media-max-bytes)", what, path.c_str(),
                      static_cast<unsigned long long>(size),
                      static_cast<unsigned long long>(mmproj.options().limits.max_bytes));
  }
  f.seekg(0);
  std::vector<uint8_t> bytes(size);
  if (!f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size))) {
    return make_error("cannot read %s '%s'", what, path.c_str());
  }
  MediaTimings t;
  auto chunk = mmproj.encode(bytes, pool, &t);
  if (!chunk.ok()) return make_error("%s '%s': %s", what, path.c_str(), chunk.error().message.c_str());
  if (total != nullptr) {
    total->decode_s += t.decode_s;
    total->preprocess_s += t.preprocess_s;
    total->encode_s += t.encode_s;
  }
  return std::move(chunk).value();
}

}  // namespace

Result<MediaChunk> encode_image_file(const std::string& path, Mmproj& mmproj, ThreadPool& pool, MediaTimings* total) {
  return encode_file("image", path, mmproj, pool, total);
}

Result<std::vector<MediaChunk>> encode_images(const Args& args, Mmproj& mmproj, ThreadPool& pool, MediaTimings* total) {
  std::vector<MediaChunk> chunks;
  for (const auto& [flag, path] : args.get_all_of({"--image", "--audio"})) {
    const bool audio = flag == "--audio";
    if (audio && !mmproj.has_audio()) {
      return make_error("--audio '%s': the projector %s has no audio encoder (a gemma4a mmproj reads audio)",
                        path.c_str(), mmproj.path().c_str());
    }
    if (!audio && !mmproj.has_vision()) {
      return make_error("--image '%s': the projector %s has no vision encoder", path.c_str(), mmproj.path().c_str());
    }
    SNIPER_ASSIGN_OR_RETURN(MediaChunk chunk, encode_file(audio ? "audio" : "image", path, mmproj, pool, total));
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

}  // namespace sniper::cli
