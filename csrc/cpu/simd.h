// Hot CPU loops are compiled twice, for AVX2 and baseline x86-64, and the loader picks one
// per machine (function multiversioning through an ifunc), so a build runs on any x86-64 CPU
// and still gets wide vectors (no AVX-512 clone: it did not pay; docs/PERFORMANCE.md).
// Put it on functions that do a block of work per call: a cloned function is reached by an
// indirect call and is never inlined.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(SMEM_NO_SIMD_CLONES)
#define SMEM_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SMEM_SIMD_CLONES
#endif
