// SPDX-License-Identifier: MIT
// The OS-specific calls the front ends make on processes (today Linux's; a port to another OS
// replaces process_control.cpp): how the running program re-executes itself, and how a child
// asks to be stopped when its parent dies. Both are safe to call between fork and exec.
#pragma once

namespace sniper {

// A path that execv() resolves to the running program's own executable, even when it was started
// through a relative path or a symlink (Linux: "/proc/self/exe").
const char* self_exe_path();

// In a forked child: asks the OS to send `signal` to this process when the parent that forked it
// exits (Linux: PR_SET_PDEATHSIG). Returns false when the OS refused or cannot do it.
bool signal_on_parent_exit(int signal);

}  // namespace sniper
