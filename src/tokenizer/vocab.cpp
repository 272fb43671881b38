// SPDX-License-Identifier: MIT
// Loads a Vocab from GGUF tokenizer metadata, reproducing llama.cpp's llama_vocab::impl::load:
// per-model defaults, special ids, text-based detection of EOT/EOM/FIM tokens (promoted to
// control), the end-of-generation set and the special-token list used for partitioning.
// One deliberate difference: a "gpt2" vocab without bos/eos keys has no BOS/EOS here, where
// llama.cpp falls back to id 11 (an ordinary token such as ',').
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "base/log.h"
#include "gguf/reader.h"

namespace sniper {

namespace {

constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyPre = "tokenizer.ggml.pre";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyScores = "tokenizer.ggml.scores";
constexpr const char* kKeyTokenType = "tokenizer.ggml.token_type";

// Ids of the tokens whose text is in `list`, ascending.
std::vector<int32_t> ids_with_text(const Vocab& v, std::initializer_list<std::string_view> list) {
  std::vector<int32_t> ids;
  for (std::string_view text : list) {
    if (const auto id = v.find(text)) ids.push_back(*id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Reads an optional special token id. Absent keys keep `id`; ids outside [0, n_vocab) are ignored
// with a warning (llama.cpp does the same; stories260K stores 4294967295 for "none").
Status read_special_id(const GgufFile& file, const char* key, int32_t n_vocab, int32_t& id) {
  if (!file.has(key)) return ok_status();
  SNIPER_ASSIGN_OR_RETURN(const int64_t value, file.get_int(key));
  if (value < 0 || value >= n_vocab) {
    LOG_DEBUG("%s is %lld, outside [0, %d): ignored", key, static_cast<long long>(value), n_vocab);
    return ok_status();
  }
  id = int32_t(value);
  return ok_status();
}

Status read_tokens(const GgufFile& file, Vocab& v) {
  SNIPER_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens, file.get_string_array(kKeyTokens));
  if (tokens->empty() || tokens->size() > size_t(INT32_MAX)) {
    return make_error("%s has %zu entries but must have between 1 and %d", kKeyTokens, tokens->size(), INT32_MAX);
  }
  const size_t n = tokens->size();
  v.texts.resize(n);
  v.scores.assign(n, 0.0f);
  v.attrs.assign(n, kTokenAttrNormal);
  v.index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    v.texts[i] = (*tokens)[i];
    if (v.texts[i].empty()) v.texts[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
    const int32_t previous = v.index.insert(int32_t(i), v.texts);
    if (previous >= 0) {
      return make_error("%s has a duplicate token '%s' at ids %d and %zu", kKeyTokens, v.texts[i].c_str(), previous, i);
    }
  }

  if (const GgufValue* scores = file.find(kKeyScores)) {
    const bool is_float = scores->elem_type == GgufValueType::kFloat32 || scores->elem_type == GgufValueType::kFloat64;
    const bool is_int = scores->elem_type == GgufValueType::kInt32;
    if (scores->type != GgufValueType::kArray || !(is_float || is_int)) {
      return make_error("%s must be an array of float32 or int32", kKeyScores);
    }
    if (scores->array_size() < n) {
      return make_error("%s has %zu entries but the vocab has %zu tokens", kKeyScores, scores->array_size(), n);
    }
    for (size_t i = 0; i < n; ++i) {
      v.scores[i] = is_float ? float(scores->arr_float[i]) : float(scores->arr_int[i]);
    }
  }

  if (const GgufValue* types = file.find(kKeyTokenType)) {
    const GgufValueType et = types->elem_type;
    const bool int_elems = et != GgufValueType::kString && et != GgufValueType::kArray &&
                           et != GgufValueType::kFloat32 && et != GgufValueType::kFloat64;
    if (types->type != GgufValueType::kArray || !int_elems) {
      return make_error("%s must be an array of integers", kKeyTokenType);
    }
    if (types->arr_int.size() < n) {
      return make_error("%s has %zu entries but the vocab has %zu tokens", kKeyTokenType, types->arr_int.size(), n);
    }
    for (size_t i = 0; i < n; ++i) {
      switch (types->arr_int[i]) {  // llama_token_type: 1 normal .. 6 byte
        case 1: v.attrs[i] = kTokenAttrNormal; break;
        case 2: v.attrs[i] = kTokenAttrUnknown; break;
        case 3: v.attrs[i] = kTokenAttrControl; break;
        case 4: v.attrs[i] = kTokenAttrUserDefined; break;
        case 5: v.attrs[i] = kTokenAttrUnused; break;
        case 6: v.attrs[i] = kTokenAttrByte; break;
        default: v.attrs[i] = kTokenAttrUndefined; break;
      }
    }
  }
  return ok_status();
}

// Text-based detection of special tokens the converter did not name (llama.cpp's workaround):
// the first token (by id) whose text is listed becomes the id, and is promoted to control.
void detect_by_text(Vocab& v, int32_t& id, std::initializer_list<std::string_view> texts) {
  if (id != -1) return;
  const std::vector<int32_t> ids = ids_with_text(v, texts);
  if (ids.empty()) return;
  id = ids.front();
  v.attrs[size_t(id)] |= kTokenAttrControl;
}

void build_eog_set(Vocab& v, int32_t fim_pad, int32_t fim_rep, int32_t fim_sep) {
  std::vector<int32_t> eog;
  for (int32_t id : {fim_pad, fim_rep, fim_sep}) {
    if (id != -1) eog.push_back(id);
  }
  for (const int32_t id : ids_with_text(v, {"<|eot_id|>",
                                            "<|im_end|>",
                                            "<|end|>",
                                            "<|return|>",
                                            "<|call|>",
                                            "<|flush|>",
                                            "<|calls|>",
                                            "<end_of_turn>",
                                            "<|endoftext|>",
                                            "</s>",
                                            "<|eom_id|>",
                                            "<EOT>",
                                            "_<EOT>",
                                            "[EOT]",
                                            "[EOS]",
                                            "<|end_of_text|>",
                                            "<end_of_utterance>",
                                            "<eos>",
                                            "<turn|>",
                                            "<|tool_response>",
                                            "<｜end▁of▁sentence｜>",
                                            "[e~["})) {
    eog.push_back(id);
    v.attrs[size_t(id)] |= kTokenAttrControl;
  }
  // gpt-oss: these always render.
  for (const int32_t id : ids_with_text(v, {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})) {
    v.attrs[size_t(id)] = kTokenAttrUserDefined;
  }
  for (int32_t id : {v.eos_id, v.eot_id, v.eom_id}) {
    if (id != -1) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

  auto has_text = [&](std::string_view text) {
    return std::any_of(eog.begin(), eog.end(), [&](int32_t id) { return v.texts[size_t(id)] == text; });
  };
  auto erase_text = [&](std::string_view text, uint32_t new_attr) {
    for (auto it = eog.begin(); it != eog.end(); ++it) {
      if (v.texts[size_t(*it)] == text) {
        v.attrs[size_t(*it)] = new_attr;
        eog.erase(it);
        return;
      }
    }
  };
  // o200k_harmony / solar-open: "<|end|>" ends a message, not the generation.
  const bool has_call = has_text("<|call|>") || has_text("<|calls|>");
  if (has_text("<|end|>") && has_call && (has_text("<|return|>") || has_text("<|flush|>"))) {
    erase_text("<|end|>", kTokenAttrUserDefined);
  }
  // gemma4 / paddleocr: "</s>" is not end-of-generation there.
  if (has_text("<|tool_response>") && has_text("</s>")) erase_text("</s>", kTokenAttrNormal);
  v.eog_ids = std::move(eog);
}

void set_attr(Vocab& v, std::string_view text, uint32_t attr, bool value) {
  const auto id = v.find(text);
  if (!id) return;
  if (value) {
    v.attrs[size_t(*id)] |= attr;
  } else {
    v.attrs[size_t(*id)] &= ~attr;
  }
}

}  // namespace

Result<Vocab> load_vocab(const GgufFile& file) {
  Vocab v;
  SNIPER_ASSIGN_OR_RETURN(v.model, file.get_string(kKeyModel));
  SNIPER_ASSIGN_OR_RETURN(v.pre_name, file.get_string_or(kKeyPre, ""));
  if (v.model == "llama") {
    v.kind = TokenizerKind::kSpm;
    v.bos_id = 1;
    v.eos_id = 2;
    v.unk_id = 0;
    v.add_space_prefix = true;
    v.add_bos = true;
    v.clean_spaces = false;
  } else if (v.model == "gpt2") {
    v.kind = TokenizerKind::kBpe;
    SNIPER_ASSIGN_OR_RETURN(v.pre, pre_tokenizer_from_name(v.pre_name));
    v.add_bos = v.pre.add_bos;
    v.clean_spaces = v.pre.clean_spaces;
  } else if (v.model == "gemma4") {
    // SentencePiece-style BPE over merges; llama.cpp ignores tokenizer.ggml.pre for this model.
    v.kind = TokenizerKind::kBpe;
    SNIPER_ASSIGN_OR_RETURN(v.pre, pre_tokenizer_from_name("gemma4"));
    v.clean_spaces = v.pre.clean_spaces;
  } else {
    return make_error(
        "%s is '%s' but must be 'llama' (SentencePiece), 'gpt2' (byte-level BPE) or 'gemma4' "
        "(SentencePiece-style BPE)",
        kKeyModel, v.model.c_str());
  }
  SNIPER_ASSIGN_OR_RETURN(v.add_space_prefix, file.get_bool_or("tokenizer.ggml.add_space_prefix", v.add_space_prefix));

  SNIPER_TRY(read_tokens(file, v));
  const int32_t n = v.n_vocab();
  for (int32_t* id : {&v.bos_id, &v.eos_id, &v.unk_id}) {
    if (*id >= n) *id = -1;
  }
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
  const std::pair<const char*, int32_t*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos_id},     {"tokenizer.ggml.eos_token_id", &v.eos_id},
      {"tokenizer.ggml.eot_token_id", &v.eot_id},     {"tokenizer.ggml.eom_token_id", &v.eom_id},
      {"tokenizer.ggml.unknown_token_id", &v.unk_id}, {"tokenizer.ggml.padding_token_id", &v.pad_id},
      {"tokenizer.ggml.fim_pre_token_id", &fim_pre},  {"tokenizer.ggml.fim_suf_token_id", &fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &fim_mid},  {"tokenizer.ggml.fim_pad_token_id", &fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &fim_rep},  {"tokenizer.ggml.fim_sep_token_id", &fim_sep},
      {"tokenizer.ggml.prefix_token_id", &fim_pre},   {"tokenizer.ggml.suffix_token_id", &fim_suf},
      {"tokenizer.ggml.middle_token_id", &fim_mid},
  };
  for (const auto& [key, id] : keys) SNIPER_TRY(read_special_id(file, key, n, *id));

  SNIPER_ASSIGN_OR_RETURN(v.add_bos, file.get_bool_or("tokenizer.ggml.add_bos_token", v.add_bos));
  SNIPER_ASSIGN_OR_RETURN(v.add_eos, file.get_bool_or("tokenizer.ggml.add_eos_token", v.add_eos));
  if (v.pre.spm_style) v.add_bos = true;  // llama.cpp overrides add_bos_token=false for Gemma 4
  if (v.add_bos && v.bos_id == -1) {
    return make_error("tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is not set");
  }
  if (v.add_eos && v.eos_id == -1) {
    return make_error("tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is not set");
  }

  detect_by_text(v, v.eot_id,
                 {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
                  "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"});
  detect_by_text(v, v.eom_id, {"<|eom_id|>"});
  detect_by_text(v, fim_pre,
                 {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
                  "<|code_prefix|>", "<|prefix|>"});
  detect_by_text(v, fim_suf,
                 {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
                  "<|code_suffix|>", "<|suffix|>"});
  detect_by_text(v, fim_mid,
                 {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
                  "<|code_middle|>", "<|middle|>"});
  detect_by_text(v, fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
  detect_by_text(v, fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  detect_by_text(v, fim_sep, {"<|file_sep|>"});

  // Control tokens named "...unused..." are unused.
  for (int32_t i = 0; i < n; ++i) {
    if (v.has_attr(i, kTokenAttrControl) && v.texts[size_t(i)].find("unused") != std::string::npos) {
      v.attrs[size_t(i)] |= kTokenAttrUnused;
    }
  }
  build_eog_set(v, fim_pad, fim_rep, fim_sep);
  if (v.pre.spm_style) {
    // Gemma 4 writes its thinking and tool calls with these tokens; llama.cpp's server keeps them
    // in the output (preserved tokens) so its chat parser can see them. They render here without
    // render_special too (tokenization is unchanged: they stay control tokens).
    for (const int32_t id : ids_with_text(v, {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|\"|>"})) {
      v.attrs[size_t(id)] |= kTokenAttrRenderAlways;
    }
  }

  for (int32_t i = 0; i < n; ++i) {
    if (v.has_attr(i, kTokenAttrControl | kTokenAttrUserDefined | kTokenAttrUnknown)) v.special_tokens.push_back(i);
  }
  std::stable_sort(v.special_tokens.begin(), v.special_tokens.end(),
                   [&](int32_t a, int32_t b) { return v.texts[size_t(a)].size() > v.texts[size_t(b)].size(); });

  // Per-model strip attributes that llama.cpp sets by name (they are not stored in GGUF).
  SNIPER_ASSIGN_OR_RETURN(std::string name, file.get_string_or("general.name", ""));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  SNIPER_ASSIGN_OR_RETURN(const std::string arch, file.get_string_or("general.architecture", ""));
  const bool jina_mask =
      v.pre_name.find("jina-v2-de") != std::string::npos || v.pre_name.find("jina-v2-es") != std::string::npos ||
      v.pre_name.find("jina-v2-code") != std::string::npos || arch.find("nomic-bert-moe") != std::string::npos ||
      arch.find("jina-bert-v3") != std::string::npos;
  if (jina_mask) {
    set_attr(v, "<mask>", kTokenAttrLstrip, true);
  } else if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : v.special_tokens) v.attrs[size_t(id)] |= kTokenAttrRstrip;
    set_attr(v, "</s>", kTokenAttrRstrip, true);
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(v, text, kTokenAttrRstrip, false);
  } else if (name.find("modern-bert") != std::string::npos) {
    set_attr(v, "[MASK]", kTokenAttrLstrip, true);
  }
  return v;
}

}  // namespace sniper
