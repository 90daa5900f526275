// How the blocks of a split row hand their partial sums to the last of them, for float
// accumulators: each block writes its partial into its own slot of a zeroed workspace,
// encoded so that no partial is all zero bits, then takes a ticket with a relaxed atomic. The
// block with the last ticket reads every slot, waiting on any still zero (the slot's store and
// its block's ticket are not ordered), sets it back to zero, and sums the partials in slot
// order. No fence: last_block_to_finish's acquire-release ticket first waits for the block's
// partial to reach L2, a round trip on the path of the last block; here that wait happens
// only where a slot is not there yet.
#pragma once

#include <cstdint>
#include <cstring>

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

// Called by every thread of a block with the block's partial valid in thread 0: writes it to
// `slot`, counts the block on `counter` with a relaxed ticket and returns true in every thread
// of the block that counted last of `expected`. The caller's block_sum ends in a barrier, which
// also keeps a previous row's readers of the ticket's flag ahead of this write.
template <typename A>
__device__ inline bool publish_partial(typename SlotCode<A>::Word* slot, A partial,
                                       unsigned* counter, unsigned expected) {
  return block_ticket<TicketOrder::kRelaxed>(counter, expected,
                                             [&] { store_relaxed(slot, encode_slot(partial)); });
}

// In the last block: the sum of slots s = t, t + stride, ... below n, in that order, each
// waited for, read and zeroed.
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

}  // namespace smem::cuda::reduce
