// Enums as a C caller stored them. C may put any int in an enum, but C++
// must not load an enum that holds a value outside its enumerators, so
// libdao reads every enum it is handed as a plain int and validates it.
#pragma once

#include <cstring>

namespace dao::detail {

template <class E>
int raw_enum(const E& e) noexcept {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized here");
  int value;
  std::memcpy(&value, &e, sizeof value);
  return value;
}

}  // namespace dao::detail
