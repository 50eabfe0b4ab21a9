// Fusing a captured graph's lines of small kernels into one launch each.
//
// A chain of small ops captured on one stream becomes a line of kernel nodes, each waiting for
// the one before: on replay every node pays the device's kernel-to-kernel latency (about a
// microsecond on an H100) for a few nanoseconds of work.  Here each maximal line of nodes whose
// kernels the caller names (the small_ops fatbin's) is replaced by one node running the line's
// steps in order in one block (`pgk_small_program`; pgk_small_step in the kernels' small_ops.cu).
// Nodes are fused only when nothing else can observe the difference: each interior node has
// exactly one dependency (the previous step) and one dependent (the next), the launch is the
// shape the program runs (block `block`x1x1, grid Nx1x1, no dynamic shared memory, parameters
// given as kernelParams), and the parameters fit a step.  The new node depends on what the
// line's first node depended on and is depended on by what its last node was, with full
// (not programmatic) edges.
#include "graph_fuse.hpp"

#include <cstring>
#include <unordered_map>
#include <vector>

#include "loader.hpp"

namespace pgk {
namespace {

constexpr std::size_t kStepParamBytes = 128;  // PGK_STEP_PARAM_BYTES (small_ops.cu)
struct Step {  // pgk_small_step of small_ops.cu
    std::int32_t kernel;
    std::uint32_t grid;
    std::int64_t params[kStepParamBytes / 8];
};
static_assert(sizeof(Step) == 136, "pgk_small_step layout");

std::vector<CUgraphNode> edges(CUgraphNode node, bool incoming) {
    auto query = incoming ? CU(cuGraphNodeGetDependencies) : CU(cuGraphNodeGetDependentNodes);
    std::size_t n = 0;
    query(node, nullptr, nullptr, &n);
    std::vector<CUgraphNode> out(n);
    std::vector<CUgraphEdgeData> data(n);
    if (n) query(node, out.data(), data.data(), &n);
    out.resize(n);
    return out;
}

// (offset, size) of each of the `count` parameters of `fn` (the count comes from the caller:
// probing past the last one would be a failed driver call, which sanitizers report).
std::vector<std::pair<std::size_t, std::size_t>> param_layout(CUfunction fn, int count) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (int i = 0; i < count; ++i) {
        std::size_t offset = 0, size = 0;
        CU(cuFuncGetParamInfo)(fn, static_cast<std::size_t>(i), &offset, &size);
        out.emplace_back(offset, size);
    }
    return out;
}

}  // namespace

bool can_fuse_small_steps() {
    return CU_HAS(cuGraphNodeGetType) && CU_HAS(cuGraphKernelNodeGetParams) &&
           CU_HAS(cuGraphAddKernelNode) && CU_HAS(cuGraphDestroyNode) &&
           CU_HAS(cuGraphNodeGetDependencies) && CU_HAS(cuGraphNodeGetDependentNodes) &&
           CU_HAS(cuGraphAddDependencies) && CU_HAS(cuFuncGetParamInfo);
}

FuseCount fuse_small_steps(CUgraph graph, const std::unordered_map<CUfunction, StepKind>& kinds,
                           CUfunction program, unsigned block,
                           const std::function<CUdeviceptr(std::size_t)>& alloc) {
    FuseCount count;
    if (!can_fuse_small_steps() || kinds.empty()) return count;

    // 1. The fusable nodes and their steps (queries only: the graph is not changed yet).
    std::size_t n = 0;
    CU(cuGraphGetNodes)(graph, nullptr, &n);
    std::vector<CUgraphNode> nodes(n);
    if (n) CU(cuGraphGetNodes)(graph, nodes.data(), &n);
    std::unordered_map<CUfunction, std::vector<std::pair<std::size_t, std::size_t>>> layouts;
    std::unordered_map<CUgraphNode, Step> steps;
    for (CUgraphNode node : nodes) {
        CUgraphNodeType type = 0;
        CU(cuGraphNodeGetType)(node, &type);
        if (type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
        CUDA_KERNEL_NODE_PARAMS p{};
        CU(cuGraphKernelNodeGetParams)(node, &p);
        auto kind = kinds.find(p.func);
        if (kind == kinds.end() || p.gridDimY != 1 || p.gridDimZ != 1 || p.blockDimX != block ||
            p.blockDimY != 1 || p.blockDimZ != 1 || p.sharedMemBytes != 0 ||
            p.kernelParams == nullptr || p.extra != nullptr)
            continue;
        auto layout = layouts.find(p.func);
        if (layout == layouts.end())
            layout = layouts.emplace(p.func, param_layout(p.func, kind->second.params)).first;
        Step step{};
        step.kernel = kind->second.kind;
        step.grid = p.gridDimX;
        bool fits = true;
        auto* bytes = reinterpret_cast<unsigned char*>(step.params);
        for (std::size_t i = 0; i < layout->second.size() && fits; ++i) {
            const auto [offset, size] = layout->second[i];
            fits = offset + size <= kStepParamBytes;
            if (fits) std::memcpy(bytes + offset, p.kernelParams[i], size);
        }
        if (fits) steps.emplace(node, step);
    }

    // 2. Lines: X follows P when X's only dependency is P and P's only dependent is X.
    std::unordered_map<CUgraphNode, CUgraphNode> next;
    std::unordered_map<CUgraphNode, bool> has_prev;
    for (const auto& entry : steps) {
        const std::vector<CUgraphNode> deps = edges(entry.first, true);
        if (deps.size() != 1 || steps.count(deps[0]) == 0) continue;
        if (edges(deps[0], false).size() != 1) continue;
        next[deps[0]] = entry.first;
        has_prev[entry.first] = true;
    }
    std::vector<std::vector<CUgraphNode>> lines;
    std::size_t total = 0;
    for (CUgraphNode node : nodes) {  // graph order: lines come out in a stable order
        if (steps.count(node) == 0 || has_prev.count(node) != 0) continue;
        std::vector<CUgraphNode> line{node};
        for (auto it = next.find(node); it != next.end(); it = next.find(it->second))
            line.push_back(it->second);
        if (line.size() < 2) continue;
        total += line.size();
        lines.push_back(std::move(line));
    }
    if (lines.empty()) return count;

    // 3. The steps into device memory, then one program node per line.
    std::vector<Step> host;
    host.reserve(total);
    for (const auto& line : lines)
        for (CUgraphNode node : line) host.push_back(steps.at(node));
    const CUdeviceptr base = alloc(host.size() * sizeof(Step));
    CU(cuMemcpyHtoD)(base, host.data(), host.size() * sizeof(Step));
    std::size_t first = 0;
    for (const auto& line : lines) {
        CUdeviceptr at = base + first * sizeof(Step);
        int len = static_cast<int>(line.size());
        void* args[] = {&at, &len};
        CUDA_KERNEL_NODE_PARAMS p{};
        p.func = program;
        p.gridDimX = p.gridDimY = p.gridDimZ = 1;
        p.blockDimX = block;
        p.blockDimY = p.blockDimZ = 1;
        p.kernelParams = args;
        const std::vector<CUgraphNode> before = edges(line.front(), true);
        const std::vector<CUgraphNode> after = edges(line.back(), false);
        CUgraphNode fused = nullptr;
        CU(cuGraphAddKernelNode)(&fused, graph, nullptr, 0, &p);
        for (CUgraphNode dep : before) CU(cuGraphAddDependencies)(graph, &dep, &fused, nullptr, 1);
        for (CUgraphNode dep : after) CU(cuGraphAddDependencies)(graph, &fused, &dep, nullptr, 1);
        for (CUgraphNode node : line) CU(cuGraphDestroyNode)(node);
        first += line.size();
        count.steps += line.size();
        count.launches += 1;
    }
    return count;
}

}  // namespace pgk
