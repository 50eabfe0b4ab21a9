// Helpers shared by the launchers: grid sizing and error reporting.
#pragma once

#include <cuda_runtime.h>
#include <cstdint>

namespace pgk {

// Enough blocks to fill every SM several times; beyond that a grid-stride loop covers the rest.
inline unsigned grid_for(int64_t work_items, unsigned block) {
  int64_t blocks = (work_items + block - 1) / block;
  const int64_t cap = int64_t{1} << 20;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

// A launch error (bad configuration, no kernel image for this device...) surfaces here.
inline int launch_status() { return static_cast<int>(cudaGetLastError()); }

}  // namespace pgk
