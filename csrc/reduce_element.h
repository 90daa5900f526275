// The element-level rules of a reduction, shared by the CPU and CUDA kernels: the map applied
// to each element and the type it is summed in. Free of torch's tensor headers, so that the CUDA
// kernels' translation units stay light (cuda/launch.h says why); the host flow is reduce.h.
#pragma once

#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

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
