// SPDX-License-Identifier: MIT
// Linux implementation of base/process_control.h.
#include "base/process_control.h"

#include <sys/prctl.h>

namespace sniper {

const char* self_exe_path() { return "/proc/self/exe"; }

bool signal_on_parent_exit(int signal) { return ::prctl(PR_SET_PDEATHSIG, signal) == 0; }

}  // namespace sniper
