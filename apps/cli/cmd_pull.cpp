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
  const std::string synopsis =
      "REPO[:QUANT|:FILE.gguf]\n\nDownloads a GGUF model from a Hugging Face-compatible hub (HF_ENDPOINT, default "
      "https://huggingface.co; HF_TOKEN for gated repositories) into the store ($SNIPER_HOME, default "
      "~/.cache/sniper), resuming an interrupted download and verifying its SHA-256. Prints the model's path.";
  if (args->has("--help")) {
    print_usage("pull", synopsis, specs);
    return 0;
  }
  if (args->positionals().size() != 1) {
    print_usage("pull", synopsis, specs);
    return fail(make_error("pull takes exactly one REPO[:QUANT|:FILE.gguf]"));
  }
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
  const std::vector<FlagSpec> specs = {{"--help", "-h", nullptr, "show this help"}};
  auto args = Args::parse("list", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help") || !args->positionals().empty()) {
    print_usage("list", "\n\nLists the models in the store ($SNIPER_HOME, default ~/.cache/sniper).", specs);
    return args->has("--help") ? 0 : 1;
  }
  auto home = hub::sniper_home();
  if (!home.ok()) return fail(home.error());
  hub::ModelStore store(*home);
  auto entries = store.list();
  if (!entries.ok()) return fail(entries.error());
  if (entries->empty()) {
    std::printf("no models in %s (get one with: sniper pull OWNER/NAME[:QUANT])\n", store.home().c_str());
    return 0;
  }
  std::printf("%-36s %-48s %10s %-10s %s\n", "REPO", "FILE", "SIZE", "QUANT", "PATH");
  for (const hub::StoreEntry& e : *entries) {
    std::string where = e.path;
    if (!e.link_target.empty()) where += " -> " + e.link_target;
    std::string size = hub::format_bytes(e.size);
    if (e.partial) size += " (partial)";
    std::printf("%-36s %-48s %10s %-10s %s\n", e.repo.c_str(), e.file.c_str(), size.c_str(),
                e.tag.empty() ? "-" : e.tag.c_str(), where.c_str());
  }
  return 0;
}

int cmd_rm(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {{"--help", "-h", nullptr, "show this help"}};
  auto args = Args::parse("rm", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  const std::string synopsis =
      "REPO[:QUANT|:FILE.gguf]\n\nDeletes a model from the store: every file of the repository, or those of one quant "
      "tag or file (all parts of a split set, and partial downloads). Copies in other caches are left alone.";
  if (args->has("--help") || args->positionals().size() != 1) {
    print_usage("rm", synopsis, specs);
    return args->has("--help") ? 0 : 1;
  }
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
