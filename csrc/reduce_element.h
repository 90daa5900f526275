// The element-level rules of a reduction, shared by the CPU and CUDA kernels: the map applied
// to each element and the type it is summed in. Free of torch's tensor headers, so that the CUDA
// kernels' translation units stay light (cuda/launch.h says why); the host flow is reduce.h.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/complex.h>

#include <cstdint>
#include <type_traits>

namespace smem {

// The map applied to each element before it is summed.
enum class ReduceMap { kIdentity, kSquare, kProduct };

// Accumulation type of a reduction, shared by CPU and CUDA:
// bool/integers -> int64, fp16/bf16/fp32 -> fp32, fp64 -> fp64, complex -> its own type.
template <typename T> struct AccumulateType { using type = T; };
template <> struct AccumulateType<bool> { using type = int64_t; };
template <> struct AccumulateType<uint8_t> { using type = int64_t; };
template <> struct AccumulateType<int8_t> { using type = int64_t; };
template <> struct AccumulateType<int16_t> { using type = int64_t; };
template <> struct AccumulateType<int32_t> { using type = int64_t; };
template <> struct AccumulateType<c10::Half> { using type = float; };
template <> struct AccumulateType<c10::BFloat16> { using type = float; };
template <typename T> using acc_t = typename AccumulateType<T>::type;

// Whether T is a 16-bit float (fp16 or bf16), summed in fp32.
template <typename T>
inline constexpr bool kHalfFloat = std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>;

// The dtypes a reduction takes: calls f(T{}) with T the element type of `dtype` and returns
// true, or returns false where `dtype` is not one of them.
template <typename F>
bool visit_reduce_dtype(c10::ScalarType dtype, F&& f) {
  switch (dtype) {
    case c10::ScalarType::Bool: f(bool{}); return true;
    case c10::ScalarType::Byte: f(uint8_t{}); return true;
    case c10::ScalarType::Char: f(int8_t{}); return true;
    case c10::ScalarType::Short: f(int16_t{}); return true;
    case c10::ScalarType::Int: f(int32_t{}); return true;
    case c10::ScalarType::Long: f(int64_t{}); return true;
    case c10::ScalarType::Half: f(c10::Half{}); return true;
    case c10::ScalarType::BFloat16: f(c10::BFloat16{}); return true;
    case c10::ScalarType::Float: f(float{}); return true;
    case c10::ScalarType::Double: f(double{}); return true;
    case c10::ScalarType::ComplexFloat: f(c10::complex<float>{}); return true;
    case c10::ScalarType::ComplexDouble: f(c10::complex<double>{}); return true;
    default: return false;
  }
}

inline bool reduce_dtype_supported(c10::ScalarType dtype) {
  return visit_reduce_dtype(dtype, [](auto) {});
}

// The output of a reduction of T: calls f(out) with `out` typed as T (result dtype == input
// dtype) or, for bool and integer inputs promoted by the default dtype rule, as int64, and
// returns true; false for any other output dtype.
template <typename T, typename F>
bool visit_reduce_output(c10::ScalarType out_dtype, void* out, F&& f) {
  if (out_dtype == c10::CppTypeToScalarType<T>::value) {
    f(static_cast<T*>(out));
    return true;
  }
  if constexpr (std::is_integral_v<T>) {
    if (out_dtype == c10::ScalarType::Long) {
      f(static_cast<int64_t*>(out));
      return true;
    }
  }
  return false;
}

// x, x*x or x*y in the accumulate type A (so squares of fp16/int8 neither round nor wrap).
template <ReduceMap M, typename A, typename T>
C10_HOST_DEVICE inline A map_element(T a, T b) {
  if constexpr (M == ReduceMap::kIdentity) {
    return static_cast<A>(a);
  } else if constexpr (M == ReduceMap::kSquare) {
    const A v = static_cast<A>(a);
    return v * v;
  } else {
    return static_cast<A>(a) * static_cast<A>(b);
  }
}

}  // namespace smem
