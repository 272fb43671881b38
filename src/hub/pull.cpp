// SPDX-License-Identifier: MIT
#include "hub/pull.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "remote/sha256.h"

namespace sniper::hub {

namespace fs = std::filesystem;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void say(const PullOptions& o, const std::string& line) {
  if (o.log) o.log(line);
}

uint64_t size_or_zero(const std::string& path) {
  std::error_code ec;
  const uint64_t n = fs::file_size(path, ec);  // follows symbolic links
  return ec ? 0 : n;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// Makes `final_path` name the verified file at `source`: a hard link, else a symbolic link.
Status link_into_store(const std::string& source, const std::string& final_path) {
  SNIPER_TRY(ModelStore::make_parent_dirs(final_path));
  std::error_code ec;
  fs::remove(final_path, ec);
  if (::link(source.c_str(), final_path.c_str()) == 0) return ok_status();
  const int link_errno = errno;
  fs::create_symlink(fs::absolute(source), final_path, ec);
  if (ec) {
    return make_error("cannot link '%s' to '%s': %s (hard link: %s)", final_path.c_str(), source.c_str(),
                      ec.message().c_str(), std::strerror(link_errno));
  }
  return ok_status();
}

// Looks for `f` in the other caches; on a verified hit links it into the store.
Result<bool> reuse_foreign(const HubFile& f, const std::string& repo, const std::string& final_path,
                           const PullOptions& o) {
  for (const std::string& candidate : foreign_cache_candidates(repo, f.path, o.getenv_fn)) {
    if (!exists(candidate) || size_or_zero(candidate) != f.size) continue;
    if (!f.sha256.empty()) {
      say(o, "checking " + candidate + " (" + format_bytes(f.size) + ") from another cache");
      auto sha = sha256_file(candidate);
      if (!sha.ok() || *sha != f.sha256) {
        say(o, "  not reused: " + std::string(sha.ok() ? "its SHA-256 differs from the hub's" : sha.error().message));
        continue;
      }
    }
    SNIPER_TRY(link_into_store(candidate, final_path));
    say(o, "reused " + f.path + " from " + candidate +
               (f.sha256.empty() ? " (size checked; the hub lists no SHA-256)" : " (SHA-256 verified)"));
    return true;
  }
  return false;
}

// Downloads one file into its part with the bounded retry, verifies it and renames it.
Status fetch_file(HubClient& client, const std::string& repo, const HubFile& f, const std::string& part,
                  const std::string& final_path, const PullOptions& o, PullResult* result) {
  double delay_s = o.retry_delay_s;
  DownloadResult got;
  for (int attempt = 0;; ++attempt) {
    const uint64_t before = size_or_zero(part);
    const double t0 = now_s();
    auto r = client.download(repo, f.path, part, f.size, o.progress);
    result->download_s += now_s() - t0;
    const uint64_t after = size_or_zero(part);
    if (r.ok()) {
      got = std::move(r).value();
      result->downloaded_bytes += got.bytes - got.resumed_from;
      if (got.resumed_from > 0 && attempt == 0) {
        say(o, "resumed " + f.path + " from byte " + std::to_string(got.resumed_from) +
                   " of the earlier partial download");
      }
      break;
    }
    if (after > before) result->downloaded_bytes += after - before;
    if (!client.retryable() || attempt >= o.max_retries) {
      if (client.retryable()) {
        return make_error(
            "%s; gave up after %d attempt(s): the partial download (%s of %s) is kept in '%s' and the "
            "next pull resumes it",
            r.error().message.c_str(), attempt + 1, format_bytes(after).c_str(), format_bytes(f.size).c_str(),
            part.c_str());
      }
      return r.error();
    }
    say(o, r.error().message + "; retrying in " + std::to_string(static_cast<int>(delay_s)) +
               " s, resuming from byte " + std::to_string(after) + " (attempt " + std::to_string(attempt + 2) + " of " +
               std::to_string(o.max_retries + 1) + ")");
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
    delay_s *= 2;
  }
  if (f.sha256.empty()) {
    say(o, "note: the hub lists no SHA-256 for " + f.path + " (not an LFS file): only its size was checked");
  } else if (got.sha256 != f.sha256) {
    std::error_code ec;
    fs::remove(part, ec);
    return make_error(
        "checksum mismatch for %s: the hub's LFS SHA-256 is %s but the downloaded bytes hash to %s; the "
        "download was deleted (run the pull again; if it repeats, the hub or a proxy serves bad data)",
        f.path.c_str(), f.sha256.c_str(), got.sha256.c_str());
  }
  std::error_code ec;
  fs::rename(part, final_path, ec);
  if (ec) return make_error("cannot rename '%s' to '%s': %s", part.c_str(), final_path.c_str(), ec.message().c_str());
  return ok_status();
}

}  // namespace

Result<PullResult> pull_model(HubClient& client, const ModelStore& store, const RepoRef& ref, const PullOptions& o) {
  SNIPER_ASSIGN_OR_RETURN(std::vector<HubFile> files, client.list_files(ref.repo));
  PullResult result;
  SNIPER_ASSIGN_OR_RETURN(result.selection, select_model(files, ref, o.budget_bytes));
  const ModelChoice& choice = result.selection.choice;
  say(o, ref.repo + ": " + result.selection.reason + " -> " + choice.first_path() +
             (choice.files.size() > 1 ? " (" + std::to_string(choice.files.size()) + " split parts)" : "") + ", " +
             format_bytes(choice.total_bytes()));

  std::vector<const HubFile*> wanted;
  for (const HubFile& f : choice.files) {
    wanted.push_back(&f);
    result.paths.push_back(store.file_path(ref.repo, f.path));
  }
  std::optional<HubFile> mmproj;
  if (o.with_mmproj) mmproj = find_best_sibling(files, choice.first_path(), "mmproj");
  if (mmproj) {
    say(o, "projector: " + mmproj->path + ", " + format_bytes(mmproj->size));
    wanted.push_back(&*mmproj);
    result.mmproj_path = store.file_path(ref.repo, mmproj->path);
  }
  // What must still come over the network, after the store and the other caches.
  std::vector<const HubFile*> to_fetch;
  for (const HubFile* fp : wanted) {
    const HubFile& f = *fp;
    const std::string final_path = store.file_path(ref.repo, f.path);
    if (exists(final_path) && size_or_zero(final_path) == f.size) {
      say(o, f.path + " is already in the store");
      continue;
    }
    SNIPER_ASSIGN_OR_RETURN(bool reused, reuse_foreign(f, ref.repo, final_path, o));
    if (!reused) to_fetch.push_back(&f);
  }
  if (to_fetch.empty()) return result;

  uint64_t need = 0;
  for (const HubFile* f : to_fetch) {
    const uint64_t have = size_or_zero(store.part_path(ref.repo, f->path));
    // Sizes come from the hub: their sum is checked, never wrapped past 2^64.
    if (__builtin_add_overflow(need, f->size - std::min(have, f->size), &need)) {
      return make_error(
          "the files of %s add up to more than 2^64 bytes (the hub lists sizes no disk can hold); refused",
          ref.display().c_str());
    }
  }
  SNIPER_ASSIGN_OR_RETURN(uint64_t free_bytes, free_disk_bytes(store.repo_dir(ref.repo)));
  if (free_bytes < need) {
    return make_error(
        "not enough disk space for %s in '%s': %s still to download but only %s free (free some space "
        "or set SNIPER_HOME to a larger disk)",
        ref.display().c_str(), store.home().c_str(), format_bytes(need).c_str(), format_bytes(free_bytes).c_str());
  }
  int index = 0;
  for (const HubFile* f : to_fetch) {
    ++index;
    const std::string final_path = store.file_path(ref.repo, f->path);
    const std::string part = store.part_path(ref.repo, f->path);
    SNIPER_TRY(ModelStore::make_parent_dirs(part));
    if (o.on_file_start) o.on_file_start(f->path, index, static_cast<int>(to_fetch.size()));
    Status st = fetch_file(client, ref.repo, *f, part, final_path, o, &result);
    if (o.on_file_end) o.on_file_end(f->path, st.ok());
    if (!st.ok()) return st.error();
  }
  return result;
}

Result<PullResult> resolve_local(const ModelStore& store, const RepoRef& ref, uint64_t budget_bytes, bool with_mmproj) {
  SNIPER_ASSIGN_OR_RETURN(std::vector<StoreEntry> entries, store.list());
  std::vector<HubFile> files;
  for (const StoreEntry& e : entries) {
    if (e.repo == ref.repo && !e.partial) files.push_back({e.file, e.size, ""});
  }
  if (files.empty()) return make_error("the store has no files of %s", ref.repo.c_str());
  PullResult result;
  SNIPER_ASSIGN_OR_RETURN(result.selection, select_model(files, ref, budget_bytes));
  for (const HubFile& f : result.selection.choice.files) result.paths.push_back(store.file_path(ref.repo, f.path));
  if (with_mmproj) {
    auto mmproj = find_best_sibling(files, result.selection.choice.first_path(), "mmproj");
    if (mmproj) result.mmproj_path = store.file_path(ref.repo, mmproj->path);
  }
  return result;
}

}  // namespace sniper::hub
