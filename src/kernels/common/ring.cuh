// A walk around a pipeline ring of mbarrier-guarded stages, shared by the SM90
// and SM100 kernels: the stage index and the barrier parity to wait for, which
// flips after each lap. Producers start at parity 1 on the empty barriers (a
// fresh barrier passes a wait for the phase "before" phase 0, so the first lap
// does not block); consumers start at parity 0 on the full barriers.
#pragma once

#include <cstdint>

namespace tgv::kernels {

struct RingCursor {
  int stage = 0;
  uint32_t phase;
  __device__ explicit RingCursor(uint32_t initial_phase) : phase(initial_phase) {}
  __device__ void advance(int stages) {
    if (++stage == stages) {
      stage = 0;
      phase ^= 1;
    }
  }
  // n steps at once, n <= stages: one compare, not a loop, on a consumer's
  // path between two wgmma batches.
  __device__ void advance(int stages, int n) {
    stage += n;
    if (stage >= stages) {
      stage -= stages;
      phase ^= 1;
    }
  }
};

}  // namespace tgv::kernels
