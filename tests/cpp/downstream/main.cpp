// The installed C++ API, from a project that only did find_package(smem_ops): each op runs
// and agrees with ATen, and bad input throws the c10::Error kind Python maps to ValueError,
// TypeError and IndexError, with the message Python shows (tests/test_errors.py pins the same
// three messages for smem_ops.sum / smem_ops.histc).
#include <smem_ops/smem_ops.h>

#include <ATen/ATen.h>

#include <functional>
#include <iostream>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "  ok    " : "  FAIL  ") << what << std::endl;
  if (!ok) ++failures;
}

// fn throws exactly E (a c10::Error subclass) whose msg() is `message`.
template <typename E>
void check_throws(const std::function<void()>& fn, const std::string& kind, const std::string& message) {
  try {
    fn();
    check(false, kind + " not thrown, expected: " + message);
  } catch (const E& e) {
    check(e.msg() == message, kind + ": " + e.msg());
  } catch (const c10::Error& e) {
    check(false, "wrong c10::Error kind, expected " + kind + ": " + e.msg());
  }
}

}  // namespace

int main() {
  std::cout << "smem_ops (installed): CUDA kernels built: " << (smem_ops::cuda_compiled() ? "yes" : "no")
            << std::endl;
  const at::Tensor x = at::arange(12, at::kFloat).reshape({3, 4});
  check(at::equal(smem_ops::sum(x, {1}), x.sum({1})), "sum(x, {1})");
  check(at::equal(smem_ops::sum_of_squares(x), (x * x).sum()), "sum_of_squares(x)");
  check(at::equal(smem_ops::dot(x[0], x[1]), at::dot(x[0], x[1])), "dot");
  check(at::equal(smem_ops::transpose(x), x.t().contiguous()), "transpose(x)");
  check(at::equal(smem_ops::histc(x, 4, 0, 12), at::histc(x, 4, 0, 12)), "histc(x, 4, 0, 12)");

  const at::Tensor f = at::randn({2, 3});
  check_throws<c10::IndexError>([&] { smem_ops::sum(f, {2}); }, "c10::IndexError",
                                "smem.sum: dim 2 is out of range for a tensor of dimension 2");
  check_throws<c10::TypeError>([&] { smem_ops::sum(f.to(at::kUInt16)); }, "c10::TypeError",
                               "smem.sum: input dtype torch.uint16 is not supported");
  check_throws<c10::ValueError>([&] { smem_ops::histc(f, 0); }, "c10::ValueError",
                                "smem.histc: bins must be > 0, but got 0");
  // The same through autograd's kernel (an input that requires grad).
  check_throws<c10::IndexError>([&] { smem_ops::sum(f.clone().requires_grad_(), {2}); },
                                "c10::IndexError (requires_grad)",
                                "smem.sum: dim 2 is out of range for a tensor of dimension 2");

  std::cout << (failures ? "downstream: FAILED" : "downstream: all checks passed") << std::endl;
  return failures ? 1 : 0;
}
