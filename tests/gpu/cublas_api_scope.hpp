// TGV_CUBLAS_API set for a scope, the previous value (or its absence) restored
// after: the library reads it at each call (src/cublas/cublas_legacy.hpp).
#pragma once

#include <cstdlib>
#include <string>

namespace tgv_test {

class CublasApiScope {
 public:
  explicit CublasApiScope(const char* value) {
    const char* old = std::getenv("TGV_CUBLAS_API");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("TGV_CUBLAS_API", value, 1);
  }
  ~CublasApiScope() {
    if (had_)
      setenv("TGV_CUBLAS_API", old_.c_str(), 1);
    else
      unsetenv("TGV_CUBLAS_API");
  }
  CublasApiScope(const CublasApiScope&) = delete;
  CublasApiScope& operator=(const CublasApiScope&) = delete;

 private:
  bool had_ = false;
  std::string old_;
};

}  // namespace tgv_test
