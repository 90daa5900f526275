// The technique ladder of histc (torch.ops.smem._histc_variant, smem_ops.variants("histogram")):
// the same exact, deterministic counts (integer atomics commute), binned five ways, naive to
// best. Every variant runs through histc_with (histogram/histogram_ops.cpp) with its own Request;
// choose_shape (histogram/shape.h) gives each its counter layout.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "cuda/histogram/shape.h"
#include "cuda/ops.h"
#include "smem.h"

namespace smem::cuda {
namespace {
using histogram::Force;
using histogram::kMaxClusterLog2;
using histogram::kMaxSplitLog2;
using histogram::Request;
using histogram::Variant;

// Indexed by Variant.
constexpr const char* kVariantNames[] = {
    // global_atomics: every element adds 1 to a global 64-bit counter (the naive histogram).
    // Costs: all traffic goes to L2 atomics, and popular bins serialize.
    "global_atomics",
    // shared: one private histogram of 32-bit counters per block in shared memory, added to
    // the global counts once at the end (privatization). Costs: a warp's equal bins serialize.
    "shared",
    // shared_per_warp: a private histogram per warp where the bins fit, so warps don't fight
    // over a counter; 16-byte loads, two in flight per thread. Costs: more shared memory.
    "shared_per_warp",
    // cluster (sm_90): the bins spread over the shared memory of a thread-block cluster, each
    // block holding every C-th bin; the others add to it through DSMEM (histogram_cluster.cuh).
    // Costs: a remote add has a fraction of a local shared atomic's throughput.
    "cluster",
    // final: what smem.histc runs. Per-warp copies up to the opt-in limit, a pattern table for
    // large 2-byte inputs, then packed 16- and 6-bit counters, split over a group of blocks, and
    // beyond that global counters with warp aggregation (__match_any_sync: one atomic per bin
    // per warp). Costs: the most code; choose_shape decides.
    "final",
};
static_assert(std::size(kVariantNames) == static_cast<size_t>(Variant::kFinal) + 1);

// l where `size` spells 2^l, 1 <= l <= max_log2; else 0.
int log2_of_size(c10::string_view size, int max_log2) {
  for (int l = 1; l <= max_log2; ++l)
    if (size == std::to_string(1 << l)) return l;
  return 0;
}

// `variant` is one of kVariantNames; "cluster:N" (N = 2, 4, 8 or 16) forces the cluster size,
// and "final:lut16", "final:packed16", "final:packed6" or "final:split:N" (N = 2, 4, 8) that
// shape whatever the size (for the tests).
at::Tensor histc_variant_cuda(const at::Tensor& self, int64_t bins, double min, double max,
                              c10::string_view variant) {
  Request request;
  const auto colon = variant.find(':');
  const c10::string_view name = variant.substr(0, colon);
  for (const auto& [name, force] :
       {std::pair{"final:lut16", Force::kLut16}, std::pair{"final:packed16", Force::kPacked16},
        std::pair{"final:packed6", Force::kPacked6}})
    if (variant == name) {
      request.force = force;
      return histc_with(self, bins, min, max, at::kLong, request);
    }
  constexpr c10::string_view kSplitPrefix = "final:split:";
  if (variant.substr(0, kSplitPrefix.size()) == kSplitPrefix) {
    const c10::string_view size = variant.substr(kSplitPrefix.size());
    request.log2_split = log2_of_size(size, kMaxSplitLog2);
    TORCH_CHECK_VALUE(request.log2_split > 0, "smem._histc_variant: split size '", size,
                      "' is not one of 2, 4, 8");
    request.force = Force::kSplit;
    return histc_with(self, bins, min, max, at::kLong, request);
  }
  if (colon != c10::string_view::npos && name == "cluster") {
    const c10::string_view size = variant.substr(colon + 1);
    request.log2_cluster = log2_of_size(size, kMaxClusterLog2);
    TORCH_CHECK_VALUE(request.log2_cluster > 0, "smem._histc_variant: cluster size '", size,
                      "' is not one of 2, 4, 8, 16");
  }
  for (int v = 0; v < static_cast<int>(std::size(kVariantNames)); ++v)
    if (name == kVariantNames[v] && (colon == c10::string_view::npos || request.log2_cluster > 0)) {
      request.variant = static_cast<Variant>(v);
      return histc_with(self, bins, min, max, at::kLong, request);
    }
  TORCH_CHECK_VALUE(false, "smem._histc_variant: unknown variant '", variant,
                    "' (expected one of smem_ops.variants('histogram'))");
}

}  // namespace

std::vector<std::string> histogram_variants() {
  return {std::begin(kVariantNames), std::end(kVariantNames)};
}

}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) { m.impl("_histc_variant", &smem::cuda::histc_variant_cuda); }
