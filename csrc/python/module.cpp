// The pybind11 module smem_ops._C: build introspection only (the ops themselves are
// torch.ops.smem.*, defined in smem.cpp and always reached through the dispatcher).
// The only file that includes Python: the plain library (CMakeLists.txt) leaves it out.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "smem.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "smem_ops introspection; the ops are torch.ops.smem.*";
  m.def("cuda_compiled", &smem::cuda_compiled, "Whether the CUDA kernels were built");
  m.def("compiled_archs", &smem::compiled_archs,
        "SM architectures the CUDA kernels were built for");
  m.def("cluster_supported", &smem::cluster_supported, pybind11::arg("device") = 0,
        "Whether thread-block cluster kernels can run on this CUDA device");
  m.def("variants", &smem::variants, pybind11::arg("family"),
        "Names of the technique-ladder variants of a family: 'reduce', 'transpose', 'histogram'");
}
