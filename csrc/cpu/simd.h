// Hot CPU loops are compiled three times, for AVX-512, AVX2 and baseline x86-64, and the
// loader picks one per machine (function multiversioning through an ifunc). A build then runs
// on any x86-64 CPU and still gets the vector width torch's own kernels use. Put it on
// functions that do a block of work per call: a cloned function is reached by an indirect
// call and is never inlined.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(SMEM_NO_SIMD_CLONES)
#define SMEM_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SMEM_SIMD_CLONES
#endif
