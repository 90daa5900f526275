// The one library definition of the `smem` namespace: every schema and its tags.
// Kernels register per backend beside their code (cpu/*.cpp, cuda/*.cu), autograd in
// autograd.cpp; fake kernels live in smem_ops/ops.py. The pybind11 module only answers
// introspection questions: the ops themselves always go through the dispatcher.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/library.h>

#include "smem.h"

TORCH_LIBRARY(smem, m) {
  const std::vector<at::Tag> pt2 = {at::Tag::pt2_compliant_tag};
  m.def("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        pt2);
  m.def("sum_of_squares(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        pt2);
  m.def("dot(Tensor self, Tensor other) -> Tensor", pt2);
  m.def("transpose(Tensor self, int dim0=-2, int dim1=-1) -> Tensor", pt2);
  m.def("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *, "
        "ScalarType? dtype=None) -> Tensor",
        pt2);
  // Internal: one rung of a technique ladder (see smem_ops._C.variants(family)), for the
  // benchmark and the tests. CUDA only.
  m.def("_sum_variant(Tensor self, str variant) -> Tensor");
  m.def("_transpose_variant(Tensor self, str variant) -> Tensor");
  m.def("_histc_variant(Tensor self, int bins, float min, float max, str variant) -> Tensor");
}

namespace {

bool cuda_compiled() {
#ifdef SMEM_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<int64_t> compiled_archs() {
#ifdef SMEM_WITH_CUDA
  return smem::cuda::compiled_archs();
#else
  return {};
#endif
}

bool cluster_supported(int64_t device) {
#ifdef SMEM_WITH_CUDA
  return smem::cuda::cluster_supported(device);
#else
  (void)device;
  return false;
#endif
}

}  // namespace

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

PYBIND11_MODULE(_C, m) {
  m.doc() = "smem_ops introspection; the ops are torch.ops.smem.*";
  m.def("cuda_compiled", &cuda_compiled, "Whether the CUDA kernels were built");
  m.def("compiled_archs", &compiled_archs, "SM architectures the CUDA kernels were built for");
  m.def("cluster_supported", &cluster_supported, pybind11::arg("device") = 0,
        "Whether thread-block cluster kernels can run on this CUDA device");
  m.def("variants", &smem::variants, pybind11::arg("family"),
        "Names of the technique-ladder variants of a family: 'reduce', 'transpose', 'histogram'");
}
