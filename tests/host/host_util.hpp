// Helpers shared by the host tests: fake device pointers and status checks.
// Validation never dereferences a pointer, so any 16-byte aligned address
// stands in for a device allocation.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "tgv/tgv.h"

namespace tgv_test {

// Far apart, so that no realistic extent makes them overlap.
inline void* fake_ptr(uintptr_t address) { return reinterpret_cast<void*>(address); }
inline constexpr uintptr_t kX = 0x100000000ull;     //  4 GiB
inline constexpr uintptr_t kW = 0x10000000000ull;   //  1 TiB
inline constexpr uintptr_t kOut = 0x20000000000ull; //  2 TiB
inline constexpr uintptr_t kBias = 0x30000000000ull;

// A packed, valid problem (x, W K-major; out row-major) with fake pointers.
inline tgv_problem make_problem(int64_t m, int64_t n, int64_t k, int64_t l = 1, bool bias = false) {
  tgv_problem p;
  tgv_default_problem(&p, m, n, k, l);
  p.x = fake_ptr(kX);
  p.w = fake_ptr(kW);
  p.out = fake_ptr(kOut);
  p.bias = bias ? fake_ptr(kBias) : nullptr;
  return p;
}

inline tgv_options default_options() {
  tgv_options o;
  tgv_default_options(&o);
  return o;
}

inline std::string hex(uintptr_t address) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%p", reinterpret_cast<void*>(address));
  return buffer;
}

// Checks a returned status and that tgv_last_error() holds every substring.
inline ::testing::AssertionResult status_is(tgv_status got, tgv_status want,
                                            std::initializer_list<std::string> substrings = {}) {
  const std::string message = tgv_last_error();
  if (got != want)
    return ::testing::AssertionFailure() << "status " << tgv_status_name(got) << " (" << got << "), expected "
                                         << tgv_status_name(want) << " (" << want << "); last error: \"" << message
                                         << "\"";
  for (const std::string& s : substrings)
    if (message.find(s) == std::string::npos)
      return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << s << "\"";
  return ::testing::AssertionSuccess() << message;
}

// tgv_validate with the given options (defaults when omitted).
inline ::testing::AssertionResult validate_fails(const tgv_problem& p, tgv_status want,
                                                 std::initializer_list<std::string> substrings,
                                                 const tgv_options& o = default_options()) {
  return status_is(tgv_validate(&p, &o), want, substrings);
}

inline ::testing::AssertionResult validate_ok(const tgv_problem& p, const tgv_options& o = default_options()) {
  return status_is(tgv_validate(&p, &o), TGV_SUCCESS);
}

}  // namespace tgv_test
