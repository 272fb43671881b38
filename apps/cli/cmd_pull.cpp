// SPDX-License-Identifier: MIT
// `sniper pull REPO[:QUANT|FILE]`, `sniper list` and `sniper rm REPO[:QUANT|FILE]`: the local
// model store (src/hub/model_store.h gives its layout).
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>

#include "commands.h"
#include "common.h"
#include "engine/plan.h"
#include "hub/hub_files.h"
#include "hub/model_store.h"
#include "hub_model.h"

namespace sniper::cli {

namespace fs = std::filesystem;

int cmd_pull(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--mem", nullptr, "SIZE|auto", "memory budget the no-tag choice must fit (default auto)"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("pull", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  const std::string description =
      "Downloads a GGUF model from a Hugging Face-compatible hub (HF_ENDPOINT, default https://huggingface.co; "
      "HF_TOKEN for gated repositories) into the store ($SNIPER_HOME, default ~/.cache/sniper), resuming an "
      "interrupted download and verifying its SHA-256. Without a tag: Q4_K_M, else the largest file that fits --mem. "
      "Prints the model's path.";
  if (args->has("--help")) {
    print_usage("pull", "REPO[:QUANT|:FILE.gguf] [--mem SIZE|auto]", specs, description);
    return 0;
  }
  if (args->positionals().empty()) {
    return fail(make_error("pull takes one REPO[:QUANT|:FILE.gguf], e.g. sniper pull Qwen/Qwen3-8B-GGUF:Q4_K_M"));
  }
  if (Status st = args->check_positionals(1, "one REPO[:QUANT|:FILE.gguf]"); !st.ok()) return fail(st.error());
  HubPullRequest request;
  request.ref = args->positionals()[0];
  auto budget = resolve_memory_budget(args->get_string("--mem", "auto"));
  if (!budget.ok()) return fail(budget.error());
  request.budget_bytes = *budget;
  const double t0 = now_s();
  auto pulled = pull_with_progress(request);
  if (!pulled.ok()) return fail(pulled.error());
  const double wall = now_s() - t0;
  if (pulled->downloaded_bytes > 0) {
    std::fprintf(stderr, "downloaded %s in %.1f s (%.1f MB/s)\n", hub::format_bytes(pulled->downloaded_bytes).c_str(),
                 wall,
                 pulled->download_s > 0 ? static_cast<double>(pulled->downloaded_bytes) / pulled->download_s / 1e6 : 0);
  }
  std::printf("%s\n", pulled->paths.front().c_str());
  return 0;
}

int cmd_list(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--paths", nullptr, nullptr, "add a column with each file's full path"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("list", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("list", "[--paths]", specs,
                "Lists the models in the store ($SNIPER_HOME, default ~/.cache/sniper): each by the name that the "
                "other commands take (OWNER/NAME:QUANT), its size and its file. A split set is one row.");
    return 0;
  }
  if (Status st = args->check_positionals(0, ""); !st.ok()) return fail(st.error());
  auto home = hub::sniper_home();
  if (!home.ok()) return fail(home.error());
  hub::ModelStore store(*home);
  auto entries = store.list();
  if (!entries.ok()) return fail(entries.error());
  if (entries->empty()) {
    std::printf("no models in %s (get one with: sniper pull OWNER/NAME[:QUANT])\n", store.home().c_str());
    return 0;
  }
  // One row per model file, the parts of a split set together (entries come sorted by repository
  // then file, so a set's parts are adjacent).
  struct Row {
    std::string name, file, path, note;
    uint64_t size = 0;
    int parts = 0;
    bool partial = false;
  };
  std::vector<Row> rows;
  for (const hub::StoreEntry& e : *entries) {
    const hub::SplitInfo split = hub::split_info(e.file);
    const std::string key = e.repo + ":" + (split.count > 1 ? split.prefix : e.file);
    if (!rows.empty() && split.count > 1 && rows.back().name == key && rows.back().parts > 0) {
      Row& r = rows.back();
      r.size += e.size;
      ++r.parts;
      r.partial = r.partial || e.partial;
      continue;
    }
    Row r;
    r.name = key;
    r.file = e.file;
    r.path = e.path;
    r.size = e.size;
    r.parts = split.count > 1 ? 1 : 0;
    r.partial = e.partial;
    if (!e.link_target.empty()) r.note = "linked to " + e.link_target;
    rows.push_back(r);
  }
  std::vector<std::vector<std::string>> table = {{"NAME", "SIZE", "FILE"}};
  if (args->has("--paths")) table[0].push_back("PATH");
  for (Row& r : rows) {
    // The name the commands take: OWNER/NAME:QUANT when the tag picks this file, else the file.
    const size_t colon = r.name.find(':');
    const std::string repo = r.name.substr(0, colon);
    const std::string tag = hub::quant_tag(r.file);
    std::string file = r.file;
    if (r.parts > 0) {
      const hub::SplitInfo split = hub::split_info(r.file);
      file += " (" + std::to_string(r.parts) + " of " + std::to_string(split.count) + " parts)";
    }
    if (r.partial) file += " (partial download)";
    if (!r.note.empty()) file += " (" + r.note + ")";
    std::vector<std::string> row = {repo + ":" + (tag.empty() ? r.file : tag), hub::format_bytes(r.size), file};
    if (args->has("--paths")) row.push_back(r.path);
    table.push_back(row);
  }
  std::printf("store: %s/models\n", store.home().c_str());
  std::fputs(format_table(table, {1}).c_str(), stdout);
  return 0;
}

int cmd_rm(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {{"--help", "-h", nullptr, "show this help"}};
  auto args = Args::parse("rm", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  const std::string description =
      "Deletes a model from the store: every file of the repository, or those of one quant tag or file (all parts "
      "of a split set, and partial downloads). Copies in other caches are left alone.";
  if (args->has("--help")) {
    print_usage("rm", "REPO[:QUANT|:FILE.gguf]", specs, description);
    return 0;
  }
  if (args->positionals().empty())
    return fail(make_error("rm takes one REPO[:QUANT|:FILE.gguf] ('sniper list' names them)"));
  if (Status st = args->check_positionals(1, "one REPO[:QUANT|:FILE.gguf]"); !st.ok()) return fail(st.error());
  auto ref = hub::parse_repo_ref(args->positionals()[0]);
  if (!ref.ok()) return fail(ref.error());
  auto home = hub::sniper_home();
  if (!home.ok()) return fail(home.error());
  hub::ModelStore store(*home);
  auto entries = store.list();
  if (!entries.ok()) return fail(entries.error());
  std::vector<const hub::StoreEntry*> in_repo;
  for (const hub::StoreEntry& e : *entries) {
    if (e.repo == ref->repo) in_repo.push_back(&e);
  }
  if (in_repo.empty())
    return fail(make_error("the store (%s) has no files of %s", store.home().c_str(), ref->repo.c_str()));
  std::set<std::string> files;  // repository paths to delete
  if (ref->tag.empty() && ref->file.empty()) {
    for (const hub::StoreEntry* e : in_repo) files.insert(e->file);
  } else {
    // The same rules as pull (tag or file, split sets as one), over what the store holds.
    std::vector<hub::HubFile> listed;
    for (const hub::StoreEntry* e : in_repo) listed.push_back({e->file, e->size, ""});
    auto selection = hub::select_model(listed, *ref, 0);
    if (!selection.ok()) return fail(selection.error());
    for (const hub::HubFile& f : selection->choice.files) files.insert(f.path);
  }
  uint64_t freed = 0;
  int removed = 0;
  for (const hub::StoreEntry* e : in_repo) {
    if (files.count(e->file) == 0) continue;
    std::error_code ec;
    fs::remove(e->path, ec);
    if (ec) return fail(make_error("cannot delete '%s': %s", e->path.c_str(), ec.message().c_str()));
    // A link's bytes stay in the other cache; a hard link frees space only with its last name.
    if (e->link_target.empty()) freed += e->size;
    ++removed;
    std::printf("removed %s%s\n", e->path.c_str(), e->partial ? " (partial download)" : "");
  }
  // Drop the directories the deletion left empty, up to models/.
  const fs::path models_dir = fs::path(store.home()) / "models";
  for (const hub::StoreEntry* e : in_repo) {
    if (files.count(e->file) == 0) continue;
    for (fs::path dir = fs::path(e->path).parent_path(); dir.has_parent_path() && dir != models_dir;
         dir = dir.parent_path()) {
      std::error_code ec;
      if (!fs::is_empty(dir, ec) || ec) break;
      fs::remove(dir, ec);
    }
  }
  std::printf("%d file(s) of %s removed, %s freed\n", removed, ref->display().c_str(),
              hub::format_bytes(freed).c_str());
  return 0;
}

}  // namespace sniper::cli
