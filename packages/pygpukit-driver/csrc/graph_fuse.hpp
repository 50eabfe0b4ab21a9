// Fusing a captured graph's lines of small kernels into one launch each (graph_fuse.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <unordered_map>

#include "cuda_decls.hpp"

namespace pgk {

struct FuseCount {
    std::size_t steps = 0;     // kernel nodes replaced
    std::size_t launches = 0;  // program nodes that replaced them
};

// A fusable kernel: its PGK_STEP_* kind and how many parameters it takes.
struct StepKind {
    int kind = 0;
    int params = 0;
};

// True when the loaded driver has every entry point fusing needs (CUDA 12.4+).
bool can_fuse_small_steps();

// Replace each line of >= 2 kernel nodes of `graph` whose functions are keys of `kinds` with one launch of `program` (one block of `block` threads) over their
// steps, written to device memory that `alloc(nbytes)` returns (the caller keeps it alive as
// long as any executable of the graph).  The context must be current.  Returns what it did;
// nothing when the driver lacks an entry point.  Throws CudaError on a failed driver call.
FuseCount fuse_small_steps(CUgraph graph, const std::unordered_map<CUfunction, StepKind>& kinds,
                           CUfunction program, unsigned block,
                           const std::function<CUdeviceptr(std::size_t)>& alloc);

}  // namespace pgk
