// SPDX-License-Identifier: MIT
// The flags of `sniper serve` beyond the model and the listener: the request log (--log-format,
// --verbose), the defaults requests get for the sampling fields they leave out (--temp, --top-k,
// ... as llama-server takes them; request_defaults.h), model aliases (--alias, several names and
// "*"), llama.cpp's spellings (-np/--parallel for --slots, --metrics), and the URL the server
// prints. Errors name the flag, the value and the allowed range.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "cli/args.h"
#include "server/server_options.h"

namespace sniper::server {

// --log-format, --verbose.
std::vector<cli::FlagSpec> serve_log_flags();
// --temp, --top-k, --top-p, --min-p, --seed, --repeat-penalty, --presence-penalty,
// --frequency-penalty, --n-predict; and -np/--parallel, --metrics.
std::vector<cli::FlagSpec> serve_default_flags();

// Fills options->log and options->sampling_defaults from the flags above. The defaults are checked
// against the narrowest range any API accepts, so no request fails because of them.
[[nodiscard]] Status request_options_from_args(const cli::Args& args, ServerOptions* options);

// Every --alias value split at commas; errors: an empty name, whitespace or control bytes, a name
// over 256 bytes.
[[nodiscard]] Result<std::vector<std::string>> parse_aliases(const std::vector<std::string>& values);

// "http://127.0.0.1:8000/"; an IPv6 host in brackets: "http://[::1]:8000/".
std::string listen_url(const std::string& host, int port);

}  // namespace sniper::server
