// SPDX-License-Identifier: MIT
#include "args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sniper::cli {

Result<Args> Args::parse(const std::string& command, int argc, char** argv, int first,
                         const std::vector<FlagSpec>& specs) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-' || a == "--") {
      if (a == "--") {
        for (++i; i < argc; ++i) args.positionals_.push_back(argv[i]);
        break;
      }
      args.positionals_.push_back(a);
      continue;
    }
    std::string inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (a == s.name || (s.short_name != nullptr && a == s.short_name)) spec = &s;
    }
    if (spec == nullptr) {
      return make_error("unknown flag '%s' for 'sniper %s' (see 'sniper %s --help')", a.c_str(), command.c_str(),
                        command.c_str());
    }
    if (spec->value_name == nullptr) {
      if (has_inline) return make_error("flag %s takes no value", spec->name);
      args.values_[spec->name] = "1";
      continue;
    }
    if (has_inline) {
      args.values_[spec->name] = inline_value;
    } else {
      if (i + 1 >= argc) return make_error("flag %s needs a value (%s)", spec->name, spec->value_name);
      args.values_[spec->name] = argv[++i];
    }
    args.all_values_[spec->name].push_back(args.values_[spec->name]);
  }
  return args;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>() : it->second;
}

std::string Args::get_string(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

Result<int64_t> Args::get_int(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') {
    return make_error("%s is '%s' but must be an integer in [%lld, %lld]", name.c_str(), s, static_cast<long long>(lo),
                      static_cast<long long>(hi));
  }
  if (v < lo || v > hi) {
    return make_error("%s is %lld but must be in [%lld, %lld]", name.c_str(), v, static_cast<long long>(lo),
                      static_cast<long long>(hi));
  }
  return static_cast<int64_t>(v);
}

Result<double> Args::get_float(const std::string& name, double fallback, double lo, double hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v)) {
    return make_error("%s is '%s' but must be a number in [%g, %g]", name.c_str(), s, lo, hi);
  }
  if (v < lo || v > hi) return make_error("%s is %g but must be in [%g, %g]", name.c_str(), v, lo, hi);
  return v;
}

void print_usage(const std::string& command, const std::string& synopsis, const std::vector<FlagSpec>& specs) {
  std::printf("usage: sniper %s %s\n\n", command.c_str(), synopsis.c_str());
  for (const FlagSpec& s : specs) {
    std::string left = s.short_name ? std::string(s.short_name) + ", " + s.name : std::string("    ") + s.name;
    if (s.value_name) left += std::string(" ") + s.value_name;
    std::printf("  %-28s %s\n", left.c_str(), s.help);
  }
}

}  // namespace sniper::cli
