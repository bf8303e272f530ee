// A tensor's row of the access table: marking accesses executed (see
// tensor.hpp).
#include "tiered/tensor.hpp"

namespace dao::detail {

void advance(dao_tensor& t, std::uint64_t now) {
  while (t.cursor < t.accesses.size() && t.accesses[t.cursor].t <= now) {
    t.last_use = t.accesses[t.cursor].t;
    ++t.cursor;
  }
  // Drop the executed part of the table now and then.
  if (t.cursor >= 256 && t.cursor * 2 >= t.accesses.size()) {
    t.accesses.erase(t.accesses.begin(), t.accesses.begin() + static_cast<long>(t.cursor));
    t.cursor = 0;
  }
}

}  // namespace dao::detail
