// Tuning shared by every family. What each value was measured at: docs/PERFORMANCE.md.
#pragma once

namespace smem::cuda {

// Inputs of at most this many L2 sizes are read evict-first (stream_once): their reads then
// recycle their own lines instead of forcing the write-back of dirty ones; larger inputs
// gain nothing from it.
constexpr int kStreamOnceL2Sizes = 4;

}  // namespace smem::cuda
