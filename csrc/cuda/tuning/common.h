// Tuning shared by every family. What each value was measured at: docs/PERFORMANCE.md.
#pragma once

#include <cstdint>

namespace smem::cuda {

// Inputs of at most this many L2 sizes are read evict-first (stream_once): their reads then
// recycle their own lines instead of forcing the write-back of dirty ones. At 5 L2 sizes
// (256 MB on an H100) that still gains up to 1%; at 20 it costs 5%.
constexpr int kStreamOnceL2Sizes = 8;

// Room left beside a kernel's dynamic shared memory for its static shared memory (the
// last-block flag, warp totals): the most dynamic shared memory a launch takes is the device's
// opt-in limit less this.
constexpr int64_t kStaticSmemReserve = 1024;

}  // namespace smem::cuda
