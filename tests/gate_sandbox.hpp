// A sandbox for tests of the self-check gate, host and GPU alike: the cache in
// a temporary folder of its own (through TGV_TUNING_FILE, so the user's cache
// is never touched), TGV_SELF_CHECK unset, both restored when it goes away.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tgv_test {

class GateSandbox {
 public:
  GateSandbox() {
    for (const char* name : {"TGV_TUNING_FILE", "TGV_SELF_CHECK"}) {
      const char* v = std::getenv(name);
      saved_.push_back({name, v ? std::make_unique<std::string>(v) : nullptr});
    }
    char templ[] = "/tmp/tgv-self-check-XXXXXX";
    if (mkdtemp(templ) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = templ;
    setenv("TGV_TUNING_FILE", (dir_ + "/tuning.json").c_str(), 1);
    unsetenv("TGV_SELF_CHECK");
  }
  ~GateSandbox() {
    for (auto& [name, value] : saved_) {
      if (value) setenv(name, value->c_str(), 1);
      else unsetenv(name);
    }
    std::remove(cache().c_str());
    rmdir(dir_.c_str());
  }
  GateSandbox(const GateSandbox&) = delete;
  GateSandbox& operator=(const GateSandbox&) = delete;

  const std::string& dir() const { return dir_; }
  std::string cache() const { return dir_ + "/tgv-self-check.json"; }

 private:
  std::string dir_;
  std::vector<std::pair<const char*, std::unique_ptr<std::string>>> saved_;
};

}  // namespace tgv_test
