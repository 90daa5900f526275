// The one library definition of the `smem` namespace: every schema and its tags, and the
// build introspection (compiled archs, cluster support, variant names).
// Kernels register per backend beside their code (cpu/*.cpp, cuda/*.cu), autograd in
// autograd.cpp; fake kernels live in smem_ops/ops.py. This file, like every file of the
// library, is Python-free: the plain LibTorch library (libsmem_ops.so, CMakeLists.txt) and
// the Python extension (smem_ops._C, setup.py) build the same sources; only the pybind11
// module (python/module.cpp) is the extension's own.
#include <torch/library.h>

#include "histogram.h"
#include "reduce.h"
#include "smem.h"
#include "transpose.h"

TORCH_LIBRARY(smem, m) {
  const std::vector<at::Tag> pt2 = {at::Tag::pt2_compliant_tag};
  m.def(
      "sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      pt2);
  m.def(
      "sum_of_squares(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
      "ScalarType? dtype=None) -> Tensor",
      pt2);
  m.def("dot(Tensor self, Tensor other) -> Tensor", pt2);
  m.def("transpose(Tensor self, int dim0=-2, int dim1=-1) -> Tensor", pt2);
  m.def(
      "histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *, "
      "ScalarType? dtype=None) -> Tensor",
      pt2);
  // One torch.histc per slice along `dim`: output self.shape without dim, then (bins,).
  m.def(
      "batched_histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *, int dim=-1, "
      "ScalarType? dtype=None) -> Tensor",
      pt2);
  // Internal (the torch.histogram drop-in): counts (int64), or weighted sums (float64), of
  // self over explicit bin edges with torch.histogram's CPU rules; uniform: edges from linspace.
  m.def(
      "_histogram_count(Tensor self, Tensor bin_edges, Tensor? weight=None, bool uniform=False) "
      "-> Tensor",
      pt2);
  // Internal: one rung of a technique ladder (see smem_ops._C.variants(family)), for the
  // benchmark and the tests. CUDA only.
  m.def("_sum_variant(Tensor self, str variant) -> Tensor");
  m.def("_transpose_variant(Tensor self, str variant) -> Tensor");
  m.def("_histc_variant(Tensor self, int bins, float min, float max, str variant) -> Tensor");
  // Internal: the input dtypes a family's checks accept, for the fake kernels (smem_ops/ops.py),
  // which need only the library, not the Python extension.
  m.def("_supported_dtypes(str family) -> str[]", &smem::supported_dtypes);
}

bool smem::cuda_compiled() {
#ifdef SMEM_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<int64_t> smem::compiled_archs() {
#ifdef SMEM_WITH_CUDA
  return smem::cuda::compiled_archs();
#else
  return {};
#endif
}

bool smem::cluster_supported(int64_t device) {
#ifdef SMEM_WITH_CUDA
  return smem::cuda::cluster_supported(device);
#else
  (void)device;
  return false;
#endif
}

std::vector<std::string> smem::variants(const std::string& family) {
  TORCH_CHECK_VALUE(family == "reduce" || family == "transpose" || family == "histogram",
                    "smem_ops: unknown family '", family,
                    "' (expected 'reduce', 'transpose' or 'histogram')");
#ifdef SMEM_WITH_CUDA
  if (family == "reduce") return smem::cuda::reduce_variants();
  if (family == "transpose") return smem::cuda::transpose_variants();
  return smem::cuda::histogram_variants();
#else
  return {};
#endif
}

std::vector<std::string> smem::supported_dtypes(const std::string& family) {
  TORCH_CHECK_VALUE(family == "reduce" || family == "transpose" || family == "histogram",
                    "smem_ops: unknown family '", family,
                    "' (expected 'reduce', 'transpose' or 'histogram')");
  bool (*supported)(at::ScalarType) = family == "reduce"      ? &reduce_dtype_supported
                                      : family == "transpose" ? &transpose_dtype_supported
                                                              : &histc_input_supported;
  std::vector<std::string> names;
  for (int t = 0; t < static_cast<int>(at::ScalarType::NumOptions); ++t)
    if (supported(static_cast<at::ScalarType>(t)))
      names.push_back(dtype_name(static_cast<at::ScalarType>(t)));
  return names;
}
