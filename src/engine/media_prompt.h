// SPDX-License-Identifier: MIT
// Prompts with media: text pieces and encoded media chunks (media/media_chunk.h) in order, as
// llama.cpp's mtmd splits "TEXT <__media__> TEXT": each media marker becomes the chunk's begin
// text (e.g. "<|image>"), the chunk, and its end text ("<image|>"); every text piece is tokenized
// on its own with special tokens parsed, and BOS is put in front when asked.
//
// In a session's history and in a prompt's cell list, a media chunk takes one cell per token,
// each holding kMediaToken, and a MediaSpan records the chunk (first cell, tokens, rope positions
// it takes, kind, SHA-256 of its bytes). Two prompts share a prefix of cells when their tokens
// agree and their media cells belong to media of the same hash at the same offset: a second turn
// over the same image reuses its KV rows, a different image never does (full hashes compare, not
// a short id). A span is kept or dropped whole.
//
// Positions: a media chunk's tokens take one KV cell each. Its rope positions: one per token for
// most models; for M-RoPE models (Qwen3.5) the chunk's 2D grid at rope position P: token i gets
// (t, h, w, e) = (P, P + row, P + col, 0) and the text after it resumes at P + max(nx, ny), as
// mtmd_image_tokens_get_decoder_pos assigns them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "media/media_chunk.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace sniper {

// The cell value of a media token in histories and prompt cell lists (never a vocabulary id).
inline constexpr int32_t kMediaToken = -1;
// llama.cpp's default media marker.
inline constexpr std::string_view kMediaMarker = "<__media__>";

struct MediaSpan {
  int64_t start = 0;     // first cell
  int64_t n_tokens = 0;  // cells it takes
  int64_t n_pos = 0;     // rope positions it takes (media_n_pos)
  MediaKind kind = MediaKind::kImage;
  MediaHash hash;
  int64_t end() const { return start + n_tokens; }
  bool operator==(const MediaSpan& other) const = default;
};

// Rope positions a chunk takes in a model with `config`: max(nx, ny) for M-RoPE models, else one
// per token.
int64_t media_n_pos(const ModelConfig& config, const MediaChunk& chunk);

// The chunk's rope positions starting at rope position p: [4][n_tokens] (t, h, w, e) for M-RoPE
// models (see above); empty for others (their tokens take p, p + 1, ...).
std::vector<int32_t> media_rope_positions(const ModelConfig& config, const MediaChunk& chunk, int64_t p);

struct PromptPiece {
  std::vector<int32_t> tokens;        // a text piece (media == nullptr)
  const MediaChunk* media = nullptr;  // or a media chunk (owned by the caller)
};

// A prompt as pieces, and as cells (tokens with kMediaToken at media cells) with its spans.
struct MediaPrompt {
  std::vector<PromptPiece> pieces;
  std::vector<int32_t> cells;
  std::vector<MediaSpan> spans;
  int64_t n_cells() const { return static_cast<int64_t>(cells.size()); }
};

// How the text between media markers is tokenized (the chunks' own begin/end texts always parse
// their control tokens). parse_special: control-token texts become control tokens (mtmd's way).
// escape_mark: not empty for text that went through Tokenizer::escape_special_text with this mark
// (a chat's typed messages): encoded by encode_escaped, so what was typed stays text and the mark
// never reaches a token.
struct PromptText {
  bool parse_special = true;
  std::string_view escape_mark;
};

// Builds the prompt of `text` whose media markers stand for `media` in order, as mtmd does (see
// above), for a model with `config` (rope positions of M-RoPE models). Errors: the number of
// markers differs from the number of chunks (both named), a chunk whose width is not the
// model's.
Result<MediaPrompt> build_media_prompt(const Tokenizer& tokenizer, const ModelConfig& config, std::string_view text,
                                       std::span<const MediaChunk> media, bool add_bos,
                                       const PromptText& text_options = {}, std::string_view marker = kMediaMarker);

// The prompt of plain tokens (no media).
MediaPrompt text_prompt(std::vector<int32_t> tokens);

// Cells [begin, end) of `prompt` as a prompt of its own (the media pieces point at the same
// chunks; span starts count from begin). Errors: a bound outside [0, n_cells] or begin > end, a
// bound inside a media span (a chunk is evaluated whole).
Result<MediaPrompt> slice_prompt(const MediaPrompt& prompt, int64_t begin, int64_t end);

// Cells two sequences share from the start: equal tokens, and media cells of spans with the same
// hash, kind and size at the same offsets. A shared prefix never ends inside a span (it stops at
// the span's start).
int64_t common_prefix_cells(std::span<const int32_t> a, std::span<const MediaSpan> a_spans, std::span<const int32_t> b,
                            std::span<const MediaSpan> b_spans);

}  // namespace sniper
