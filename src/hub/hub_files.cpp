// SPDX-License-Identifier: MIT
#include "hub/hub_files.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

namespace sniper::hub {

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; }

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string RepoRef::display() const {
  if (!file.empty()) return repo + ":" + file;
  if (!tag.empty()) return repo + ":" + tag;
  return repo;
}

Result<RepoRef> parse_repo_ref(std::string_view text) {
  RepoRef ref;
  const std::string shown(text);
  const size_t colon = text.find(':');
  std::string_view repo = text.substr(0, colon);
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == repo.size() ||
      repo.find('/', slash + 1) != std::string_view::npos) {
    return make_error("'%s' is not a hub repository: expected OWNER/NAME[:QUANT|:FILE.gguf]", shown.c_str());
  }
  for (char c : repo) {
    if (c != '/' && !is_name_char(c)) {
      return make_error("'%s': the repository name may hold only letters, digits, '.', '_', '-' and one '/'",
                        shown.c_str());
    }
  }
  if (repo.find("..") != std::string_view::npos) {
    return make_error("'%s': '..' is not allowed in a repository name", shown.c_str());
  }
  ref.repo = std::string(repo);
  if (colon == std::string_view::npos) return ref;
  std::string_view rest = text.substr(colon + 1);
  if (rest.empty()) return make_error("'%s': nothing after ':' (expected a quant tag or a file name)", shown.c_str());
  if (ends_with(upper(rest), ".GGUF")) {
    for (char c : rest) {
      if (c != '/' && !is_name_char(c)) return make_error("'%s': bad character in the file name", shown.c_str());
    }
    if (rest.find("..") != std::string_view::npos || rest.front() == '/') {
      return make_error("'%s': the file name must be a relative path without '..'", shown.c_str());
    }
    ref.file = std::string(rest);
    return ref;
  }
  for (char c : rest) {
    if (!is_name_char(c))
      return make_error("'%s': a quant tag may hold only letters, digits, '.', '_' and '-'", shown.c_str());
  }
  ref.tag = std::string(rest);
  return ref;
}

SplitInfo split_info(std::string_view path) {
  SplitInfo info;
  std::string_view stem = path;
  if (ends_with(upper(stem), ".GGUF")) stem.remove_suffix(5);
  // "<prefix>-NNNNN-of-NNNNN", the digits exactly five each as gguf-split writes them.
  constexpr size_t kSuffix = 1 + 5 + 4 + 5;  // "-00001-of-00003"
  if (stem.size() > kSuffix) {
    std::string_view suffix = stem.substr(stem.size() - kSuffix);
    std::string_view idx = suffix.substr(1, 5);
    std::string_view of = suffix.substr(6, 4);
    std::string_view cnt = suffix.substr(10, 5);
    if (suffix[0] == '-' && upper(of) == "-OF-" && all_digits(idx) && all_digits(cnt)) {
      info.index = std::stoi(std::string(idx));
      info.count = std::stoi(std::string(cnt));
      stem.remove_suffix(kSuffix);
    }
  }
  info.prefix = std::string(stem);
  return info;
}

std::string split_part_path(const std::string& prefix, int index, int count) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-%05d-of-%05d.gguf", index, count);
  return prefix + buf;
}

std::string quant_tag(std::string_view path) {
  const SplitInfo info = split_info(basename(path));
  std::string_view stem = info.prefix;
  size_t end = stem.size();
  size_t start = end;
  while (start > 0 && (std::isalnum(static_cast<unsigned char>(stem[start - 1])) || stem[start - 1] == '_')) --start;
  if (start == end || start == 0 || (stem[start - 1] != '-' && stem[start - 1] != '.')) return "";
  std::string tag = upper(stem.substr(start));
  // Unsloth's dynamic quants: "UD-IQ2_M", "UD-Q4_K_XL".
  if (start >= 4 && upper(stem.substr(start - 3, 3)) == "UD-") tag = "UD-" + tag;
  return tag;
}

bool is_model_file(std::string_view path) {
  if (!ends_with(upper(path), ".GGUF")) return false;
  const std::string name(basename(path));
  for (const char* skip : {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"}) {
    if (name.find(skip) != std::string::npos) return false;
  }
  return true;
}

namespace {

// The bits at the first digit of `tag` ("Q4_K_M" -> 4), 0 when it holds none; at most 9 digits
// are read (a name cannot overflow it).
int bits_of_tag(std::string_view tag) {
  const size_t d = tag.find_first_of("0123456789");
  if (d == std::string_view::npos) return 0;
  int bits = 0;
  for (size_t i = d; i < tag.size() && i < d + 9 && std::isdigit(static_cast<unsigned char>(tag[i])); ++i)
    bits = bits * 10 + (tag[i] - '0');
  return bits;
}

std::vector<std::string_view> split_slash(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

}  // namespace

int quant_bits(std::string_view path) {
  // llama.cpp's get_gguf_split_info: the name without ".gguf" and the split suffix, then the tag
  // after the last '-' or '.'.
  if (!ends_with(path, ".gguf")) return 0;
  path.remove_suffix(5);
  const SplitInfo info = split_info(std::string(path) + ".gguf");
  std::string_view stem = info.prefix;
  size_t start = stem.size();
  while (start > 0 && (std::isalnum(static_cast<unsigned char>(stem[start - 1])) || stem[start - 1] == '_')) --start;
  if (start == stem.size() || start == 0 || (stem[start - 1] != '-' && stem[start - 1] != '.')) return 0;
  return bits_of_tag(stem.substr(start));
}

std::optional<HubFile> find_best_sibling(const std::vector<HubFile>& files, std::string_view model_path,
                                         std::string_view keyword, std::string_view tag) {
  const std::string tag_upper = upper(tag);
  const int model_bits = tag.empty() ? quant_bits(model_path) : bits_of_tag(tag_upper);
  const std::vector<std::string_view> model_parts = split_slash(model_path);
  const size_t model_dirs = model_parts.size() - 1;
  std::optional<HubFile> best;
  size_t best_depth = 0;
  int best_diff = 0;
  bool best_exact = false;
  for (const HubFile& f : files) {
    if (!ends_with(f.path, ".gguf") || f.path.find(keyword) == std::string::npos) continue;
    const std::vector<std::string_view> parts = split_slash(f.path);
    const size_t dirs = parts.size() - 1;
    // Its directory must be the model's or one above it on the model's path.
    if (dirs > model_dirs || !std::equal(parts.begin(), parts.begin() + static_cast<long>(dirs), model_parts.begin()))
      continue;
    const size_t depth = dirs;
    const int diff = std::abs(quant_bits(f.path) - model_bits);
    const bool exact = !tag_upper.empty() && upper(f.path).find("-" + tag_upper + ".") != std::string::npos;
    if (!best || depth > best_depth || (depth == best_depth && exact && !best_exact) ||
        (depth == best_depth && exact == best_exact && diff < best_diff)) {
      best = f;
      best_depth = depth;
      best_diff = diff;
      best_exact = exact;
    }
  }
  return best;
}

uint64_t ModelChoice::total_bytes() const {
  uint64_t n = 0;
  for (const HubFile& f : files) {
    if (__builtin_add_overflow(n, f.size, &n)) return UINT64_MAX;  // sizes from the hub: saturate
  }
  return n;
}

std::vector<ModelChoice> model_choices(const std::vector<HubFile>& files) {
  std::map<std::string, const HubFile*> by_path;
  for (const HubFile& f : files) by_path[f.path] = &f;
  std::vector<ModelChoice> out;
  for (const HubFile& f : files) {
    if (!is_model_file(f.path)) continue;
    const SplitInfo info = split_info(f.path);
    if (info.count <= 1) {
      out.push_back({{f}, quant_tag(f.path)});
      continue;
    }
    if (info.index != 1) continue;
    ModelChoice choice;
    choice.tag = quant_tag(f.path);
    bool complete = true;
    for (int i = 1; i <= info.count && complete; ++i) {
      auto it = by_path.find(split_part_path(info.prefix, i, info.count));
      if (it == by_path.end()) {
        complete = false;
      } else {
        choice.files.push_back(*it->second);
      }
    }
    if (complete) out.push_back(std::move(choice));
  }
  return out;
}

std::string list_tags(const std::vector<ModelChoice>& choices) {
  std::string out;
  std::set<std::string> seen;
  for (const ModelChoice& c : choices) {
    const std::string tag = c.tag.empty() ? std::string(basename(c.first_path())) : c.tag;
    if (!seen.insert(tag).second) continue;
    if (!out.empty()) out += ", ";
    out += tag;
  }
  return out.empty() ? "(none)" : out;
}

Result<Selection> select_model(const std::vector<HubFile>& files, const RepoRef& ref, uint64_t budget_bytes) {
  const std::vector<ModelChoice> choices = model_choices(files);
  if (!ref.file.empty()) {
    const SplitInfo want = split_info(ref.file);
    for (const ModelChoice& c : choices) {
      for (const HubFile& f : c.files) {
        if (f.path == ref.file || (want.count > 1 && split_info(f.path).prefix == want.prefix)) {
          return Selection{c, "file " + ref.file};
        }
      }
    }
    std::string names;
    for (const ModelChoice& c : choices) names += (names.empty() ? "" : ", ") + c.first_path();
    return make_error("%s has no model file '%s'; its model files: %s", ref.repo.c_str(), ref.file.c_str(),
                      names.empty() ? "(none)" : names.c_str());
  }
  if (choices.empty()) return make_error("%s holds no GGUF model file", ref.repo.c_str());
  if (!ref.tag.empty()) {
    const std::string want = upper(ref.tag);
    for (const ModelChoice& c : choices) {
      if (c.tag == want) return Selection{c, "tag " + c.tag};
    }
    for (const ModelChoice& c : choices) {
      const std::string path = upper(c.first_path());
      for (size_t at = path.find(want); at != std::string::npos; at = path.find(want, at + 1)) {
        const size_t end = at + want.size();
        if (end < path.size() && (path[end] == '.' || path[end] == '-')) {
          return Selection{c, "tag " + ref.tag + " matches " + std::string(basename(c.first_path()))};
        }
      }
    }
    return make_error("%s has no file with quant tag '%s'; tags that exist: %s", ref.repo.c_str(), ref.tag.c_str(),
                      list_tags(choices).c_str());
  }
  for (const ModelChoice& c : choices) {
    if (c.tag == "Q4_K_M") return Selection{c, "no tag given: Q4_K_M, the default"};
  }
  const ModelChoice* best_fit = nullptr;
  const ModelChoice* smallest = nullptr;
  for (const ModelChoice& c : choices) {
    if (smallest == nullptr || c.total_bytes() < smallest->total_bytes()) smallest = &c;
    if (c.total_bytes() <= budget_bytes && (best_fit == nullptr || c.total_bytes() > best_fit->total_bytes())) {
      best_fit = &c;
    }
  }
  if (best_fit != nullptr) {
    return Selection{*best_fit, "no tag given and no Q4_K_M: the largest file that fits the memory budget of " +
                                    format_bytes(budget_bytes) + " (" + format_bytes(best_fit->total_bytes()) + ")"};
  }
  return Selection{*smallest, "no tag given, no Q4_K_M and nothing fits the memory budget of " +
                                  format_bytes(budget_bytes) + ": the smallest file (" +
                                  format_bytes(smallest->total_bytes()) + "; it will stream from SSD)"};
}

std::string format_bytes(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", b / (1 << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", bytes);
  }
  return buf;
}

}  // namespace sniper::hub
