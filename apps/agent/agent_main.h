// SPDX-License-Identifier: MIT
// Entry point of the terminal agent, called by the sniper CLI.
#pragma once

namespace sniper::agent {

// `sniper agent ...`: returns the process exit code.
int agent_main(int argc, char** argv);

}  // namespace sniper::agent
