// CPU _histogram_count: counts (or weighted sums) over explicit bin edges with torch.histogram's
// rules (edge_bin, edge_bins.h). Each chunk of kGrain elements bins into its own
// private histogram; the chunks' histograms are then added in chunk order. Which elements a
// chunk holds depends only on n, so weighted sums are bitwise reproducible at any thread count.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "histogram_edges.h"

namespace smem::cpu {
namespace {

constexpr int64_t kGrain = 1 << 16;
// At most this many chunks, and chunks x bins at most kMaxPrivate counters: long inputs get
// longer chunks (still a split fixed by n and bins alone), so the private buffers stay small.
constexpr int64_t kMaxChunks = 256, kMaxPrivate = int64_t(1) << 22;

template <typename T, typename Acc>
void count_over_edges(const T* x, const T* w, int64_t n, const T* edges, int64_t E, bool uniform,
                      Acc* out) {
  const int64_t bins = E - 1;
  const int64_t most_chunks = std::clamp<int64_t>(kMaxPrivate / bins, 1, kMaxChunks);
  const int64_t per_chunk = std::max(kGrain, (n + most_chunks - 1) / most_chunks);
  const int64_t chunks = (n + per_chunk - 1) / per_chunk;
  std::vector<Acc> priv(static_cast<size_t>(chunks * bins), Acc(0));
  const T left = edges[0], right = edges[E - 1];
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      Acc* h = priv.data() + c * bins;
      for (int64_t i = c * per_chunk, e = std::min(n, i + per_chunk); i < e; ++i) {
        const int64_t b = edge_bin<T, int64_t>(x[i], edges, E, left, right, uniform);
        if (b >= 0) h[b] += w ? static_cast<Acc>(w[i]) : Acc(1);
      }
    }
  });
  at::parallel_for(0, bins, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      Acc s = 0;
      for (int64_t c = 0; c < chunks; ++c) s += priv[c * bins + b];
      out[b] = s;
    }
  });
}

at::Tensor histogram_count_cpu(const at::Tensor& self, const at::Tensor& bin_edges,
                               const std::optional<at::Tensor>& weight, bool uniform) {
  check_histogram_count(self, bin_edges, weight);
  at::Tensor out = histogram_count_output(self, bin_edges, weight.has_value());
  if (self.numel() == 0) return out.zero_();
  const at::Tensor x = self.contiguous(), edges = bin_edges.contiguous();
  const at::Tensor w = weight ? weight->contiguous() : at::Tensor();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "smem_histogram_count_cpu", [&] {
    const scalar_t* wp = w.defined() ? w.const_data_ptr<scalar_t>() : nullptr;
    if (wp)
      count_over_edges(x.const_data_ptr<scalar_t>(), wp, x.numel(),
                       edges.const_data_ptr<scalar_t>(), edges.numel(), uniform,
                       out.mutable_data_ptr<double>());
    else
      count_over_edges(x.const_data_ptr<scalar_t>(), wp, x.numel(),
                       edges.const_data_ptr<scalar_t>(), edges.numel(), uniform,
                       out.mutable_data_ptr<int64_t>());
  });
  return out;
}

}  // namespace
}  // namespace smem::cpu

TORCH_LIBRARY_IMPL(smem, CPU, m) { m.impl("_histogram_count", &smem::cpu::histogram_count_cpu); }
