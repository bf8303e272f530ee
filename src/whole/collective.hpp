// Agreement between the ranks of a collective call. Every collective call
// starts with agree_on_call(): one allgather of a fixed-size record (the
// call, the object, the arguments, and whether this rank's own checks
// passed), so that ranks that disagree, or are in different calls, or of
// which one was handed a bad argument, all fail alike instead of waiting
// for each other. Steps that may fail on some ranks only (allocation, file
// access) end with agree_on_outcome().
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/error.hpp"
#include "whole/transport.hpp"

namespace dao::detail::whole {

enum class call_kind : std::uint32_t {
  comm_create = 1,
  whole_create = 2,
  whole_destroy = 3,
  whole_store = 4,
  whole_load = 5,
  comm_barrier = 6,
  whole_gather_collective = 7,
  whole_scatter_collective = 8,
};

// One argument that every rank must pass alike.
struct call_arg {
  const char* name;
  std::uint64_t value;
  // Prints a value for messages; nullptr prints the number.
  const char* (*describe)(std::uint64_t) = nullptr;
};

constexpr std::size_t kMaxCallArgs = 6;

// The arguments of a call, in place: building a call allocates nothing, so
// that a rank short of memory still reaches the agreement (issue 20).
class call_args {
 public:
  call_args() = default;
  call_args(std::initializer_list<call_arg> list) noexcept {
    for (const call_arg& a : list)
      if (count_ < kMaxCallArgs) items_[count_++] = a;
  }
  std::size_t size() const noexcept { return count_; }
  const call_arg& operator[](std::size_t i) const noexcept { return items_[i]; }

 private:
  call_arg items_[kMaxCallArgs] = {};
  std::size_t count_ = 0;
};

struct call {
  const char* function;  // "dao_whole_create"
  call_kind kind;
  std::uint64_t object = 0;  // the object it acts on (0: none)
  call_args args;            // at most kMaxArgs
  const char* text = "";     // a string argument (a path), compared in full; NULL: ""
  const char* text_name = nullptr;

  static constexpr std::size_t kMaxArgs = kMaxCallArgs;
};

// Makes room in `t` for the records of an agreement, so that agreeing, on
// success or failure, needs no memory later. Called when a transport is
// made; may throw out of memory then.
void reserve_agreement(transport& t);

// Every collective call agrees before it acts, and every step that may fail
// on some ranks only (an allocation of libdao's own bookkeeping included)
// runs under capture() and ends with agree_on_outcome(), so that a rank
// never leaves a collective call alone: the others would wait for it for
// ever. Neither agreement allocates when the transport reserved its room
// (reserve_agreement()); a transport's own collective that fails on one
// rank fails on every rank (local_transport.cpp).
//
// Collective. Throws, on every rank alike, when any rank's `mine` failed
// (the first failing rank's status, with its message), when the ranks are
// in different calls, on different objects, or disagree on an argument.
void agree_on_call(transport& t, const call& c, const outcome& mine);

// Numbers that each rank adds to its agreement record without the ranks
// having to agree on them: the collective gather and scatter send their
// counts per destination and their room this way, and so learn every rank's
// in the same allgather that agrees on the call (one collective step fewer
// than a separate alltoall). At most kMaxExtras values.
constexpr std::size_t kMaxExtras = 65;
// The most bytes one rank's agreement record takes (collective.cpp checks
// it); the in-process transport reserves this much per rank.
constexpr std::size_t kMaxAgreementRecord = 2048;
struct call_extras {
  const std::uint64_t* mine = nullptr;  // `count` values of this rank
  std::size_t count = 0;
  std::uint64_t* all = nullptr;  // receives every rank's, rank r's at r * count
};

// As agree_on_call(), also exchanging `extras` (read only when the call
// agreed).
void agree_on_call(transport& t, const call& c, const outcome& mine, const call_extras& extras);

// Collective. Throws on every rank alike when any rank's `mine` failed.
void agree_on_outcome(transport& t, const char* function, const outcome& mine);

}  // namespace dao::detail::whole
