// SPDX-License-Identifier: MIT
// sniper: the command-line front end. `sniper <command> [flags]`.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agent/agent_main.h"
#include "args.h"
#include "cluster_args.h"
#include "commands.h"
#include "server/serve_main.h"

namespace {

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
  const char* group;
};

constexpr Command kCommands[] = {
    {"run", sniper::cli::cmd_run, "generate text from a prompt", "Use a model"},
    {"embed", sniper::cli::cmd_embed, "print the embedding of a text (pooled, L2-normalised hidden states)",
     "Use a model"},
    {"chat", sniper::cli::cmd_chat, "talk to a model in the terminal (line editing, /help for commands)",
     "Use a model"},
    {"serve", sniper::server::serve_main, "HTTP server: OpenAI, Ollama and Anthropic APIs, a web UI and live metrics",
     "Use a model"},
    {"agent", sniper::agent::agent_main, "terminal assistant routing between chat, web search and shell",
     "Use a model"},
    {"pull", sniper::cli::cmd_pull, "download a GGUF model from a Hugging Face-compatible hub into the store",
     "Manage models"},
    {"list", sniper::cli::cmd_list, "list the models in the store", "Manage models"},
    {"rm", sniper::cli::cmd_rm, "delete a model from the store", "Manage models"},
    {"ps", sniper::cli::cmd_ps, "list the models a running server has loaded", "Manage models"},
    {"inspect", sniper::cli::cmd_inspect, "describe a GGUF model: shapes, types, bytes, memory plan", "Manage models"},
    {"bench", sniper::cli::cmd_bench, "measure prefill/decode speed, memory and SSD traffic against physical limits",
     "Measure and develop"},
    {"top", sniper::server::top_main, "terminal dashboard of a running server", "Measure and develop"},
    {"context", sniper::cli::cmd_context, "push, pull or list saved contexts in S3-compatible object storage",
     "Measure and develop"},
    {"synth", sniper::cli::cmd_synth, "write a random-weight model of a real architecture", "Measure and develop"},
    {"pack", sniper::cli::cmd_pack, "rewrite a MoE GGUF so each expert is one aligned read", "Measure and develop"},
    {"split", sniper::cli::cmd_split, "write a model as split GGUF files (*-00001-of-0000N.gguf)",
     "Measure and develop"},
    {"logits", sniper::cli::cmd_logits, "write the logits of given token ids (for reference checks)",
     "Measure and develop"},
    {"version", sniper::cli::cmd_version, "print the version, commit, build type and the CPU's kernel tiers",
     "Measure and develop"},
};

void print_help() {
  std::string text =
      "sniper: run large language models from GGUF files on the CPU, streaming what does not fit in RAM\n\n"
      "usage: sniper <command> [MODEL] [flags]\n";
  const char* group = nullptr;
  for (const Command& c : kCommands) {
    if (group == nullptr || std::strcmp(group, c.group) != 0) {
      group = c.group;
      text += std::string("\n") + group + ":\n";
    }
    char left[32];
    std::snprintf(left, sizeof(left), "  %-9s ", c.name);
    text += left + sniper::cli::wrap_text(c.summary, sniper::cli::help_width(), 12, false) + "\n";
  }
  text +=
      "\nA MODEL is a GGUF file or a store name (OWNER/NAME[:QUANT], see 'sniper pull'); give it first or with -m.\n"
      "'sniper <command> --help' lists a command's flags. 'sniper --version' prints the version.\n"
      "Example: sniper chat Qwen/Qwen3-8B-GGUF:Q4_K_M\n";
  std::fputs(text.c_str(), stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_help();
    return argc < 2 ? 1 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) return sniper::cli::cmd_version(1, argv);
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    // Under mpirun (several processes): every rank runs the command line; rank 0 runs the command
    // and the others serve it from inside load_model_and_session (cluster_args.h).
    if (sniper::Status joined = sniper::cli::join_cluster(&argc, &argv); !joined.ok()) {
      std::fprintf(stderr, "error: %s\n", joined.error().message.c_str());
      return 1;
    }
    sniper::Cluster* cluster = sniper::cli::current_cluster();
    if (cluster != nullptr && !sniper::cli::runs_distributed(c.name)) {
      if (cluster->rank() == 0) {
        std::fprintf(stderr, "error: '%s' does not run under mpirun yet (these do: run, logits, serve, bench)\n",
                     c.name);
      }
      sniper::cli::leave_cluster();
      return 1;
    }
    const int rc = c.fn(argc, argv);
    sniper::cli::leave_cluster();
    return rc;
  }
  std::vector<std::string> names;
  for (const Command& c : kCommands) names.push_back(c.name);
  const std::string near = sniper::cli::nearest_spelling(argv[1], names);
  std::string hint = near.empty() ? "" : "; did you mean '" + near + "'?";
  const std::string word = argv[1];
  if (near.empty() && (word.ends_with(".gguf") || word.find('/') != std::string::npos)) {
    hint = "; to use a model, name a command first: sniper chat " + word;
  }
  std::fprintf(stderr, "error: unknown command '%s'%s (see 'sniper --help')\n", argv[1], hint.c_str());
  return 1;
}
