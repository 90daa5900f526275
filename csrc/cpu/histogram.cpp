// CPU histc: each thread counts into its own int64 histogram (no sharing, no atomics), the
// private histograms are summed bin by bin at the end. Integer counts make the result exact
// and independent of how the work was split.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <limits>

#include "histogram.h"

namespace smem::cpu {
namespace {

constexpr int64_t kGrain = 32768;

// Finite min and max of x (auto-range); NaN and +-inf are left out.
template <typename T, typename M>
std::pair<M, M> finite_range(const T* x, int64_t n) {
  const int64_t chunks = (n + kGrain - 1) / kGrain;
  std::vector<M> lo(chunks, std::numeric_limits<M>::infinity());
  std::vector<M> hi(chunks, -std::numeric_limits<M>::infinity());
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      M l = lo[c], h = hi[c];
      for (int64_t i = c * kGrain, e = std::min(n, i + kGrain); i < e; ++i) {
        const M v = static_cast<M>(x[i]);
        if (std::isfinite(v)) {
          l = std::min(l, v);
          h = std::max(h, v);
        }
      }
      lo[c] = l;
      hi[c] = h;
    }
  });
  M l = std::numeric_limits<M>::infinity(), h = -l;
  for (int64_t c = 0; c < chunks; ++c) {
    l = std::min(l, lo[c]);
    h = std::max(h, hi[c]);
  }
  if (l > h) l = h = M(0);  // no finite value
  return {l, h};
}

template <typename T>
void histc_kernel(const T* x, int64_t n, const HistcPlan& plan, int64_t* counts) {
  using M = histc_math_t<T>;
  M lo = static_cast<M>(plan.lo), hi = static_cast<M>(plan.hi);
  if (plan.auto_range) std::tie(lo, hi) = finite_range<T, M>(x, n);
  histc_widen_empty_range(lo, hi);
  const int64_t bins = plan.bins;
  const int nthreads = at::get_num_threads();
  std::vector<int64_t> priv(static_cast<size_t>(nthreads) * bins, 0);
  const HistcBins<M> bin_of(lo, hi, bins);
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    int64_t* h = priv.data() + static_cast<int64_t>(at::get_thread_num()) * bins;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = bin_of(static_cast<M>(x[i]));
      if (b >= 0) ++h[b];
    }
  });
  at::parallel_for(0, bins, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      int64_t s = 0;
      for (int t = 0; t < nthreads; ++t) s += priv[static_cast<int64_t>(t) * bins + b];
      counts[b] = s;
    }
  });
}

at::Tensor histc_cpu(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                     const at::Scalar& max, std::optional<at::ScalarType> dtype) {
  return histc_host(
      self, bins, min, max, dtype, [](const at::Tensor& x, const HistcPlan& plan, at::Tensor& out) {
        // exact int64 counts, then the requested dtype (as torch's .to())
        at::Tensor counts = out.scalar_type() == at::kLong ? out : at::empty_like(out, at::kLong);
        AT_DISPATCH_ALL_TYPES_AND2(
            at::kHalf, at::kBFloat16, x.scalar_type(), "smem_histc_cpu", [&] {
              histc_kernel<scalar_t>(x.const_data_ptr<scalar_t>(), x.numel(), plan,
                                     counts.mutable_data_ptr<int64_t>());
            });
        if (!counts.is_same(out)) out.copy_(counts);
      });
}

}  // namespace
}  // namespace smem::cpu

TORCH_LIBRARY_IMPL(smem, CPU, m) { m.impl("histc", &smem::cpu::histc_cpu); }
