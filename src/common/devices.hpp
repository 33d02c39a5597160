// How many device ordinals the library keeps state for: the device registry,
// the self-check gate's slots and the launchers' once-per-device attribute
// masks (one bit per device in a uint64_t) are all sized by it.
#pragma once

namespace tgv::detail {

inline constexpr int kMaxDevices = 64;

}  // namespace tgv::detail
