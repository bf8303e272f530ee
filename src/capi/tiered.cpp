// dao_tiered_*, dao_tensor_* and dao_kernel_submit: tiered pools
// (include/dao/tiered.h) over src/tiered/.
#include <cstdint>
#include <cstring>
#include <memory>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "dao/tiered.h"
#include "tiered/tiered_pool.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

dao_tiered& checked_tiered(dao_tiered* pool, const char* function) {
  return checked_handle(pool, function);
}

// A dao_tensor is the address of its pool's record (handles.hpp says why).
tiered_tensor& checked_tensor(const dao_tensor* tensor, const char* function, const char* name) {
  require_non_null(tensor, function, name);
  if (!has_magic(tensor, tiered_tensor::kMagic, alignof(tiered_tensor))) {
    throw invalid_argument(strprintf("%s: %s (%p) is not a dao_tensor of a live tiered pool",
                                     function, name, static_cast<const void*>(tensor)));
  }
  return *reinterpret_cast<tiered_tensor*>(const_cast<dao_tensor*>(tensor));
}

tiered_tensor* const* records(dao_tensor* const* list) noexcept {
  return reinterpret_cast<tiered_tensor* const*>(list);
}

void check_list(dao_tensor* const* list, std::size_t count, const char* function,
                const char* name) {
  for (std::size_t i = 0; i < count; ++i) checked_tensor(list[i], function, name);
}

}  // namespace
}  // namespace dao::detail

using namespace dao::detail;

extern "C" dao_status dao_tiered_create(dao_place device, dao_place host, size_t device_budget,
                                        const char* config, dao_tiered** out) {
  return guarded([&] {
    require_non_null(out, "dao_tiered_create", "out");
    tiered_pool::refuse_in_scoring("dao_tiered_create");
    *out = nullptr;
    if (device_budget == 0) {
      throw invalid_argument("dao_tiered_create: device_budget must be > 0");
    }
    auto handle = std::make_unique<dao_tiered>();
    handle->compute_stream = std::make_unique<dao_stream_st>();
    handle->compute_stream->owned_by_pool = true;
    handle->impl = std::make_unique<tiered_pool>(device, host, device_budget, config);
    stream_object& compute = handle->impl->compute_stream();
    handle->compute_stream->obj = compute;  // the same stream (its implementation is shared)
    compute.handle = handle->compute_stream.get();
    handle->compute_stream->obj.handle = compute.handle;
    *out = handle.release();
  });
}

extern "C" dao_status dao_tiered_set_score_callback(dao_tiered* pool, dao_score_fn score,
                                                    void* user_data) {
  return guarded([&] {
    checked_tiered(pool, "dao_tiered_set_score_callback")
        .impl->set_score_callback(score, user_data);
  });
}

extern "C" dao_status dao_tensor_create(dao_tiered* pool, size_t bytes, dao_tensor** out) {
  return guarded([&] {
    dao_tiered& p = checked_tiered(pool, "dao_tensor_create");
    require_non_null(out, "dao_tensor_create", "out");
    *out = reinterpret_cast<dao_tensor*>(p.impl->create_tensor(bytes));
  });
}

extern "C" dao_status dao_tensor_write(dao_tensor* tensor, const void* src, size_t bytes) {
  return guarded([&] {
    tiered_tensor& t = checked_tensor(tensor, "dao_tensor_write", "tensor");
    t.pool->write(t, src, bytes);
  });
}

extern "C" dao_status dao_tensor_read(dao_tensor* tensor, void* dst, size_t bytes) {
  return guarded([&] {
    tiered_tensor& t = checked_tensor(tensor, "dao_tensor_read", "tensor");
    t.pool->read(t, dst, bytes);
  });
}

extern "C" dao_status dao_tensor_get_state(const dao_tensor* tensor, dao_tensor_state* state) {
  return guarded([&] {
    tiered_tensor& t = checked_tensor(tensor, "dao_tensor_get_state", "tensor");
    require_non_null(state, "dao_tensor_get_state", "state");
    *state = t.pool->state(t);
  });
}

extern "C" dao_status dao_tensor_release(dao_tensor* tensor) {
  return guarded([&] {
    tiered_tensor& t = checked_tensor(tensor, "dao_tensor_release", "tensor");
    t.pool->release(t);
  });
}

extern "C" dao_status dao_tensor_retire(dao_tensor* tensor) {
  return guarded([&] {
    tiered_tensor& t = checked_tensor(tensor, "dao_tensor_retire", "tensor");
    t.pool->retire(t);
  });
}

extern "C" dao_status dao_kernel_submit(dao_tiered* pool, dao_kernel_fn fn, void* user_data,
                                        dao_tensor* const* inputs, size_t input_count,
                                        dao_tensor* const* outputs, size_t output_count) {
  return guarded([&] {
    dao_tiered& p = checked_tiered(pool, "dao_kernel_submit");
    if (inputs != nullptr) check_list(inputs, input_count, "dao_kernel_submit", "an input");
    if (outputs != nullptr) check_list(outputs, output_count, "dao_kernel_submit", "an output");
    p.impl->submit(fn, user_data, records(inputs), input_count, records(outputs), output_count);
  });
}

extern "C" dao_status dao_tiered_synchronize(dao_tiered* pool) {
  return guarded([&] { checked_tiered(pool, "dao_tiered_synchronize").impl->synchronize(); });
}

extern "C" dao_status dao_tiered_trim(dao_tiered* pool) {
  return guarded([&] { checked_tiered(pool, "dao_tiered_trim").impl->trim(); });
}

extern "C" dao_status dao_tiered_get_stats(dao_tiered* pool, dao_tiered_stats* stats) {
  return guarded([&] {
    dao_tiered& p = checked_tiered(pool, "dao_tiered_get_stats");
    check_sized(stats, "dao_tiered_get_stats", "stats");  // before any work
    dao_tiered_stats s;
    std::memset(&s, 0, sizeof s);
    p.impl->read_stats(s);
    write_sized(s, stats, "dao_tiered_get_stats", "stats");
  });
}

extern "C" dao_status dao_tiered_get_link_stats(dao_tiered* pool, dao_tiered_link_stats* stats) {
  return guarded([&] {
    dao_tiered& p = checked_tiered(pool, "dao_tiered_get_link_stats");
    check_sized(stats, "dao_tiered_get_link_stats", "stats");  // before any work
    dao_tiered_link_stats s;
    std::memset(&s, 0, sizeof s);
    p.impl->read_link_stats(s);
    write_sized(s, stats, "dao_tiered_get_link_stats", "stats");
  });
}

extern "C" dao_status dao_tiered_destroy(dao_tiered* pool) {
  return guarded([&] {
    dao_tiered& p = checked_tiered(pool, "dao_tiered_destroy");
    p.impl->refuse_on_executor("dao_tiered_destroy");  // it would join its own thread
    p.magic = 0;
    delete &p;
  });
}
