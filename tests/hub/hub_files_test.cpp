// SPDX-License-Identifier: MIT
// The hub naming rules without a server: REPO[:QUANT|FILE] parsing, quant tags and split parts
// in file names, choice grouping and selection (tag, file, default, budget), the tree listing
// and Link header parsers, HF_* environment, the store's foreign cache paths, and the checks of
// hub-provided names, sizes and URLs (issue 40 findings 4 and 10).
// tests/js/pull_test.mjs covers the transfers against a loopback hub.
#include <gtest/gtest.h>

#include <map>

#include "hub/hub_client.h"
#include "hub/hub_files.h"
#include "hub/model_store.h"

namespace sniper::hub {
namespace {

std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

const std::string kSha(64, 'a');

TEST(RepoRef, ParsesRepoTagAndFile) {
  auto a = parse_repo_ref("unsloth/Qwen3-30B-A3B-GGUF:UD-IQ2_M");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->repo, "unsloth/Qwen3-30B-A3B-GGUF");
  EXPECT_EQ(a->tag, "UD-IQ2_M");
  EXPECT_EQ(a->file, "");
  auto b = parse_repo_ref("o/n:sub/M-Q4_0.gguf");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->file, "sub/M-Q4_0.gguf");
  EXPECT_EQ(b->tag, "");
  auto c = parse_repo_ref("o/n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->display(), "o/n");
}

TEST(RepoRef, RejectsMalformedByName) {
  for (const char* bad :
       {"noslash", "/n", "o/", "a/b/c", "o/n:", "o/n:../x.gguf", "o/n:/abs.gguf", "o/../n", "o/n:Q4 K", "o n/x"}) {
    auto r = parse_repo_ref(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(FileNames, SplitInfoAndQuantTag) {
  SplitInfo s = split_info("dir/Model-Q4_K_M-00002-of-00003.gguf");
  EXPECT_EQ(s.prefix, "dir/Model-Q4_K_M");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(split_part_path(s.prefix, 3, 3), "dir/Model-Q4_K_M-00003-of-00003.gguf");
  SplitInfo u = split_info("Model-Q8_0.gguf");
  EXPECT_EQ(u.count, 1);
  EXPECT_EQ(u.prefix, "Model-Q8_0");
  EXPECT_EQ(quant_tag("Model-Q4_K_M-00002-of-00003.gguf"), "Q4_K_M");
  EXPECT_EQ(quant_tag("Qwen3-30B-A3B-UD-IQ2_M.gguf"), "UD-IQ2_M");
  EXPECT_EQ(quant_tag("model.q8_0.gguf"), "Q8_0");
  EXPECT_EQ(quant_tag("model.gguf"), "");
  EXPECT_TRUE(is_model_file("a/M-Q4_0.gguf"));
  EXPECT_FALSE(is_model_file("mmproj-M-F16.gguf"));
  EXPECT_FALSE(is_model_file("M.imatrix.gguf"));
  EXPECT_FALSE(is_model_file("README.md"));
}

std::vector<HubFile> sample_repo() {
  return {
      {"README.md", 100, ""},
      {"M-Q8_0.gguf", 8000, kSha},
      {"M-Q2_K.gguf", 2000, kSha},
      {"Q4_K_M/M-Q4_K_M-00001-of-00002.gguf", 2500, kSha},
      {"Q4_K_M/M-Q4_K_M-00002-of-00002.gguf", 2500, kSha},
      {"M-UD-IQ2_M.gguf", 1800, kSha},
      {"mmproj-F16.gguf", 500, kSha},
      {"broken-Q5_K-00001-of-00002.gguf", 10, kSha},  // part 2 missing: not a choice
  };
}

TEST(Select, SplitSetsAreOneChoice) {
  const auto choices = model_choices(sample_repo());
  ASSERT_EQ(choices.size(), 4u);
  EXPECT_EQ(choices[2].files.size(), 2u);
  EXPECT_EQ(choices[2].tag, "Q4_K_M");
  EXPECT_EQ(choices[2].total_bytes(), 5000u);
  EXPECT_EQ(list_tags(choices), "Q8_0, Q2_K, Q4_K_M, UD-IQ2_M");
}

TEST(Select, ByTagCaseInsensitive) {
  auto ref = parse_repo_ref("o/n:q4_k_m");
  auto s = select_model(sample_repo(), *ref, 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->choice.files.size(), 2u);
  EXPECT_EQ(s->choice.files[1].path, "Q4_K_M/M-Q4_K_M-00002-of-00002.gguf");
  auto ud = select_model(sample_repo(), *parse_repo_ref("o/n:UD-IQ2_M"), 0);
  ASSERT_TRUE(ud.ok());
  EXPECT_EQ(ud->choice.first_path(), "M-UD-IQ2_M.gguf");
  // The llama.cpp substring rule: "IQ2_M" followed by '.' matches the UD file.
  auto sub = select_model(sample_repo(), *parse_repo_ref("o/n:IQ2_M"), 0);
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->choice.first_path(), "M-UD-IQ2_M.gguf");
}

TEST(Select, UnknownTagListsTheTags) {
  auto s = select_model(sample_repo(), *parse_repo_ref("o/n:Q3_K_S"), 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("Q3_K_S"), std::string::npos);
  EXPECT_NE(s.error().message.find("Q8_0, Q2_K, Q4_K_M, UD-IQ2_M"), std::string::npos) << s.error().message;
}

TEST(Select, ByFileTakesTheWholeSplitSet) {
  auto s = select_model(sample_repo(), *parse_repo_ref("o/n:Q4_K_M/M-Q4_K_M-00002-of-00002.gguf"), 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->choice.files.size(), 2u);
  auto missing = select_model(sample_repo(), *parse_repo_ref("o/n:nope.gguf"), 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("M-Q8_0.gguf"), std::string::npos);
}

TEST(Select, NoTagPrefersQ4KMThenLargestThatFitsThenSmallest) {
  auto ref = *parse_repo_ref("o/n");
  auto a = select_model(sample_repo(), ref, 1000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->choice.tag, "Q4_K_M");
  std::vector<HubFile> no_q4 = sample_repo();
  no_q4.erase(no_q4.begin() + 3, no_q4.begin() + 5);
  auto b = select_model(no_q4, ref, 3000);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->choice.tag, "Q2_K");  // 2000 fits, 8000 does not; largest that fits
  EXPECT_NE(b->reason.find("fits"), std::string::npos);
  auto c = select_model(no_q4, ref, 100);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->choice.tag, "UD-IQ2_M");  // nothing fits: the smallest
  EXPECT_NE(c->reason.find("stream"), std::string::npos);
  auto none = select_model({{"README.md", 1, ""}}, ref, 100);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no GGUF"), std::string::npos);
}

TEST(TreeListing, ParsesFilesAndLfs) {
  const std::string json = R"([
    {"type":"directory","oid":"x","size":0,"path":"Q4_K_M"},
    {"type":"file","oid":"b","size":134,"path":"Q4_K_M/a.gguf","lfs":{"oid":")" +
                           kSha + R"(","size":4096,"pointerSize":134}},
    {"type":"file","oid":"c","size":12,"path":"README.md"}])";
  auto files = parse_tree_listing(json);
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "Q4_K_M/a.gguf");
  EXPECT_EQ((*files)[0].size, 4096u);
  EXPECT_EQ((*files)[0].sha256, kSha);
  EXPECT_EQ((*files)[1].sha256, "");
  for (const char* bad : {"{}", "[1]", R"([{"type":"file","path":"a"}])", R"([{"type":"file","path":"../a","size":1}])",
                          R"([{"type":"file","path":"a","size":1,"lfs":{"oid":"xyz"}}])", "not json"}) {
    EXPECT_FALSE(parse_tree_listing(bad).ok()) << bad;
  }
}

TEST(TreeListing, NextLink) {
  EXPECT_EQ(parse_next_link(R"(<https://h/api/x?cursor=abc>; rel="next")"), "https://h/api/x?cursor=abc");
  EXPECT_EQ(parse_next_link(R"(<https://h/p>; rel="prev", <https://h/n>; rel="next")"), "https://h/n");
  EXPECT_EQ(parse_next_link(""), "");
  EXPECT_EQ(parse_next_link(R"(<https://h/p>; rel="prev")"), "");
}

TEST(Env, EndpointTokenAndHome) {
  auto c = hub_config_from_env(env_of({{"HF_ENDPOINT", "http://127.0.0.1:9/"}, {"HF_TOKEN", "t"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9");
  EXPECT_EQ(c->token, "t");
  auto d = hub_config_from_env(env_of({}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->endpoint, "https://huggingface.co");
  EXPECT_FALSE(hub_config_from_env(env_of({{"HF_ENDPOINT", "ftp://x"}})).ok());
  EXPECT_EQ(*sniper_home(env_of({{"SNIPER_HOME", "/s"}, {"HOME", "/h"}})), "/s");
  EXPECT_EQ(*sniper_home(env_of({{"HOME", "/h"}})), "/h/.cache/sniper");
  EXPECT_FALSE(sniper_home(env_of({})).ok());
}

// Issue 40 finding 10: hub-provided names and sizes are checked before use, and shown escaped.
TEST(HubNames, UnsafePathsAreRefusedAndShownEscaped) {
  for (const char* ok : {"a.gguf", "Q4_K_M/a.gguf", "dir/sub/model-00001-of-00002.gguf", "a..b.gguf", ".hidden"}) {
    EXPECT_TRUE(check_hub_path(ok).ok()) << ok;
  }
  const std::string nul("evil\0.gguf", 10);
  auto r = check_hub_path(nul);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("evil\\x00.gguf"), std::string::npos) << r.error().message;  // not cut at NUL
  for (const char* bad : {"", "/etc/passwd.gguf", "../x.gguf", "a/../../x.gguf", "a//b.gguf", "./a.gguf", "a/.",
                          "a\\b.gguf", "a\nb.gguf", "a\x1b[2Jb.gguf", "a\x7f.gguf"}) {
    EXPECT_FALSE(check_hub_path(bad).ok()) << printable(bad);
  }
  auto abs = check_hub_path("/srv/hub/private/weights.gguf");
  ASSERT_FALSE(abs.ok());
  EXPECT_EQ(abs.error().message.find("/srv"), std::string::npos) << "absolute server paths are not shown";
  EXPECT_EQ(printable(std::string("a\0b\x1b\\\xff", 6)), "a\\x00b\\x1b\\x5c\\xff");
  EXPECT_EQ(printable(std::string(500, 'x'), 10), std::string(10, 'x') + "...");
  // Through the listing: the entry index and the escaped name.
  auto listing = parse_tree_listing(R"([{"type":"file","path":"a\u0000b.gguf","size":1}])");
  ASSERT_FALSE(listing.ok());
  EXPECT_NE(listing.error().message.find("a\\x00b.gguf"), std::string::npos) << listing.error().message;
}

TEST(HubSizes, SumsNeverWrap) {
  // Two split parts of 2^63 bytes each summed to 0 and passed the free-space check.
  auto huge = parse_tree_listing(R"([{"type":"file","path":"m-00001-of-00002.gguf","size":9223372036854775808}])");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("largest file size"), std::string::npos) << huge.error().message;
  ModelChoice c;
  c.files = {{"a", uint64_t{1} << 62, ""},
             {"b", uint64_t{1} << 62, ""},
             {"c", uint64_t{1} << 62, ""},
             {"d", uint64_t{1} << 62, ""}};
  EXPECT_EQ(c.total_bytes(), UINT64_MAX);  // 2^64 saturates
  c.files.pop_back();
  EXPECT_EQ(c.total_bytes(), 3 * (uint64_t{1} << 62));
}

TEST(HubUrls, OriginsAndEndpoints) {
  EXPECT_EQ(url_origin("https://HuggingFace.co/api/x?y=1"), "https://huggingface.co:443");
  EXPECT_EQ(url_origin("http://127.0.0.1:9/a"), "http://127.0.0.1:9");
  EXPECT_NE(url_origin("http://127.0.0.1:9/a"), url_origin("http://127.0.0.1:10/a"));
  EXPECT_NE(url_origin("https://h/a"), url_origin("http://h:443/a"));
  EXPECT_EQ(url_origin("not a url"), "");
  EXPECT_EQ(url_scheme("gopher://x/"), "gopher");
  EXPECT_EQ(url_scheme("FILE:///etc/passwd"), "file");
  for (const char* bad :
       {"https://user:pw@h", "https://h/?q=1", "https://h/#f", "file:///x", "gopher://h", "https://", "httpsx://h"}) {
    EXPECT_FALSE(hub_config_from_env(env_of({{"HF_ENDPOINT", bad}})).ok()) << bad;
  }
}

TEST(Store, ForeignCacheCandidatesIncludeLlamaCppFlatLayout) {
  auto paths = foreign_cache_candidates("o/n", "sub/M-Q4_0.gguf", env_of({{"HOME", "/nonexistent-home"}}));
  ASSERT_EQ(paths.size(), 1u);  // no hub snapshot directories exist there
  EXPECT_EQ(paths[0], "/nonexistent-home/.cache/llama.cpp/o_n_M-Q4_0.gguf");
}

// The projector beside a model, as llama.cpp's find_best_sibling picks it (common/download.cpp).
TEST(Sibling, QuantBitsAsLlamaCppReadsThem) {
  EXPECT_EQ(quant_bits("m-Q4_K_M.gguf"), 4);
  EXPECT_EQ(quant_bits("dir/mmproj-model-f16.gguf"), 16);
  EXPECT_EQ(quant_bits("m.BF16.gguf"), 16);
  EXPECT_EQ(quant_bits("Qwen3-30B-UD-IQ2_M-00001-of-00003.gguf"), 2);
  EXPECT_EQ(quant_bits("mmproj.gguf"), 0);
  EXPECT_EQ(quant_bits("m-Q8_0.bin"), 0);
  EXPECT_EQ(quant_bits("m-Q99999999999999999999.gguf"), 999999999);  // bounded, no overflow
}

TEST(Sibling, PicksTheDeepestDirectoryThenTheClosestQuant) {
  auto pick = [](const std::vector<std::string>& paths, const std::string& model, const std::string& tag = "") {
    std::vector<HubFile> files;
    for (const std::string& p : paths) files.push_back({p, 1, ""});
    auto best = find_best_sibling(files, model, "mmproj", tag);
    return best ? best->path : std::string("none");
  };
  // Closest bits to the model's (Q4 -> F16 is 12 away, Q8_0 4 away); listing order breaks ties.
  EXPECT_EQ(pick({"mmproj-F16.gguf", "mmproj-Q8_0.gguf", "m-Q4_K_M.gguf"}, "m-Q4_K_M.gguf"), "mmproj-Q8_0.gguf");
  EXPECT_EQ(pick({"mmproj-a-F16.gguf", "mmproj-b-F16.gguf"}, "m-Q4_K_M.gguf"), "mmproj-a-F16.gguf");
  // The model's own directory beats one above it, whatever the bits; a deeper or other directory
  // never qualifies.
  EXPECT_EQ(pick({"mmproj-Q4_K.gguf", "Q4/mmproj-F32.gguf", "Q4/x/mmproj-Q4_K.gguf", "Q8/mmproj-Q4_K.gguf"},
                 "Q4/m-Q4_K_M.gguf"),
            "Q4/mmproj-F32.gguf");
  EXPECT_EQ(pick({"sub/mmproj-F16.gguf"}, "m-Q4_K_M.gguf"), "none");
  // Only .gguf files holding the keyword.
  EXPECT_EQ(pick({"mmproj-F16.bin", "model-F16.gguf", "README.md"}, "m-Q4_K_M.gguf"), "none");
  // With a tag: "-TAG." in the name first, then the closest bits to the tag's.
  EXPECT_EQ(pick({"mmproj-Q8_0.gguf", "mmproj-q4_k_m.gguf"}, "m-Q4_K_M.gguf", "Q4_K_M"), "mmproj-q4_k_m.gguf");
  EXPECT_EQ(pick({"mmproj-F16.gguf", "mmproj-Q8_0.gguf"}, "m-F16.gguf", "Q6_K"), "mmproj-Q8_0.gguf");
}

}  // namespace
}  // namespace sniper::hub
