// The pybind11 module smem_ops._C: build introspection, and the fast calls of the Python
// wrappers. The ops themselves are torch.ops.smem.*, defined in smem.cpp and always reached
// through the dispatcher. The only file that includes Python: the plain library
// (CMakeLists.txt) leaves it out.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "smem.h"
#include "smem_ops/smem_ops.h"

namespace {

namespace py = pybind11;

// The wrappers' commonest calls, for plain tensors outside torch.compile (smem_ops/ops.py says
// when): the C++ API's typed calls from the top of the dispatcher, so autograd, Python dispatch
// modes, vmap, the device guard and the current stream apply as through torch.ops. What they
// skip is torch.ops' parsing of every argument against the schema into a stack of IValues,
// about half of a tiny call's host time. As torch's own bindings do, the op runs without the GIL.
at::Tensor reduce_all(const at::Tensor& x, bool squares) {
  return squares ? smem_ops::sum_of_squares(x) : smem_ops::sum(x);
}
at::Tensor reduce_dim(const at::Tensor& x, int64_t dim, bool squares) {
  const at::IntArrayRef dims(&dim, 1);
  return squares ? smem_ops::sum_of_squares(x, dims) : smem_ops::sum(x, dims);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "smem_ops introspection and fast calls; the ops are torch.ops.smem.*";
  m.def("cuda_compiled", &smem::cuda_compiled, "Whether the CUDA kernels were built");
  m.def("compiled_archs", &smem::compiled_archs,
        "SM architectures the CUDA kernels were built for");
  m.def("cluster_supported", &smem::cluster_supported, py::arg("device") = 0,
        "Whether thread-block cluster kernels can run on this CUDA device");
  m.def("variants", &smem::variants, py::arg("family"),
        "Names of the technique-ladder variants of a family: 'reduce', 'transpose', 'histogram'");
  const auto no_gil = py::call_guard<py::gil_scoped_release>();
  m.def("_reduce_all", &reduce_all, no_gil,
        "smem.sum (squares=False) or smem.sum_of_squares of x over every dim");
  m.def("_reduce_dim", &reduce_dim, no_gil,
        "smem.sum (squares=False) or smem.sum_of_squares of x over one dim");
  m.def("_dot", &smem_ops::dot, no_gil, "smem.dot(x, other)");
}
