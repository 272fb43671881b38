// SPDX-License-Identifier: MIT
// `sniper agent`: flag parsing, backend setup (config file, --url servers, or a local
// `sniper serve` started with -m), then the REPL or the routing evaluation (--eval-routing).
#include "agent/agent_main.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/failover.h"
#include "agent/local_server.h"
#include "agent/repl.h"
#include "agent/router.h"
#include "agent/slash_commands.h"
#include "agent/terminal_render.h"
#include "base/process_control.h"
#include "cli/args.h"

#ifndef SNIPER_AGENT_ROUTING_SET
#define SNIPER_AGENT_ROUTING_SET "apps/agent/routing_set.jsonl"
#endif

namespace sniper::agent {

namespace {

struct Flags {
  std::vector<std::string> urls;
  std::string model_file;
  std::string config_path;
  std::string model_name;
  std::string api_key_env;
  std::string search_url;
  std::string routing_set = SNIPER_AGENT_ROUTING_SET;
  std::vector<std::string> serve_args;
  int think = -1;  // -1 = config default
  bool no_color = false;
  bool eval_routing = false;
  double read_timeout_s = 0;
  bool help = false;
};

std::vector<cli::FlagSpec> agent_flags() {
  return {
      {"--url", nullptr, "URL", "an OpenAI-compatible server (repeatable; later ones are failover backends)"},
      {"--model", "-m", "PATH|NAME",
       "start a local `sniper serve MODEL --port 0` and use it (stopped on exit); MODEL is a GGUF file or a store "
       "name, and may also be the first word after 'agent'"},
      {"--serve-arg", nullptr, "ARG", "extra argument for that server (repeatable), e.g. --serve-arg=--ctx=8192"},
      {"--config", nullptr, "FILE",
       "JSON config (default ~/.config/sniper/agent.json if it exists; see apps/agent/agent.example.json)"},
      {"--model-name", nullptr, "NAME", "\"model\" sent to --url backends"},
      {"--api-key-env", nullptr, "VAR", "environment variable holding the API key of --url backends"},
      {"--search-url", nullptr, "URL", "search endpoint (default https://html.duckduckgo.com/html/)"},
      {"--think", nullptr, nullptr, "thinking for chat answers (routing never thinks)"},
      {"--no-think", nullptr, nullptr, "no thinking for chat answers"},
      {"--timeout", nullptr, "SECONDS", "read timeout per backend request"},
      {"--no-color", nullptr, nullptr, "plain output (also when NO_COLOR is set or stdout is not a terminal)"},
      {"--eval-routing", nullptr, nullptr, "route the labelled set and print accuracy and a confusion matrix"},
      {"--routing-set", nullptr, "FILE", "labelled set for --eval-routing (default " SNIPER_AGENT_ROUTING_SET ")"},
      {"--help", "-h", nullptr, "show this help"},
  };
}

void print_usage() {
  cli::print_usage("agent", "[MODEL | -m MODEL | --url URL ...] [--config FILE] [flags]", agent_flags(),
                   "A terminal assistant that routes each request to chat, web search or the shell over any "
                   "OpenAI-compatible server, with tiers and failover between backends.");
  // The slash commands in the same two columns, wrapped to the terminal like the flags.
  std::string commands;
  for (const SlashCommand& c : slash_commands()) {
    std::string head = std::string("/") + c.name + (c.args[0] ? std::string(" ") + c.args : "");
    head = head.size() < 28 ? head + std::string(28 - head.size(), ' ') : head + "\n" + std::string(30, ' ');
    commands += "  " + head + " " + cli::wrap_text(c.help, cli::help_width(), 31, false) + "\n";
  }
  const std::string text = "\nCommands inside the agent (Tab completes; a prefix that names one runs it):\n" +
                           commands +
                           cli::wrap_text(
                               "Keys: Ctrl-C stops a generation; Ctrl-C twice at an empty prompt, or Ctrl-D, "
                               "quits.",
                               cli::help_width(), 0, false) +
                           "\n";
  std::fputs(text.c_str(), stdout);
}

// Parses flags (cli::Args: unknown flags name the nearest one); returns an error message or "".
std::string parse_flags(int argc, char** argv, Flags* f) {
  auto args = cli::Args::parse("agent", argc, argv, 2, agent_flags());
  if (!args.ok()) return args.error().message;
  const bool has_model = args->has("--model");
  if (Status st = args->check_positionals(has_model ? 0 : 1, "one MODEL (a GGUF file or a store name)"); !st.ok()) {
    return st.error().message;
  }
  f->help = args->has("--help");
  f->urls = args->get_all("--url");
  f->model_file =
      has_model ? args->get_string("--model") : (args->positionals().empty() ? "" : args->positionals().front());
  f->config_path = args->get_string("--config");
  f->model_name = args->get_string("--model-name");
  f->api_key_env = args->get_string("--api-key-env");
  f->search_url = args->get_string("--search-url");
  f->routing_set = args->get_string("--routing-set", f->routing_set);
  f->serve_args = args->get_all("--serve-arg");
  if (args->has("--think") && args->has("--no-think")) return "pass --think or --no-think, not both";
  if (args->has("--think")) f->think = 1;
  if (args->has("--no-think")) f->think = 0;
  f->no_color = args->has("--no-color");
  f->eval_routing = args->has("--eval-routing");
  if (args->has("--timeout")) {
    auto t = args->get_float("--timeout", 0, 0.001, 86400);
    if (!t.ok()) return t.error().message;
    f->read_timeout_s = *t;
  }
  return "";
}

// Ok when at least one backend answers HTTP; otherwise one message naming each and why, and
// how to get a server.
Status check_some_backend_answers(const BackendPool& pool) {
  constexpr double kProbeTimeoutS = 3;
  std::string why;
  for (size_t i = 0; i < pool.size(); ++i) {
    Status st = pool.backend(i).client.probe(kProbeTimeoutS);
    if (st.ok()) return ok_status();
    why += "\n  " + st.error().message;
  }
  return make_error(
      "no backend answers:%s\nstart a server with 'sniper serve MODEL' (or let the agent start one: sniper agent "
      "MODEL), or check --url and the config file",
      why.c_str());
}

std::string backend_name_for(const std::string& url, const std::vector<BackendConfig>& existing) {
  std::string origin, path;
  std::string name = split_url(url, &origin, &path) ? origin.substr(origin.find("://") + 3) : url;
  std::string candidate = name;
  for (int n = 2;; ++n) {
    bool taken = false;
    for (const BackendConfig& b : existing) taken = taken || b.name == candidate;
    if (!taken) return candidate;
    candidate = name + "#" + std::to_string(n);
  }
}

std::string read_file(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int eval_routing(BackendPool& pool, const std::string& path) {
  bool ok = false;
  std::string text = read_file(path, &ok);
  if (!ok) {
    std::fprintf(stderr, "error: cannot read the routing set '%s' (use --routing-set FILE)\n", path.c_str());
    return 1;
  }
  auto set = parse_routing_set(text);
  if (!set.ok()) {
    std::fprintf(stderr, "error: %s: %s\n", path.c_str(), set.error().message.c_str());
    return 1;
  }
  install_sigint_handler();
  std::cout << "routing " << set->size() << " labelled requests with the fast tier (" << path << ")\n";
  RoutingEval e = evaluate_routing(pool, set.value(), &std::cout, &interrupt_flag());
  print_routing_eval(e, std::cout);
  return e.failed_requests == e.total && e.total > 0 ? 1 : 0;
}

}  // namespace

int agent_main(int argc, char** argv) {
  Flags flags;
  std::string err = parse_flags(argc, argv, &flags);
  if (!err.empty()) {
    std::fprintf(stderr, "error: %s\n", err.c_str());
    return 2;
  }
  if (flags.help) {
    print_usage();
    return 0;
  }
  AgentConfig config;
  std::string config_path = flags.config_path.empty() ? default_config_path() : flags.config_path;
  if (!flags.config_path.empty() || ::access(config_path.c_str(), F_OK) == 0) {
    auto loaded = load_config_file(config_path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "error: %s\n", loaded.error().message.c_str());
      return 2;
    }
    config = std::move(loaded).value();
  }
  if (!flags.search_url.empty()) config.search_url = flags.search_url;
  if (flags.think >= 0) config.thinking = flags.think == 1;
  if (flags.read_timeout_s > 0) config.read_timeout_s = flags.read_timeout_s;

  // Command-line backends come first in the failover order, then the config's.
  std::vector<BackendConfig> cli_backends;
  std::unique_ptr<LocalServer> local;
  if (!flags.model_file.empty()) {
    std::vector<std::string> args = {"serve", "-m", flags.model_file, "--port", "0"};
    for (const std::string& a : flags.serve_args) args.push_back(a);
    std::string dir = state_dir();
    std::string log = make_dirs(dir) ? dir + "/serve.log" : "";
    std::fprintf(stderr, "starting sniper serve -m %s ...\n", flags.model_file.c_str());
    auto started = LocalServer::start(self_exe_path(), args, 600, log);
    if (!started.ok()) {
      std::fprintf(stderr, "error: %s\n", started.error().message.c_str());
      return 1;
    }
    local = std::move(started).value();
    BackendConfig b;
    b.name = "local";
    b.url = local->url();
    b.role = Tier::kPrimary;
    b.local = true;
    b.template_kwargs = true;
    cli_backends.push_back(b);
  }
  for (const std::string& url : flags.urls) {
    BackendConfig b;
    b.url = url;
    std::string origin, path;
    if (!split_url(url, &origin, &path)) {
      std::fprintf(stderr, "error: --url '%s' must start with http:// or https://\n", url.c_str());
      return 2;
    }
    b.name = backend_name_for(url, cli_backends);
    b.model = flags.model_name;
    b.role = Tier::kPrimary;
    b.local = url.find("127.0.0.1") != std::string::npos || url.find("localhost") != std::string::npos;
    b.template_kwargs = true;
    b.api_key_env = flags.api_key_env;
    if (!b.api_key_env.empty()) {
      const char* key = std::getenv(b.api_key_env.c_str());
      if (key) b.api_key = key;
    }
    cli_backends.push_back(b);
  }
  if (!cli_backends.empty()) {
    for (const BackendConfig& b : config.backends) cli_backends.push_back(b);
    config.backends = cli_backends;
  }
  if (config.backends.empty()) {
    std::fprintf(stderr, "error: no backend: use --url URL, -m MODEL or a config file with backends (see --help)\n");
    return 2;
  }
  BackendPool pool(config);
  if (Status st = check_some_backend_answers(pool); !st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
    return 1;
  }
  if (flags.eval_routing) return eval_routing(pool, flags.routing_set);

  AgentIo io;
  io.out = &std::cout;
  io.confirm = confirm_on_terminal;
  io.cancel = &interrupt_flag();
  io.color = !flags.no_color && want_color(1);
  char cwd[4096];
  io.cwd = ::getcwd(cwd, sizeof(cwd)) ? cwd : ".";
  std::string dir = state_dir();
  io.grade_log = config.grade_log.empty() ? dir + "/grades.jsonl" : expand_home(config.grade_log);
  Agent agent(config, &pool, io);
  std::string banner = ansi_bold(io.color) + "sniper agent" + ansi_reset(io.color) + " · backends:";
  for (const BackendConfig& b : config.backends) banner += " " + b.name + " (" + tier_name(b.role) + ")";
  banner += " · /help lists commands, Ctrl-D quits\n";
  return run_repl(agent, banner);
}

}  // namespace sniper::agent
