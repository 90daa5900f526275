// The pybind11 module smem_ops._C: build introspection, and the fast calls of the Python
// wrappers. The ops themselves are torch.ops.smem.*, defined in smem.cpp and always reached
// through the dispatcher. The only file that includes Python: the plain library
// (CMakeLists.txt) leaves it out.
#include <ATen/PythonTorchFunctionTLS.h>
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <string>

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

// smem_ops.dot itself, a C function: at a tiny call, the Python wrapper's frame and checks cost
// more than torch.dot's whole binding. Two plain tensors (torch.Tensor or nn.Parameter, so no
// __torch_function__ of their own) with no torch function mode active take the typed call; any
// other call (keywords, subclasses, modes, bad arguments) goes to the Python wrapper, which is
// also what torch.compile traces in its place (smem_ops/ops.py).
struct DotEntry {
  PyObject* function = nullptr;       // smem_ops.dot, once built
  PyObject* python_dot = nullptr;     // smem_ops.ops._dot_python
  PyTypeObject* parameter = nullptr;  // torch.nn.Parameter
  std::string doc;                    // its text signature, then the Python wrapper's doc
  PyMethodDef def{};
};
DotEntry dot_entry;

bool plain_tensor(PyObject* o) {
  return Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(THPVariableClass) ||
         Py_TYPE(o) == dot_entry.parameter;
}

PyObject* dot(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  if (nargs == 2 && kwnames == nullptr && plain_tensor(args[0]) && plain_tensor(args[1]) &&
      !at::impl::torch_function_mode_enabled()) {
    const at::Tensor& x = THPVariable_Unpack(args[0]);
    const at::Tensor& other = THPVariable_Unpack(args[1]);
    at::Tensor out;
    {
      const py::gil_scoped_release no_gil;
      out = smem_ops::dot(x, other);
    }
    return THPVariable_Wrap(std::move(out));
  }
  return PyObject_Vectorcall(dot_entry.python_dot, args, nargs, kwnames);
  END_HANDLE_TH_ERRORS
}

// Builds smem_ops.dot over the Python wrapper it falls back to; once: a second call (a reload of
// smem_ops.ops) returns the same function.
py::object make_dot(const py::object& python_dot, const py::object& parameter) {
  if (dot_entry.function == nullptr) {
    const py::object doc = python_dot.attr("__doc__");  // None under python -OO
    dot_entry.doc =
        "dot(x, other)\n--\n\n" + (doc.is_none() ? std::string() : doc.cast<std::string>());
    dot_entry.def = {"dot", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&dot)),
                     METH_FASTCALL | METH_KEYWORDS, dot_entry.doc.c_str()};
    const py::str module("smem_ops");
    dot_entry.function = PyCFunction_NewEx(&dot_entry.def, nullptr, module.ptr());
    if (dot_entry.function == nullptr) throw py::error_already_set();
    // held for the life of the process, as the function is
    dot_entry.python_dot = python_dot.inc_ref().ptr();
    dot_entry.parameter = reinterpret_cast<PyTypeObject*>(parameter.inc_ref().ptr());
  }
  return py::reinterpret_borrow<py::object>(dot_entry.function);
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
  m.def("_make_dot", &make_dot, "smem_ops.dot as a C function over its Python wrapper");
}
