// SPDX-License-Identifier: MIT
// A directory of a test's own under the system's temporary directory, removed with its contents
// when the object goes. A fixed path (/tmp/sniper_x.gguf) would be shared with a run of the same
// suite in another checkout or a parallel ctest: one run's file replaced under the other.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace sniper::test {

class TempDir {
 public:
  // `stem` names the directory ("sniper-<stem>-XXXXXX") so that a leftover says whose it is.
  explicit TempDir(std::string_view stem = "test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("sniper-" + std::string(stem) + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror(("mkdtemp " + tmpl).c_str());
      std::abort();  // nothing a test could do without its directory
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // The path of `name` inside the directory.
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace sniper::test
