#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace tgv::detail {

// printf into a std::string: error messages are built once, on the failure path.
inline std::string strfmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline std::string strfmt(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char buffer[1024];
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return buffer;
}

}  // namespace tgv::detail
