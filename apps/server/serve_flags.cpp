// SPDX-License-Identifier: MIT
#include "server/serve_flags.h"

#include <algorithm>

#include "cli/common.h"

namespace sniper::server {

std::vector<cli::FlagSpec> serve_log_flags() {
  return cli::in_group(
      "Logging",
      {
          {"--log-format", nullptr, "text|json|off",
           "one line per request on stderr: client, method, route, model, status, tokens, time (default text; json: "
           "one object per line)"},
          {"--verbose", nullptr, nullptr,
           "also log the routes dashboards poll (/health, /metrics, /props, /v1/models, the page), with the user "
           "agent"},
      });
}

std::vector<cli::FlagSpec> serve_default_flags() {
  std::vector<cli::FlagSpec> defaults = cli::in_group(
      "Defaults for requests that leave a field out (each API's own otherwise)",
      {
          {"--temp", nullptr, "T", "temperature, [0, 2]", nullptr, "--temperature"},
          {"--top-k", nullptr, "K", "top-k, 0 = off"},
          {"--top-p", nullptr, "P", "top-p, (0, 1]"},
          {"--min-p", nullptr, "P", "min-p, [0, 1]"},
          {"--seed", "-s", "S", "random seed"},
          {"--repeat-penalty", nullptr, "X", "repetition penalty, [0.01, 10]"},
          {"--presence-penalty", nullptr, "X", "presence penalty, [-2, 2]"},
          {"--frequency-penalty", nullptr, "X", "frequency penalty, [-2, 2]"},
          {"--n-predict", "-n", "N", "most tokens per reply (max_tokens, num_predict)", nullptr, "--predict"},
      });
  std::vector<cli::FlagSpec> compat =
      cli::in_group(cli::kCompatGroup, {
                                           {"--parallel", "-np", "N", "as --slots (llama-server's name)"},
                                           {"--metrics", nullptr, nullptr, "no effect: /metrics is always on"},
                                       });
  return cli::concat(defaults, compat);
}

Status request_options_from_args(const cli::Args& args, ServerOptions* o) {
  const std::string format = args.get_string("--log-format", "text");
  o->log.enabled = format != "off";
  if (o->log.enabled) {
    SNIPER_ASSIGN_OR_RETURN(o->log.format, parse_log_format(format));
  }
  o->log.verbose = args.has("--verbose");
  SamplingDefaults& d = o->sampling_defaults;
  auto number = [&](const char* flag, double lo, double hi, std::optional<double>* out) -> Status {
    if (!args.has(flag)) return ok_status();
    SNIPER_ASSIGN_OR_RETURN(double v, args.get_float(flag, 0, lo, hi));
    *out = v;
    return ok_status();
  };
  auto integer = [&](const char* flag, int64_t lo, int64_t hi, std::optional<int64_t>* out) -> Status {
    if (!args.has(flag)) return ok_status();
    SNIPER_ASSIGN_OR_RETURN(int64_t v, args.get_int(flag, 0, lo, hi));
    *out = v;
    return ok_status();
  };
  SNIPER_TRY(number("--temp", 0.0, 2.0, &d.temperature));
  SNIPER_TRY(number("--top-p", 0.0, 1.0, &d.top_p));
  if (d.top_p && *d.top_p <= 0) return make_error("--top-p is 0 but must be in (0, 1]");
  SNIPER_TRY(number("--min-p", 0.0, 1.0, &d.min_p));
  SNIPER_TRY(number("--repeat-penalty", 0.01, 10.0, &d.repeat_penalty));
  SNIPER_TRY(number("--presence-penalty", -2.0, 2.0, &d.presence_penalty));
  SNIPER_TRY(number("--frequency-penalty", -2.0, 2.0, &d.frequency_penalty));
  SNIPER_TRY(integer("--top-k", 0, int64_t{1} << 24, &d.top_k));
  SNIPER_TRY(integer("--seed", 0, INT64_MAX, &d.seed));
  SNIPER_TRY(integer("--n-predict", 1, int64_t{1} << 24, &d.max_tokens));
  return ok_status();
}

Result<std::vector<std::string>> parse_aliases(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& value : values) {
    for (size_t at = 0; at <= value.size();) {
      const size_t comma = std::min(value.find(',', at), value.size());
      const std::string name = value.substr(at, comma - at);
      at = comma + 1;
      if (name.empty()) return make_error("--alias '%s' has an empty name", value.c_str());
      if (name.size() > 256) return make_error("--alias: a name of %zu bytes is over 256", name.size());
      for (unsigned char c : name) {
        if (c <= ' ' || c == 0x7f) return make_error("--alias '%s' must not contain whitespace", name.c_str());
      }
      out.push_back(name);
    }
  }
  return out;
}

std::string listen_url(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/";
}

}  // namespace sniper::server
