// SPDX-License-Identifier: MIT
// Entry points of the server front end, called by the sniper CLI.
#pragma once

namespace sniper::server {

// `sniper serve ...`: returns the process exit code.
int serve_main(int argc, char** argv);
// `sniper top ...`: returns the process exit code.
int top_main(int argc, char** argv);

}  // namespace sniper::server
