// Internal error type: thrown anywhere inside the library, caught only by the
// C ABI shims (src/api/c_api.cpp), which turn it into a status and a message.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "tgv/tgv.h"

namespace tgv::detail {

class Error : public std::runtime_error {
 public:
  Error(tgv_status status, std::string message) : std::runtime_error(std::move(message)), status_(status) {}
  tgv_status status() const { return status_; }

 private:
  tgv_status status_;
};

[[noreturn]] inline void throw_invalid(std::string message) {
  throw Error(TGV_ERROR_INVALID_ARGUMENT, std::move(message));
}
[[noreturn]] inline void throw_unsupported(std::string message) {
  throw Error(TGV_ERROR_NOT_SUPPORTED, std::move(message));
}

}  // namespace tgv::detail
