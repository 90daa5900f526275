// Declarations shared between the library definition (smem.cpp), the backends, the C++ API
// (api.cpp) and the pybind11 module (python/module.cpp).
#pragma once

#include <c10/core/ScalarType.h>

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#ifdef SMEM_WITH_CUDA
#include "cuda/build_info.h"
#endif

namespace smem {

// A dtype as Python prints it ("torch.float32"), so C++ errors read like torch's own and
// match the fake kernels' messages word for word.
inline std::string dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: return "torch.bool";
    case c10::kByte: return "torch.uint8";
    case c10::kChar: return "torch.int8";
    case c10::kShort: return "torch.int16";
    case c10::kInt: return "torch.int32";
    case c10::kLong: return "torch.int64";
    case c10::kUInt16: return "torch.uint16";
    case c10::kUInt32: return "torch.uint32";
    case c10::kUInt64: return "torch.uint64";
    case c10::kHalf: return "torch.float16";
    case c10::kBFloat16: return "torch.bfloat16";
    case c10::kFloat: return "torch.float32";
    case c10::kDouble: return "torch.float64";
    case c10::kComplexHalf: return "torch.complex32";
    case c10::kComplexFloat: return "torch.complex64";
    case c10::kComplexDouble: return "torch.complex128";
    case c10::ScalarType::Float8_e5m2: return "torch.float8_e5m2";
    case c10::ScalarType::Float8_e4m3fn: return "torch.float8_e4m3fn";
    case c10::ScalarType::Float8_e5m2fnuz: return "torch.float8_e5m2fnuz";
    case c10::ScalarType::Float8_e4m3fnuz: return "torch.float8_e4m3fnuz";
    case c10::ScalarType::Float8_e8m0fnu: return "torch.float8_e8m0fnu";
    case c10::ScalarType::QInt8: return "torch.qint8";
    case c10::ScalarType::QUInt8: return "torch.quint8";
    case c10::ScalarType::QInt32: return "torch.qint32";
    default: {
      // the rest (bits, sub-byte, float4, packed quantized) print as their C++ names in lower
      // case: Bits8 -> torch.bits8, Float4_e2m1fn_x2 -> torch.float4_e2m1fn_x2
      std::string name = c10::toString(t);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return "torch." + name;
    }
  }
}

// Build introspection (smem.cpp), exposed as smem_ops._C.* and smem_ops::* in C++.
// Whether the CUDA kernels were built; the SM architectures they were built for (none in a
// CPU-only build); whether thread-block cluster kernels can run on a CUDA device.
bool cuda_compiled();
std::vector<int64_t> compiled_archs();
bool cluster_supported(int64_t device);
// Names of the technique-ladder variants of a family ("reduce", "transpose", "histogram"),
// from naive to best. Variants are CUDA kernels: a CPU-only build has none.
std::vector<std::string> variants(const std::string& family);
// The input dtypes a family's checks accept ("reduce", "transpose", "histogram"), as torch
// names them ("torch.float32"): the one list the fake kernels check against too.
std::vector<std::string> supported_dtypes(const std::string& family);

}  // namespace smem
