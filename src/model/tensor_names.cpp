// SPDX-License-Identifier: MIT
#include "model/tensor_names.h"

namespace sniper {

std::string layer_tensor_name(int64_t block, std::string_view suffix) {
  std::string name = "blk." + std::to_string(block) + ".";
  name.append(suffix);
  return name;
}

}  // namespace sniper
