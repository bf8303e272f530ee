// Communicators over the in-process transport or a transport handed in.
#include "whole/communicator.hpp"

#include <cstring>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"
#include "whole/collective.hpp"
#include "whole/local_transport.hpp"

namespace dao::detail::whole {

std::vector<std::unique_ptr<communicator>> make_local_communicators(
    const std::vector<dao_place>& places) {
  for (std::size_t i = 0; i < places.size(); ++i) {
    try {
      resource_for(places[i]);
    } catch (const error& e) {
      throw error(e.status(), strprintf("places[%zu]: %s", i, e.what()));
    }
  }
  std::vector<std::unique_ptr<transport>> transports =
      make_local_group(static_cast<int>(places.size()));
  std::vector<std::unique_ptr<communicator>> out;
  out.reserve(places.size());
  for (auto& t : transports) out.push_back(std::make_unique<communicator>(std::move(t), places));
  return out;
}

std::unique_ptr<communicator> make_communicator(std::unique_ptr<transport> t, dao_place place,
                                                const char* function, const outcome& pre) {
  // Places as plain ints: a kind travels as the int the caller passed.
  struct wire {
    std::int32_t kind;
    std::int32_t device;
  } w{raw_kind(place.kind), place.device};
  std::vector<wire> all;
  std::vector<dao_place> places;
  // This rank's bookkeeping is made before the agreement, so that a rank
  // out of memory fails with the others instead of leaving them waiting.
  const outcome checked = pre.ok() ? capture([&] {
    resource_for(place);
    all.resize(static_cast<std::size_t>(t->size()));
    places.reserve(all.size());
  })
                                   : outcome{};
  const outcome& mine = pre.ok() ? checked : pre;
  call c{function, call_kind::comm_create,
         0,        {{"whether ranks share host memory", t->shares_host_memory() ? 1u : 0u}},
         {},       nullptr};
  agree_on_call(*t, c, mine);
  t->allgather(&w, sizeof w, all.data());
  for (const wire& x : all) {
    dao_place p;
    std::memset(&p, 0, sizeof p);
    std::memcpy(&p.kind, &x.kind, sizeof x.kind);
    p.device = x.device;
    places.push_back(p);  // capacity reserved
  }
  transport& net = *t;
  std::unique_ptr<communicator> out;
  agree_on_outcome(net, function, capture([&] {
                     out = std::make_unique<communicator>(std::move(t), std::move(places));
                   }));
  return out;
}

}  // namespace dao::detail::whole
