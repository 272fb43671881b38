// SPDX-License-Identifier: MIT
#include "engine/media_prompt.h"

#include <algorithm>

namespace sniper {

int64_t media_n_pos(const ModelConfig& config, const MediaChunk& chunk) {
  return config.has_mrope() ? std::max(chunk.grid.nx, chunk.grid.ny) : chunk.n_tokens();
}

std::vector<int32_t> media_rope_positions(const ModelConfig& config, const MediaChunk& chunk, int64_t p) {
  if (!config.has_mrope()) return {};
  const int64_t n = chunk.n_tokens(), nx = std::max<int64_t>(chunk.grid.nx, 1);
  std::vector<int32_t> pos(static_cast<size_t>(4 * n));
  for (int64_t i = 0; i < n; ++i) {
    pos[static_cast<size_t>(i)] = static_cast<int32_t>(p);                   // t
    pos[static_cast<size_t>(n + i)] = static_cast<int32_t>(p + i / nx);      // h: the row
    pos[static_cast<size_t>(2 * n + i)] = static_cast<int32_t>(p + i % nx);  // w: the column
    pos[static_cast<size_t>(3 * n + i)] = 0;                                 // e: unused by mtmd
  }
  return pos;
}

namespace {

// Appends text tokens to the last text piece (or a new one), as mtmd's add_text.
void add_tokens(MediaPrompt& p, const std::vector<int32_t>& tokens) {
  if (tokens.empty()) return;
  if (p.pieces.empty() || p.pieces.back().media != nullptr) p.pieces.push_back({});
  PromptPiece& last = p.pieces.back();
  last.tokens.insert(last.tokens.end(), tokens.begin(), tokens.end());
}

}  // namespace

Result<MediaPrompt> build_media_prompt(const Tokenizer& tokenizer, const ModelConfig& config, std::string_view text,
                                       std::span<const MediaChunk> media, bool add_bos, const PromptText& text_options,
                                       std::string_view marker) {
  // mtmd's split_text: markers and the non-empty text between them.
  struct Part {
    std::string_view text;
    bool marker;
  };
  std::vector<Part> parts;
  size_t start = 0;
  size_t n_markers = 0;
  while (!marker.empty()) {
    const size_t at = text.find(marker, start);
    if (at == std::string_view::npos) break;
    if (at > start) parts.push_back({text.substr(start, at - start), false});
    parts.push_back({marker, true});
    ++n_markers;
    start = at + marker.size();
  }
  if (start < text.size()) parts.push_back({text.substr(start), false});
  if (n_markers != media.size()) {
    return make_error("the prompt has %zu media marker%s (%.*s) but %zu media item%s given", n_markers,
                      n_markers == 1 ? "" : "s", static_cast<int>(marker.size()), marker.data(), media.size(),
                      media.size() == 1 ? " was" : "s were");
  }
  MediaPrompt p;
  size_t i_media = 0;
  for (const Part& part : parts) {
    if (part.marker) {
      const MediaChunk& chunk = media[i_media++];
      if (chunk.dim != config.dim) {
        return make_error("media item %zu has embeddings of width %lld but the model's width is %lld", i_media,
                          static_cast<long long>(chunk.dim), static_cast<long long>(config.dim));
      }
      if (chunk.n_tokens() < 1 || chunk.embd.size() != static_cast<size_t>(chunk.n_tokens() * chunk.dim)) {
        return make_error("media item %zu holds %zu floats, not %lld tokens of width %lld", i_media, chunk.embd.size(),
                          static_cast<long long>(chunk.n_tokens()), static_cast<long long>(chunk.dim));
      }
      if (!chunk.begin_text.empty()) add_tokens(p, tokenizer.encode(chunk.begin_text, false, true));
      PromptPiece piece;
      piece.media = &chunk;
      p.pieces.push_back(std::move(piece));
      if (!chunk.end_text.empty()) add_tokens(p, tokenizer.encode(chunk.end_text, false, true));
    } else {
      add_tokens(p, text_options.escape_mark.empty()
                        ? tokenizer.encode(part.text, false, text_options.parse_special)
                        : tokenizer.encode_escaped(part.text, false, text_options.escape_mark));
    }
  }
  if (add_bos && tokenizer.add_bos() && tokenizer.bos_id() >= 0) {
    if (!p.pieces.empty() && p.pieces.front().media == nullptr) {
      p.pieces.front().tokens.insert(p.pieces.front().tokens.begin(), tokenizer.bos_id());
    } else {
      p.pieces.insert(p.pieces.begin(), PromptPiece{{tokenizer.bos_id()}, nullptr});
    }
  }
  if (add_bos && tokenizer.add_eos() && tokenizer.eos_id() >= 0) add_tokens(p, {tokenizer.eos_id()});
  // Cells and spans.
  for (const PromptPiece& piece : p.pieces) {
    if (piece.media == nullptr) {
      p.cells.insert(p.cells.end(), piece.tokens.begin(), piece.tokens.end());
      continue;
    }
    MediaSpan span;
    span.start = p.n_cells();
    span.n_tokens = piece.media->n_tokens();
    span.n_pos = media_n_pos(config, *piece.media);
    span.kind = piece.media->kind;
    span.hash = piece.media->hash;
    p.spans.push_back(span);
    p.cells.insert(p.cells.end(), static_cast<size_t>(span.n_tokens), kMediaToken);
  }
  return p;
}

MediaPrompt text_prompt(std::vector<int32_t> tokens) {
  MediaPrompt p;
  p.cells = tokens;
  if (!tokens.empty()) p.pieces.push_back({std::move(tokens), nullptr});
  return p;
}

Result<MediaPrompt> slice_prompt(const MediaPrompt& prompt, int64_t begin, int64_t end) {
  if (begin < 0 || begin > end || end > prompt.n_cells()) {
    return make_error("prompt slice [%lld, %lld) is outside the prompt's %lld cells", static_cast<long long>(begin),
                      static_cast<long long>(end), static_cast<long long>(prompt.n_cells()));
  }
  for (const MediaSpan& s : prompt.spans) {
    for (const int64_t bound : {begin, end}) {
      if (bound > s.start && bound < s.end()) {
        return make_error("prompt slice bound %lld falls inside the media chunk at cells [%lld, %lld)",
                          static_cast<long long>(bound), static_cast<long long>(s.start),
                          static_cast<long long>(s.end()));
      }
    }
  }
  MediaPrompt out;
  int64_t cell = 0;
  for (const PromptPiece& piece : prompt.pieces) {
    const int64_t size = piece.media != nullptr ? piece.media->n_tokens() : static_cast<int64_t>(piece.tokens.size());
    const int64_t lo = std::max(cell, begin), hi = std::min(cell + size, end);
    if (lo < hi) {
      if (piece.media != nullptr) {
        out.pieces.push_back({{}, piece.media});
      } else {
        out.pieces.push_back(
            {std::vector<int32_t>(piece.tokens.begin() + (lo - cell), piece.tokens.begin() + (hi - cell)), nullptr});
      }
    }
    cell += size;
  }
  out.cells.assign(prompt.cells.begin() + begin, prompt.cells.begin() + end);
  for (MediaSpan s : prompt.spans) {
    if (s.start >= begin && s.end() <= end) {
      s.start -= begin;
      out.spans.push_back(s);
    }
  }
  return out;
}

int64_t common_prefix_cells(std::span<const int32_t> a, std::span<const MediaSpan> a_spans, std::span<const int32_t> b,
                            std::span<const MediaSpan> b_spans) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0, ia = 0, ib = 0;
  while (i < n) {
    // The spans at or after cell i.
    while (ia < a_spans.size() && a_spans[ia].end() <= static_cast<int64_t>(i)) ++ia;
    while (ib < b_spans.size() && b_spans[ib].end() <= static_cast<int64_t>(i)) ++ib;
    const bool in_a = ia < a_spans.size() && a_spans[ia].start <= static_cast<int64_t>(i);
    const bool in_b = ib < b_spans.size() && b_spans[ib].start <= static_cast<int64_t>(i);
    if (in_a || in_b) {
      if (!(in_a && in_b)) break;
      const MediaSpan& sa = a_spans[ia];
      const MediaSpan& sb = b_spans[ib];
      if (sa.start != sb.start || sa.n_tokens != sb.n_tokens || sa.kind != sb.kind || sa.hash != sb.hash) break;
      // The whole span, or none of it.
      if (static_cast<size_t>(sa.end()) > n) break;
      i = static_cast<size_t>(sa.end());
      continue;
    }
    if (a[i] != b[i] || a[i] == kMediaToken) break;
    ++i;
  }
  return static_cast<int64_t>(i);
}

}  // namespace sniper
