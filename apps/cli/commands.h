// SPDX-License-Identifier: MIT
// The sniper CLI's commands. Each returns the process exit code.
#pragma once

namespace sniper::cli {

int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_pack(int argc, char** argv);
int cmd_context(int argc, char** argv);
int cmd_pull(int argc, char** argv);
int cmd_list(int argc, char** argv);
int cmd_rm(int argc, char** argv);
int cmd_split(int argc, char** argv);
int cmd_ps(int argc, char** argv);
int cmd_version(int argc, char** argv);

}  // namespace sniper::cli
