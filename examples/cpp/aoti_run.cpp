// Runs an AOTInductor package whose model calls smem ops, from C++ with no Python, and checks
// its outputs against the ones Python computed (examples/cpp/export_model.py writes both):
//
//   aoti_run model.pt2 io.pt
//
// io.pt is torch.save({"inputs": [...], "outputs": [...]}) of CPU tensors. The package's model
// finds smem::transpose, smem::sum, smem::histc in the dispatcher when it runs: the program
// must have libsmem_ops.so loaded by then. Linking smem_ops::smem_ops and including its header
// does that (the header references the library, so even --as-needed keeps it); a program that
// cannot link it can dlopen("libsmem_ops.so", RTLD_NOW | RTLD_GLOBAL) before loading the model.
#include <smem_ops/smem_ops.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<at::Tensor> tensor_list(const c10::Dict<c10::IValue, c10::IValue>& io, const std::string& key) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : io.at(key).toListRef()) out.push_back(v.toTensor());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " model.pt2 io.pt" << std::endl;
    return 2;
  }
  // The model will look these up when it runs; say so plainly if they are missing.
  for (const char* op : {"smem::transpose", "smem::sum", "smem::histc"}) {
    if (!c10::Dispatcher::singleton().findSchema({op, ""}).has_value()) {
      std::cerr << "aoti_run: " << op << " is not registered: libsmem_ops.so is not loaded" << std::endl;
      return 1;
    }
  }

  std::ifstream file(argv[2], std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto io = torch::pickle_load(bytes).toGenericDict();
  std::vector<at::Tensor> inputs = tensor_list(io, "inputs");
  const std::vector<at::Tensor> expected = tensor_list(io, "outputs");

  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  auto metadata = loader.get_metadata();
  const std::string device = metadata.count("AOTI_DEVICE_KEY") ? metadata["AOTI_DEVICE_KEY"] : "cpu";
  std::cout << "aoti_run: " << argv[1] << " on " << device << std::endl;
  for (at::Tensor& x : inputs) x = x.to(torch::Device(device));

  const std::vector<at::Tensor> outputs = loader.run(inputs);
  if (outputs.size() != expected.size()) {
    std::cerr << "aoti_run: " << outputs.size() << " outputs, Python had " << expected.size() << std::endl;
    return 1;
  }
  int failures = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor got = outputs[i].cpu();
    // Same kernels, same inputs: bitwise the same results as Python's.
    const bool ok = got.scalar_type() == expected[i].scalar_type() && got.sizes() == expected[i].sizes() &&
                    torch::equal(got, expected[i]);
    std::cout << "  output " << i << " " << got.scalar_type() << got.sizes() << ": "
              << (ok ? "equal to Python's" : "DIFFERS from Python's") << std::endl;
    failures += !ok;
  }
  std::cout << (failures ? "aoti_run: FAILED" : "aoti_run: all outputs equal") << std::endl;
  return failures ? 1 : 0;
}
