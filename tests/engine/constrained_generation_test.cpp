// SPDX-License-Identifier: MIT
// Grammar-constrained generation end to end on a synthetic random-weight Qwen3 model (the real
// Qwen2 BPE vocabulary, ~151k tokens, so tokens span several bytes, carry leading spaces and
// split UTF-8): Generator + Session with a JSON-schema grammar always ends on its own ("eog")
// with text that parses and validates, for several seeds, and stops with "length" (a prefix) when
// the token budget is too small.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/generator.h"
#include "engine/model.h"
#include "engine/session.h"
#include "golden/shared_dir.h"
#include "sampling/json_schema_grammar.h"
#include "synth/synth_model.h"
#include "synth/tiny_qwen3.h"

namespace sniper {
namespace {

using Json = nlohmann::ordered_json;

class ConstrainedGeneration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(::testing::TempDir() + "/sniper_constrained_qwen3.gguf");
    SynthSpec spec = test::tiny_qwen3_spec();
    spec.vocab_from = shared_dir() + "/tokenizer/ggml-vocab-qwen2.gguf";
    Status st = write_synth_model(spec, *path_, nullptr);
    ASSERT_TRUE(st.ok()) << st.error().message;
    ModelLoadOptions lo;
    lo.n_ctx = 1024;
    auto model = Model::load(*path_, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    model_ = std::move(model).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
    std::filesystem::remove(*path_);
    delete path_;
  }

  // Generates from a short prompt under `grammar`; returns the text and the finish reason.
  static std::pair<std::string, std::string> run(std::shared_ptr<const Grammar> grammar, uint64_t seed,
                                                 int64_t n_predict, std::shared_ptr<const TokenVocabulary> vocab) {
    auto tok = model_->tokenizer();
    EXPECT_TRUE(tok.ok());
    SessionOptions so;
    so.n_threads = 2;
    so.n_ctx = 1024;
    auto session = Session::create(*model_, so);
    EXPECT_TRUE(session.ok());
    GeneratorOptions go;
    go.n_predict = n_predict;
    go.sampler.temperature = 1.0f;
    go.sampler.seed = seed;
    go.grammar = std::move(grammar);
    go.grammar_vocab = std::move(vocab);
    auto gen = Generator::create(**tok, go);
    EXPECT_TRUE(gen.ok());
    const std::vector<int32_t> prompt = (*tok)->encode("Answer in JSON:", true, false);
    gen->accept_prompt(prompt);
    EXPECT_TRUE((*session)->eval(prompt).ok());
    std::string text;
    for (;;) {
      const auto& logits = (*session)->last_logits();
      GeneratorStep step =
          gen->step(logits.data(), static_cast<int32_t>(logits.size()), (*session)->n_past(), (*session)->n_ctx());
      text += step.text;
      if (step.done) return {text, step.finish_reason};
      const int32_t next[1] = {step.token};
      EXPECT_TRUE((*session)->eval(next).ok());
    }
  }

  static std::string* path_;
  static Model* model_;
};

std::string* ConstrainedGeneration::path_ = nullptr;
Model* ConstrainedGeneration::model_ = nullptr;

TEST_F(ConstrainedGeneration, SchemaOutputAlwaysParsesAndValidates) {
  const Json schema = Json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 6},
      "n": {"type": "integer"},
      "ok": {"type": "boolean"},
      "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2}
    },
    "required": ["name", "n", "ok"],
    "additionalProperties": false
  })");
  auto grammar = json_schema_grammar(schema);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  auto tok = model_->tokenizer();
  ASSERT_TRUE(tok.ok());
  const auto vocab = make_token_vocabulary(**tok);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const auto [text, reason] = run(*grammar, seed, 400, vocab);
    ASSERT_EQ(reason, "eog") << "seed " << seed << ": " << text;
    const Json v = Json::parse(text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << "seed " << seed << ": " << text;
    ASSERT_TRUE(v.is_object()) << text;
    ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << text;
    EXPECT_TRUE(v.contains("n") && v["n"].is_number_integer()) << text;
    EXPECT_TRUE(v.contains("ok") && v["ok"].is_boolean()) << text;
    size_t chars = 0;
    for (unsigned char c : v["name"].get<std::string>()) chars += (c & 0xC0) != 0x80;
    EXPECT_LE(chars, 6u) << text;
    if (v.contains("tags")) {
      ASSERT_TRUE(v["tags"].is_array() && v["tags"].size() <= 2) << text;
      for (const Json& t : v["tags"]) EXPECT_TRUE(t == "x" || t == "y") << text;
    }
    for (auto it = v.begin(); it != v.end(); ++it) EXPECT_TRUE(schema["properties"].contains(it.key())) << text;
  }
  // A budget too small for the object: cut, reported as "length".
  const auto [cut, reason] = run(*grammar, 9, 3, vocab);
  EXPECT_EQ(reason, "length") << cut;
  EXPECT_TRUE(Json::parse(cut, nullptr, false).is_discarded()) << cut;
}

}  // namespace
}  // namespace sniper
