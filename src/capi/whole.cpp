// dao_comm_* and dao_whole_*: partitioned memory (include/dao/whole.h) over
// src/whole/.
#define DAO_EXPERIMENTAL 1  // dao_comm_create_transport; before any include

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "dao/whole.h"
#include "resource/system_resource.hpp"
#include "util/format.hpp"
#include "whole/communicator.hpp"
#include "whole/hooked_transport.hpp"
#include "whole/support.hpp"
#include "whole/whole_memory.hpp"

namespace dao::detail {
namespace {

using dao::detail::outcome;

dao_comm& checked_comm(const dao_comm* comm, const char* function) {
  return checked_handle(comm, function);
}

dao_whole& checked_whole(const dao_whole* whole, const char* function) {
  return checked_handle(whole, function);
}

// Checks of a collective call's arguments, without the function prefix:
// the agreement adds "<function> on rank r of n: ".
void need(const void* p, const char* name) {
  if (p == nullptr) throw invalid_argument(strprintf("%s must not be NULL", name));
}

template <class T>
void need_size(const T* s, const char* name, const char* type) {
  if (s->struct_size < sizeof(T)) {
    throw invalid_argument(strprintf("%s->struct_size is %zu; set it to sizeof(%s) (at least %zu)",
                                     name, s->struct_size, type, sizeof(T)));
  }
  check_struct_size(s->struct_size, sizeof(T), nullptr, name);  // not absurdly large
}

dao_whole_range range_of(const whole::whole_memory& w, int rank) {
  dao_whole_range r;
  std::memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.rank = rank;
  r.first_entry = w.layout().first(rank);
  r.entry_count = w.layout().count(rank);
  r.byte_offset = w.layout().byte_offset(rank);
  r.byte_size = w.layout().byte_size(rank);
  return r;
}

}  // namespace
}  // namespace dao::detail

using namespace dao::detail;

/* --- communicators ------------------------------------------------------- */

extern "C" dao_status dao_comm_create_local(int count, const dao_place* places, dao_comm** comms) {
  return guarded([&] {
    const char* fn = "dao_comm_create_local";
    require_non_null(places, fn, "places");
    require_non_null(comms, fn, "comms");
    if (count < 1 || count > DAO_COMM_LOCAL_MAX_RANKS) {
      throw invalid_argument(
          strprintf("%s: count %d is out of range 1..%d", fn, count, DAO_COMM_LOCAL_MAX_RANKS));
    }
    std::vector<dao_place> list(places, places + count);
    std::vector<std::unique_ptr<whole::communicator>> impls;
    try {
      impls = whole::make_local_communicators(list);
    } catch (const error& e) {
      throw error(e.status(), strprintf("%s: %s", fn, e.what()));
    }
    // Make every handle before handing any out.
    std::vector<std::unique_ptr<dao_comm>> handles;
    handles.reserve(impls.size());
    for (auto& impl : impls) {
      handles.push_back(std::make_unique<dao_comm>());
      handles.back()->impl = std::move(impl);
    }
    for (std::size_t i = 0; i < handles.size(); ++i) comms[i] = handles[i].release();
  });
}

extern "C" dao_status dao_comm_create_transport(const dao_comm_transport* transport,
                                                dao_place place, dao_comm** out) {
  if (out != nullptr) *out = nullptr;
  return guarded([&] {
    const char* fn = "dao_comm_create_transport";
    require_non_null(transport, fn, "transport");
    // Transports built against a header without the all-to-all operations
    // end at window_put_many; the fields after it then read as NULL and 0.
    constexpr std::size_t kOldest = offsetof(dao_comm_transport, alltoall);
    if (transport->struct_size < kOldest) {
      throw invalid_argument(
          strprintf("%s: transport->struct_size is %zu; set it to sizeof(dao_comm_transport) (%zu)",
                    fn, transport->struct_size, sizeof(dao_comm_transport)));
    }
    check_struct_size(transport->struct_size, kOldest, fn, "transport");
    dao_comm_transport ops;
    std::memset(&ops, 0, sizeof ops);
    std::memcpy(&ops, transport,
                transport->struct_size < sizeof ops ? transport->struct_size : sizeof ops);
    std::unique_ptr<whole::transport> t;
    try {
      t = whole::adopt_transport(ops, fn);
    } catch (const error& e) {
      // An agreed failure (out of memory on some rank) names the call already.
      if (std::strncmp(e.what(), fn, std::strlen(fn)) == 0) throw;
      throw error(e.status(), strprintf("%s: %s", fn, e.what()));
    }
    // A NULL out is this rank's failure, and so is no memory for the
    // handle; the others must hear of it.
    std::unique_ptr<dao_comm> handle;
    const outcome pre = out == nullptr ? outcome{DAO_ERR_INVALID_ARGUMENT, "out must not be NULL"}
                                       : capture([&] { handle = std::make_unique<dao_comm>(); });
    std::unique_ptr<whole::communicator> impl =
        whole::make_communicator(std::move(t), place, fn, pre);
    handle->impl = std::move(impl);
    *out = handle.release();
  });
}

extern "C" dao_status dao_comm_transport_error(dao_status status, const char* message) {
  return set_last_error(status, message);
}

extern "C" dao_status dao_comm_destroy(dao_comm* comm) {
  return guarded([&] {
    if (comm == nullptr) return;
    dao_comm& c = checked_comm(comm, "dao_comm_destroy");
    const int live = c.impl->live_objects.load();
    if (live != 0) {
      throw busy(strprintf(
          "dao_comm_destroy: %d whole memory object(s) of this rank still exist; destroy them "
          "first (dao_whole_destroy)",
          live));
    }
    c.magic = 0;
    delete comm;
  });
}

extern "C" dao_status dao_comm_rank(const dao_comm* comm, int* rank) {
  return guarded([&] {
    dao_comm& c = checked_comm(comm, "dao_comm_rank");
    require_non_null(rank, "dao_comm_rank", "rank");
    *rank = c.impl->rank();
  });
}

extern "C" dao_status dao_comm_size(const dao_comm* comm, int* size) {
  return guarded([&] {
    dao_comm& c = checked_comm(comm, "dao_comm_size");
    require_non_null(size, "dao_comm_size", "size");
    *size = c.impl->size();
  });
}

extern "C" dao_status dao_comm_rank_place(const dao_comm* comm, int rank, dao_place* place) {
  return guarded([&] {
    dao_comm& c = checked_comm(comm, "dao_comm_rank_place");
    require_non_null(place, "dao_comm_rank_place", "place");
    if (rank < 0 || rank >= c.impl->size()) {
      throw invalid_argument(strprintf("dao_comm_rank_place: rank %d is out of range 0..%d", rank,
                                       c.impl->size() - 1));
    }
    *place = c.impl->place(rank);
  });
}

extern "C" dao_status dao_comm_get_info(const dao_comm* comm, dao_comm_info* info) {
  return guarded([&] {
    dao_comm& c = checked_comm(comm, "dao_comm_get_info");
    dao_comm_info v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.rank = c.impl->rank();
    v.size = c.impl->size();
    v.place = c.impl->place(v.rank);
    v.transport = c.impl->net().name();
    v.shares_address_space = c.impl->net().shares_address_space() ? 1 : 0;
    v.shares_host_memory = c.impl->net().shares_host_memory() ? 1 : 0;
    write_sized(v, info, "dao_comm_get_info", "info");
  });
}

extern "C" dao_status dao_comm_barrier(dao_comm* comm) {
  return guarded([&] {
    dao_comm& c = checked_comm(comm, "dao_comm_barrier");
    whole::call call{"dao_comm_barrier", whole::call_kind::comm_barrier, 0, {}, {}, nullptr};
    whole::agree_on_call(c.impl->net(), call, outcome{});
    c.impl->net().barrier();
  });
}

/* --- whole memory objects ------------------------------------------------ */

extern "C" const char* dao_whole_type_name(dao_whole_type type) {
  return whole::type_name(raw_enum(type));
}

extern "C" const char* dao_whole_location_name(dao_whole_location location) {
  return whole::location_name(raw_enum(location));
}

extern "C" dao_status dao_whole_supported(const dao_comm* comm, dao_whole_type type,
                                          dao_whole_location location) {
  return guarded([&] {
    dao_comm& c = checked_comm(comm, "dao_whole_supported");
    try {
      whole::check_support(*c.impl, raw_enum(type), raw_enum(location));
    } catch (const error& e) {
      throw error(e.status(), strprintf("dao_whole_supported: %s", e.what()));
    }
  });
}

extern "C" dao_status dao_whole_create(dao_comm* comm, const dao_whole_desc* desc,
                                       dao_whole** out) {
  if (out != nullptr) *out = nullptr;
  return guarded([&] {
    dao_comm& c = checked_comm(comm, "dao_whole_create");
    whole::whole_params params;
    std::unique_ptr<dao_whole> handle;
    // The handle too is this rank's to make before the agreement: a rank
    // out of memory for it must fail with the others, not alone (issue 20).
    const outcome pre = capture([&] {
      need(out, "out");
      need(desc, "desc");
      need_size(desc, "desc", "dao_whole_desc");
      params.type = raw_enum(desc->type);
      params.location = raw_enum(desc->location);
      params.total_size = desc->total_size;
      params.entry_size = desc->entry_size;
      handle = std::make_unique<dao_whole>();
    });
    handle->impl = whole::whole_memory::create(*c.impl, params, pre);
    c.impl->live_objects.fetch_add(1);
    *out = handle.release();
  });
}

extern "C" dao_status dao_whole_destroy(dao_whole* whole) {
  return guarded([&] {
    if (whole == nullptr) return;
    dao_whole& w = checked_whole(whole, "dao_whole_destroy");
    w.impl->destroy(outcome{});
    w.impl->comm().live_objects.fetch_sub(1);
    w.magic = 0;
    delete whole;
  });
}

extern "C" dao_status dao_whole_get_info(const dao_whole* whole, dao_whole_info* info) {
  return guarded([&] {
    dao_whole& w = checked_whole(whole, "dao_whole_get_info");
    const whole::whole_params& p = w.impl->params();
    dao_whole_info v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.type = static_cast<dao_whole_type>(p.type);
    v.location = static_cast<dao_whole_location>(p.location);
    v.total_size = p.total_size;
    v.entry_size = p.entry_size;
    v.entry_count = w.impl->layout().entries();
    v.rank = w.impl->comm().rank();
    v.size = w.impl->comm().size();
    v.place = w.impl->place();
    write_sized(v, info, "dao_whole_get_info", "info");
  });
}

extern "C" dao_status dao_whole_get_partition(const dao_whole* whole, int rank,
                                              dao_whole_range* range) {
  return guarded([&] {
    const char* fn = "dao_whole_get_partition";
    dao_whole& w = checked_whole(whole, fn);
    require_non_null(range, fn, "range");
    const int size = w.impl->comm().size();
    if (rank < 0 || rank >= size) {
      throw invalid_argument(strprintf("%s: rank %d is out of range 0..%d", fn, rank, size - 1));
    }
    write_sized(range_of(*w.impl, rank), range, fn, "range");
  });
}

extern "C" dao_status dao_whole_entry_rank(const dao_whole* whole, int64_t index, int* rank) {
  return guarded([&] {
    const char* fn = "dao_whole_entry_rank";
    dao_whole& w = checked_whole(whole, fn);
    require_non_null(rank, fn, "rank");
    const std::size_t entries = w.impl->layout().entries();
    if (index < 0 || static_cast<std::uint64_t>(index) >= entries) {
      throw invalid_argument(strprintf("%s: index %lld is out of range: the object has %zu "
                                       "entries (0..%zu)",
                                       fn, static_cast<long long>(index), entries, entries - 1));
    }
    *rank = w.impl->layout().owner(static_cast<std::size_t>(index));
  });
}

extern "C" dao_status dao_whole_get_local(const dao_whole* whole, void** ptr,
                                          dao_whole_range* range) {
  return guarded([&] {
    const char* fn = "dao_whole_get_local";
    dao_whole& w = checked_whole(whole, fn);
    require_non_null(ptr, fn, "ptr");
    if (range != nullptr) write_sized(range_of(*w.impl, w.impl->comm().rank()), range, fn, "range");
    *ptr = w.impl->local();
  });
}

extern "C" dao_status dao_whole_get_rank_pointer(const dao_whole* whole, int rank, void** ptr) {
  return guarded([&] {
    const char* fn = "dao_whole_get_rank_pointer";
    dao_whole& w = checked_whole(whole, fn);
    require_non_null(ptr, fn, "ptr");
    *ptr = w.impl->rank_pointer(rank, fn);
  });
}

extern "C" dao_status dao_whole_get_base(const dao_whole* whole, void** base) {
  return guarded([&] {
    const char* fn = "dao_whole_get_base";
    dao_whole& w = checked_whole(whole, fn);
    require_non_null(base, fn, "base");
    *base = w.impl->base(fn);
  });
}

extern "C" dao_status dao_whole_gather(dao_whole* whole, const int64_t* indices, size_t count,
                                       void* dst) {
  return guarded(
      [&] { checked_whole(whole, "dao_whole_gather").impl->gather(indices, count, dst); });
}

extern "C" dao_status dao_whole_scatter(dao_whole* whole, const void* src, const int64_t* indices,
                                        size_t count) {
  return guarded(
      [&] { checked_whole(whole, "dao_whole_scatter").impl->scatter(src, indices, count); });
}

extern "C" dao_status dao_whole_gather_collective(dao_whole* whole, const int64_t* indices,
                                                  size_t count, void* dst) {
  return guarded([&] {
    checked_whole(whole, "dao_whole_gather_collective")
        .impl->gather_collective(indices, count, dst);
  });
}

extern "C" dao_status dao_whole_scatter_collective(dao_whole* whole, const void* src,
                                                   const int64_t* indices, size_t count) {
  return guarded([&] {
    checked_whole(whole, "dao_whole_scatter_collective")
        .impl->scatter_collective(src, indices, count);
  });
}

extern "C" dao_status dao_whole_store(dao_whole* whole, const char* path) {
  return guarded([&] { checked_whole(whole, "dao_whole_store").impl->store(path, outcome{}); });
}

extern "C" dao_status dao_whole_load(dao_whole* whole, const char* path) {
  return guarded([&] { checked_whole(whole, "dao_whole_load").impl->load(path, outcome{}); });
}
