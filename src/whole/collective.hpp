// Agreement between the ranks of a collective call. Every collective call
// starts with agree_on_call(): one allgather of a fixed-size record (the
// call, the object, the arguments, and whether this rank's own checks
// passed), so that ranks that disagree, or are in different calls, or of
// which one was handed a bad argument, all fail alike instead of waiting
// for each other. Steps that may fail on some ranks only (allocation, file
// access) end with agree_on_outcome().
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
};

// One argument that every rank must pass alike.
struct call_arg {
  const char* name;
  std::uint64_t value;
  // Prints a value for messages; nullptr prints the number.
  const char* (*describe)(std::uint64_t) = nullptr;
};

struct call {
  const char* function;  // "dao_whole_create"
  call_kind kind;
  std::uint64_t object = 0;    // the object it acts on (0: none)
  std::vector<call_arg> args;  // at most kMaxArgs
  std::string text;            // a string argument (a path), compared in full
  const char* text_name = nullptr;

  static constexpr std::size_t kMaxArgs = 6;
};

// Collective. Throws, on every rank alike, when any rank's `mine` failed
// (the first failing rank's status, with its message), when the ranks are
// in different calls, on different objects, or disagree on an argument.
void agree_on_call(transport& t, const call& c, const outcome& mine);

// Collective. Throws on every rank alike when any rank's `mine` failed.
void agree_on_outcome(transport& t, const char* function, const outcome& mine);

}  // namespace dao::detail::whole
