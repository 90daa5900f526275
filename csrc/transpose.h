// Host-side planning shared by the CPU and CUDA transposes.
//
// smem.transpose(x, d0, d1) writes y = x.transpose(d0, d1) into a new contiguous tensor.
// Seen from the output, that is a strided gather: output dim i has size S[i] and reads the
// input with stride T[i]. Size-1 dims are dropped and neighbours that are contiguous in the
// input too are merged, so any transpose becomes one of two shapes:
//   - the last output dim has the smallest input stride: rows are copied (coalesced both ways);
//   - another dim k reads with the smallest stride: a tile of (k, last) is staged through
//     on-chip memory, so reads run along k and writes along last.
// Every remaining dim is a batch dim.
#pragma once

#include "smem.h"
#include "transpose_geometry.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>

#include <vector>

namespace smem {

inline std::pair<int64_t, int64_t> transpose_dims(const at::Tensor& self, int64_t dim0,
                                                  int64_t dim1) {
  TORCH_CHECK_VALUE(self.dim() > 0,
                    "smem.transpose: expected a tensor with at least one "
                    "dimension, but got a 0-dim tensor");
  const int64_t n = self.dim();
  for (int64_t d : {dim0, dim1}) {
    TORCH_CHECK_INDEX(d >= -n && d < n, "smem.transpose: dim ", d,
                      " is out of range for a tensor of dimension ", n,
                      " (expected to be in range of [", -n, ", ", n - 1, "])");
  }
  return {at::maybe_wrap_dim(dim0, n), at::maybe_wrap_dim(dim1, n)};
}

// Geometry of y = x.transpose(d0, d1).contiguous(), or nullopt when the collapsed tensor has
// more batch dims than a kernel carries (the caller then makes x contiguous and asks again;
// a contiguous x always fits).
inline std::optional<TransposeGeometry> plan_transpose(const at::Tensor& x, int64_t d0,
                                                       int64_t d1) {
  std::vector<int64_t> size(x.sizes().begin(), x.sizes().end());
  std::vector<int64_t> stride(x.strides().begin(), x.strides().end());
  std::swap(size[d0], size[d1]);
  std::swap(stride[d0], stride[d1]);
  // Collapse, walking from the innermost output dim outwards.
  std::vector<int64_t> S, T;  // innermost first
  for (int64_t i = static_cast<int64_t>(size.size()) - 1; i >= 0; --i) {
    if (size[i] == 1) continue;
    if (!S.empty() && stride[i] == T.back() * S.back()) {
      S.back() *= size[i];
    } else {
      S.push_back(size[i]);
      T.push_back(stride[i]);
    }
  }
  TransposeGeometry g;
  if (S.empty()) {
    S.push_back(1);
    T.push_back(1);
  }
  g.cols = S[0];
  g.col_in_stride = T[0];
  // The dim with the smallest input stride, other than the last: candidate tile rows.
  size_t k = 0;
  for (size_t i = 1; i < S.size(); ++i)
    if (k == 0 || T[i] < T[k]) k = i;
  g.tiled = k != 0 && T[k] < T[0];
  int64_t out_stride = S[0];
  std::vector<int64_t> out_strides(S.size(), 1);
  for (size_t i = 1; i < S.size(); ++i) {
    out_strides[i] = out_stride;
    out_stride *= S[i];
  }
  if (g.tiled) {
    g.rows = S[k];
    g.row_in_stride = T[k];
    g.row_out_stride = out_strides[k];
  }
  const size_t nb = S.size() - 1 - (g.tiled ? 1 : 0);
  if (nb > static_cast<size_t>(kTransposeMaxBatchDims)) return std::nullopt;
  // Batch dims, outermost first, so the innermost batch index varies fastest.
  for (size_t i = S.size() - 1; i >= 1; --i) {
    if (g.tiled && i == k) continue;
    g.batch_size[g.nbatch] = S[i];
    g.batch_in_stride[g.nbatch] = T[i];
    g.batch_out_stride[g.nbatch] = out_strides[i];
    ++g.nbatch;
  }
  return g;
}

inline std::vector<int64_t> transpose_out_shape(const at::Tensor& x, int64_t d0, int64_t d1) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  std::swap(shape[d0], shape[d1]);
  return shape;
}

// Every dtype with whole 1/2/4/8/16-byte elements that torch can copy (so not the sub-byte
// int1..uint7, nor the quantized ones); kernels move bytes, so the element size is all they need.
inline bool transpose_dtype_supported(at::ScalarType t) {
  if (c10::isFloat8Type(t)) return true;
  switch (t) {
    case at::ScalarType::Bits1x8:
    case at::ScalarType::Bits2x4:
    case at::ScalarType::Bits4x2:
    case at::ScalarType::Bits8:
    case at::ScalarType::Bits16:
    case at::ScalarType::Float4_e2m1fn_x2:
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kUInt16:
    case at::kUInt32:
    case at::kUInt64:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble:
    case at::kComplexHalf:
    case at::kComplexFloat:
    case at::kComplexDouble: return true;
    default: return false;
  }
}

inline void check_transpose_dtype(const at::Tensor& x) {
  TORCH_CHECK_TYPE(transpose_dtype_supported(x.scalar_type()), "smem.transpose: dtype ",
                   dtype_name(x.scalar_type()), " is not supported");
}

// The host flow of transpose on every backend: checks, the new contiguous output, the
// geometry (from a contiguous copy of x only when its collapsed layout has too many batch
// dims), then launch(x, out, geometry).
template <typename Launch>
at::Tensor transpose_host(const at::Tensor& self, int64_t dim0, int64_t dim1, Launch&& launch) {
  auto [d0, d1] = transpose_dims(self, dim0, dim1);
  check_transpose_dtype(self);
  at::Tensor out = at::empty(transpose_out_shape(self, d0, d1), self.options());
  if (out.numel() == 0) return out;
  at::Tensor x = self;
  auto g = plan_transpose(x, d0, d1);
  if (!g) {
    x = self.contiguous();
    g = plan_transpose(x, d0, d1);
  }
  TORCH_INTERNAL_ASSERT(g.has_value());
  launch(x, out, *g);
  return out;
}

}  // namespace smem
