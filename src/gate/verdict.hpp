// The self-check gate's word on one device's tgv kernel family, as the planner
// reads it. Kept apart from the gate itself so that plan() stays pure: the
// dispatcher hands it in (src/api/c_api.cpp), the host tests make it up.
#pragma once

#include <cstdint>
#include <string>

namespace tgv::detail {

enum class GateState : uint8_t {
  Unknown = 0,  // not settled yet: Hopper is served, Blackwell is not (unvalidated)
  Passed = 1,   // the probe passed, the cache says so, or TGV_SELF_CHECK=pass
  Failed = 2,   // disabled for this process; `reason` says why
};

struct GateVerdict {
  GateState state = GateState::Unknown;
  std::string reason;  // Failed: why; Passed: where the verdict came from
};

}  // namespace tgv::detail
