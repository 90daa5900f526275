// The geometry of a transpose, as the CPU and CUDA kernels walk it: what transpose.h plans from
// a tensor, in a header free of torch's tensor headers so that the CUDA kernels' translation
// units stay light (cuda/launch.h says why).
#pragma once

#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

#include <cstdint>

namespace smem {

constexpr int kTransposeMaxBatchDims = 6;

struct TransposeGeometry {
  int nbatch = 0;
  int64_t batch_size[kTransposeMaxBatchDims] = {};
  int64_t batch_in_stride[kTransposeMaxBatchDims] = {};
  int64_t batch_out_stride[kTransposeMaxBatchDims] = {};
  int64_t rows = 1, cols = 1;  // tile dims: rows = dim k (1 for a row copy), cols = last dim
  int64_t row_in_stride = 0, col_in_stride = 0, row_out_stride = 0;  // col_out_stride is 1
  bool tiled = false;                                                // false: row copy
  C10_HOST_DEVICE int64_t batches() const {
    int64_t n = 1;
    for (int i = 0; i < nbatch; ++i) n *= batch_size[i];
    return n;
  }
  // Input and output offsets (in elements) of batch index n < batches(). What is left of n at
  // the outermost dim is its index there: no division (none at all for one batch dim).
  C10_HOST_DEVICE void batch_offsets(int64_t n, int64_t& in, int64_t& out) const {
    in = 0;
    out = 0;
    for (int i = nbatch - 1; i > 0; --i) {
      const int64_t idx = n % batch_size[i];
      n /= batch_size[i];
      in += idx * batch_in_stride[i];
      out += idx * batch_out_stride[i];
    }
    if (nbatch > 0) {
      in += n * batch_in_stride[0];
      out += n * batch_out_stride[0];
    }
  }
  // Whether every batch offset, in and out, is a multiple of p elements: a batch then starts on
  // the same word grid as the first.
  bool batch_strides_multiple_of(int64_t p) const {
    for (int i = 0; i < nbatch; ++i)
      if (batch_in_stride[i] % p != 0 || batch_out_stride[i] % p != 0) return false;
    return true;
  }
};

// A 16-byte element (complex128) as the kernels move it.
struct alignas(16) Bytes16 { uint64_t lo, hi; };

// Calls f(E{}) with E an unsigned type (or Bytes16) of the given element size in bytes.
template <typename F>
void dispatch_element_size(int64_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    case 8: f(uint64_t{}); break;
    case 16: f(Bytes16{}); break;
    default: TORCH_INTERNAL_ASSERT(false, "smem: unexpected element size ", bytes);
  }
}

}  // namespace smem
