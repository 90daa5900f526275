// The smem ops from C++ (include/smem_ops/smem_ops.h), on the CPU and, when there is a GPU and
// the CUDA kernels were built, on CUDA; each result checked against libtorch's own op.
// Exits 1 if any check fails. ctest runs it (examples/cpp/CMakeLists.txt).
#include <smem_ops/smem_ops.h>
#include <torch/torch.h>

#include <iostream>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "  ok    " : "  FAIL  ") << what << std::endl;
  if (!ok) ++failures;
}

// Same dtype, shape and values (to a float tolerance where the summation order differs).
bool same(const torch::Tensor& got, const torch::Tensor& want, double rtol = 1e-5, double atol = 1e-5) {
  return got.scalar_type() == want.scalar_type() && got.sizes() == want.sizes() &&
         got.device() == want.device() && torch::allclose(got, want, rtol, atol);
}

void run_on(const torch::Device& device) {
  std::cout << device << ":" << std::endl;
  torch::manual_seed(0);
  const auto opts = torch::TensorOptions().device(device);
  const torch::Tensor x = torch::randn({300, 129}, opts);

  // sum: all elements, over dims, keepdim, dtype=, integer promotion to int64
  check(same(smem_ops::sum(x), x.sum(), 1e-5, 1e-3), "sum(x)");
  check(same(smem_ops::sum(x, {1}), x.sum({1})), "sum(x, {1})");
  check(same(smem_ops::sum(x, {0}, /*keepdim=*/true, torch::kDouble), x.sum({0}, true, torch::kDouble)),
        "sum(x, {0}, keepdim, kDouble)");
  const torch::Tensor xi = torch::randint(-100, 100, {1000, 7}, opts.dtype(torch::kInt));
  check(torch::equal(smem_ops::sum(xi, {0}), xi.sum({0})) && smem_ops::sum(xi).scalar_type() == torch::kLong,
        "sum(int32) == at::sum, int64 result");

  // sum_of_squares, dot
  check(same(smem_ops::sum_of_squares(x, {1}), (x * x).sum({1}), 1e-5, 1e-4), "sum_of_squares(x, {1})");
  const torch::Tensor a = torch::randn({4097}, opts), b = torch::randn({4097}, opts);
  check(same(smem_ops::dot(a, b), torch::dot(a, b), 1e-5, 1e-3), "dot(a, b)");

  // transpose: always a new contiguous tensor, equal to transpose().contiguous()
  const torch::Tensor t = smem_ops::transpose(x);
  check(torch::equal(t, x.transpose(0, 1).contiguous()) && t.is_contiguous(), "transpose(x)");
  const torch::Tensor x3 = torch::randn({5, 33, 17}, opts).to(torch::kHalf);
  check(torch::equal(smem_ops::transpose(x3, 0, 2), x3.transpose(0, 2).contiguous()),
        "transpose(fp16 x3, 0, 2)");

  // histc: same counts as at::histc; exact int64 counts with dtype=
  const torch::Tensor h = smem_ops::histc(x, 50, -2.0, 2.0);
  const torch::Tensor want_h = torch::histc(x, 50, -2.0, 2.0);
  check(torch::equal(h, want_h), "histc(x, 50, -2, 2) == at::histc");
  check(torch::equal(smem_ops::histc(x, 50, -2.0, 2.0, torch::kLong), want_h.to(torch::kLong)),
        "histc(..., dtype=kLong)");
  check(torch::equal(smem_ops::histc(x, 10), torch::histc(x, 10)), "histc(x, 10) auto range");
  // batched_histc: one at::histc per column
  std::vector<torch::Tensor> per_column;
  for (int64_t j = 0; j < x.size(1); ++j)
    per_column.push_back(torch::histc(x.select(1, j), 20, -2.0, 2.0));
  check(torch::equal(smem_ops::batched_histc(x, 20, -2.0, 2.0, /*dim=*/0), torch::stack(per_column)),
        "batched_histc(x, 20, -2, 2, dim=0) == at::histc per column");

  // autograd through the dispatcher: d/dx sum_of_squares(x) = 2x, d/dx transpose = transpose
  const torch::Tensor xg = x.detach().requires_grad_();
  smem_ops::sum_of_squares(xg).backward();
  check(same(xg.grad(), 2 * x), "sum_of_squares backward == 2x");
  const torch::Tensor yg = x3.to(torch::kFloat).requires_grad_();
  const torch::Tensor g = torch::randn({17, 33, 5}, opts);
  (smem_ops::transpose(yg, 0, 2) * g).sum().backward();
  check(torch::equal(yg.grad(), g.transpose(0, 2).contiguous()), "transpose backward");
  {
    const torch::NoGradGuard no_grad;
    check(!smem_ops::sum(xg).requires_grad(), "no graph under NoGradGuard");
  }
}

}  // namespace

int main() {
  std::cout << "smem_ops: CUDA kernels built: " << (smem_ops::cuda_compiled() ? "yes" : "no")
            << std::endl;
  run_on(torch::kCPU);
  if (smem_ops::cuda_compiled() && torch::cuda::is_available()) {
    run_on(torch::Device(torch::kCUDA, 0));
  } else {
    std::cout << "CUDA: skipped (" << (smem_ops::cuda_compiled() ? "no CUDA device" : "CPU-only build")
              << ")" << std::endl;
  }
  std::cout << (failures ? "FAILED: " + std::to_string(failures) + " check(s)"
                         : std::string("all checks passed"))
            << std::endl;
  return failures ? 1 : 0;
}
