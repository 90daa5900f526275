// How the blocks of a split row hand their partial sums to one of them, for float
// accumulators. Each block writes its partial into its own slot of a zeroed workspace, encoded
// so that no partial is all zero bits, and counts itself on the row's zeroed counter with a
// relaxed atomic (its ticket). The block with the last ticket reads every slot, waiting on any
// still zero (a slot's store and its block's ticket are not ordered), sets it back to zero,
// and sums the partials in slot order. No fence: each slot is one word that carries its own
// value. When the ticket is taken:
//   at the start (the block that started last sums): the ticket's round trip to L2 overlaps
//     the block's loads, so the last block's path holds only the slots' reads. That block may
//     wait for the others' slots: each took its ticket first, so it is running, and it waits
//     on nothing (no deadlock, whatever else runs on the SMs). It holds its place on the SM
//     while it waits, which would delay blocks not yet started, so for speed the launcher
//     takes this where none is left to start behind it (one row, or a grid resident at once).
//   at the end (the last block to finish sums): the ticket's round trip, then the slots'
//     reads, lie on the last block's path; no block waits.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/common.cuh"

namespace smem::cuda::reduce {

// A slot holds the partial's bits XOR kEmpty. Partials that are NaN are stored as the
// canonical quiet NaN, so no partial has the bits kEmpty (a NaN payload sums never make):
// zero means "not written yet". Defined for float only, a 32-bit word that one store writes
// whole; other accumulators use last_block_to_finish.
template <typename A>
struct SlotCode;
template <>
struct SlotCode<float> {
  using Word = unsigned;
  static constexpr Word kCanonicalNan = 0x7fc00000u, kEmpty = 0x7fc00001u;
};

// What a block of a split row leaves for the one that sums them: a slot for float
// accumulators, the plain partial for the others (read after last_block_to_finish).
template <typename A>
inline constexpr bool kHasSlots = false;
template <>
inline constexpr bool kHasSlots<float> = true;
template <typename A>
using SplitPartial = std::conditional_t<kHasSlots<A>, SlotCode<float>::Word, A>;

template <typename A>
__device__ inline typename SlotCode<A>::Word encode_slot(A v) {
  using C = SlotCode<A>;
  typename C::Word bits;
  memcpy(&bits, &v, sizeof(bits));
  if (v != v) bits = C::kCanonicalNan;
  return bits ^ C::kEmpty;
}

template <typename A>
__device__ inline A decode_slot(typename SlotCode<A>::Word word) {
  word ^= SlotCode<A>::kEmpty;
  A v;
  memcpy(&v, &word, sizeof(v));
  return v;
}

// The block's ticket (thread 0): the count on `counter` before it.
__device__ inline unsigned take_ticket(unsigned* counter) {
  unsigned before;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], 1;"
               : "=r"(before)
               : "l"(counter)
               : "memory");
  return before;
}

// Takes the block's ticket as it starts where `at_start`; the result, in thread 0 only, is for
// publish_partial.
__device__ inline unsigned ticket_at_start(unsigned* counter, bool at_start) {
  return at_start && threadIdx.x == 0 && threadIdx.y == 0 ? take_ticket(counter) : 0;
}

// Called by every thread with the block's partial valid in thread 0, after a barrier (block_sum
// ends in one, which also keeps a previous row's readers of the flag ahead of this write):
// writes the partial to `slot`, takes the ticket now unless `at_start` (then `ticket` holds
// it), and returns true in every thread of the block whose ticket was the last of `expected`.
// That block sets the counter back to zero: every ticket is taken, and the next kernel on the
// stream finds it zero.
template <typename A>
__device__ inline bool publish_partial(typename SlotCode<A>::Word* slot, A partial, bool at_start,
                                       unsigned ticket, unsigned* counter, unsigned expected) {
  __shared__ bool sums_slots;
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    store_relaxed(slot, encode_slot(partial));
    if (!at_start) ticket = take_ticket(counter);
    sums_slots = ticket == expected - 1;
    if (sums_slots) store_relaxed(counter, 0);
  }
  __syncthreads();
  return sums_slots;
}

// In the block with the last ticket: the sum of slots s = t, t + stride, ... below n, in that
// order, each waited for, read and zeroed.
template <typename A>
__device__ A slots_sum(typename SlotCode<A>::Word* slots, int64_t n, int64_t t, int64_t stride) {
  Accumulator<A> acc;
  for (int64_t s = t; s < n; s += stride) {
    typename SlotCode<A>::Word word;
    while ((word = load_relaxed(&slots[s])) == 0) {}
    store_relaxed(&slots[s], typename SlotCode<A>::Word(0));
    acc.add(decode_slot<A>(word));
  }
  return acc.value();
}

// A split row's hand-over, called by every thread of a kThreads block with its partial `v`
// valid in thread 0 and `ticket` from ticket_at_start: true in the block with the last ticket,
// whose thread 0 then holds the row's total in `v`.
template <int kThreads, typename A>
__device__ inline bool sum_row_slots(typename SlotCode<A>::Word* row_slots, A& v, bool at_start,
                                     unsigned ticket, unsigned* counter, int splits) {
  if (!publish_partial(&row_slots[blockIdx.x], v, at_start, ticket, counter, splits)) return false;
  v = block_sum<kThreads>(slots_sum<A>(row_slots, splits, threadIdx.x, kThreads));
  return true;
}

}  // namespace smem::cuda::reduce
