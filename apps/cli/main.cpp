// SPDX-License-Identifier: MIT
// sniper: the command-line front end. `sniper <command> [flags]`.
#include <cstdio>
#include <cstring>
#include <string>

#include "agent/agent_main.h"
#include "commands.h"
#include "server/serve_main.h"

namespace {

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"run", sniper::cli::cmd_run, "generate text from a prompt"},
    {"chat", sniper::cli::cmd_chat, "interactive chat using the model's chat template"},
    {"inspect", sniper::cli::cmd_inspect, "describe a GGUF model: shapes, types, byte breakdown"},
    {"logits", sniper::cli::cmd_logits, "write the logits of given token ids (for reference checks)"},
    {"synth", sniper::cli::cmd_synth, "write a random-weight model of a real architecture"},
    {"pack", sniper::cli::cmd_pack, "rewrite a MoE GGUF so each expert is one aligned read"},
    {"bench", sniper::cli::cmd_bench, "measure prefill/decode speed, memory and SSD traffic against physical limits"},
    {"context", sniper::cli::cmd_context, "push, pull or list saved contexts in S3-compatible object storage"},
    {"pull", sniper::cli::cmd_pull, "download a GGUF model from a Hugging Face-compatible hub into the store"},
    {"list", sniper::cli::cmd_list, "list the models in the store"},
    {"rm", sniper::cli::cmd_rm, "delete a model from the store"},
    {"split", sniper::cli::cmd_split, "write a model as split GGUF files (*-00001-of-0000N.gguf)"},
    {"serve", sniper::server::serve_main, "OpenAI-compatible HTTP server with a web UI and live metrics"},
    {"top", sniper::server::top_main, "terminal dashboard of a running server"},
    {"agent", sniper::agent::agent_main, "terminal assistant routing between chat, web search and shell"},
};

void print_help() {
  std::printf("sniper: run large language models from GGUF files on the CPU\n\nusage: sniper <command> [flags]\n\n");
  for (const Command& c : kCommands) std::printf("  %-9s %s\n", c.name, c.summary);
  std::printf("\n'sniper <command> --help' lists a command's flags.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_help();
    return argc < 2 ? 1 : 0;
  }
  for (const Command& c : kCommands) {
    if (!std::strcmp(argv[1], c.name)) return c.fn(argc, argv);
  }
  std::fprintf(stderr,
               "error: unknown command '%s' (commands: run, chat, inspect, logits, synth, pack, bench, context, pull, "
               "list, rm, split, serve, top, agent; see 'sniper --help')\n",
               argv[1]);
  return 1;
}
