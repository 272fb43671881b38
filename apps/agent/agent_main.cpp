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

void print_usage() {
  std::printf(
      "usage: sniper agent [--url URL ...] [-m MODEL] [--config FILE] [options]\n"
      "A terminal assistant that routes each request to chat, web search or the shell over any\n"
      "OpenAI-compatible server, with tiers and failover between backends.\n\n"
      "options:\n"
      "  --url URL            an OpenAI-compatible server (repeatable; later ones are failover backends)\n"
      "  -m, --model FILE     start a local `sniper serve -m FILE --port 0` and use it (stopped on exit)\n"
      "  --serve-arg ARG      extra argument for that server (repeatable), e.g. --serve-arg=--ctx=8192\n"
      "  --config FILE        JSON config (default ~/.config/sniper/agent.json if it exists;\n"
      "                       see apps/agent/agent.example.json)\n"
      "  --model-name NAME    \"model\" sent to --url backends\n"
      "  --api-key-env VAR    environment variable holding the API key of --url backends\n"
      "  --search-url URL     search endpoint (default https://html.duckduckgo.com/html/)\n"
      "  --think, --no-think  thinking for chat answers (routing never thinks)\n"
      "  --timeout SECONDS    read timeout per backend request\n"
      "  --no-color           plain output (also when NO_COLOR is set or stdout is not a terminal)\n"
      "  --eval-routing       route the labelled set and print accuracy and a confusion matrix\n"
      "  --routing-set FILE   labelled set for --eval-routing (default %s)\n"
      "  -h, --help           this help\n\n"
      "commands inside the agent (Tab completes; an unambiguous prefix runs, e.g. /sta):\n%s"
      "keys: Ctrl-C stops a generation; Ctrl-C twice at an empty prompt or Ctrl-D quits.\n",
      SNIPER_AGENT_ROUTING_SET, slash_help().c_str());
}

// Parses flags; returns an error message or "".
std::string parse_flags(int argc, char** argv, Flags* f) {
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_inline = true;
    }
    auto next = [&](std::string* out) -> bool {
      if (has_inline) {
        *out = value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto need = [&](std::string* out) -> std::string { return next(out) ? "" : a + " needs a value"; };
    std::string err;
    if (a == "-h" || a == "--help") f->help = true;
    else if (a == "--url") {
      std::string u;
      err = need(&u);
      f->urls.push_back(u);
    } else if (a == "-m" || a == "--model") err = need(&f->model_file);
    else if (a == "--config") err = need(&f->config_path);
    else if (a == "--model-name") err = need(&f->model_name);
    else if (a == "--api-key-env") err = need(&f->api_key_env);
    else if (a == "--search-url") err = need(&f->search_url);
    else if (a == "--routing-set") err = need(&f->routing_set);
    else if (a == "--serve-arg") {
      std::string s;
      err = need(&s);
      f->serve_args.push_back(s);
    } else if (a == "--think") f->think = 1;
    else if (a == "--no-think") f->think = 0;
    else if (a == "--no-color") f->no_color = true;
    else if (a == "--eval-routing") f->eval_routing = true;
    else if (a == "--timeout") {
      std::string s;
      err = need(&s);
      f->read_timeout_s = std::atof(s.c_str());
      if (err.empty() && !(f->read_timeout_s > 0)) err = "--timeout is '" + s + "' but must be a positive number";
    } else {
      err = "unknown option '" + a + "' (see sniper agent --help)";
    }
    if (!err.empty()) return err;
  }
  return "";
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
    auto started = LocalServer::start("/proc/self/exe", args, 600, log);
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
