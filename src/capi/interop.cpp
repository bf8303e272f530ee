// dao_pluggable_* and dao_cupy_*: the allocator ABIs of PyTorch's
// CUDAPluggableAllocator and CuPy's CFunctionAllocator over the place
// defaults (include/dao/interop.h), DAO_INTEROP_PLACE, and
// dao_interop_get_stats. These ABIs have no status: a failure is recorded as
// the thread's last error, counted, and the call returns NULL or nothing.
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "capi/guard.hpp"
#include "capi/interop_streams.hpp"
#include "capi/sized_struct.hpp"
#include "dao/interop.h"
#include "strategy/place_defaults.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

// DAO_INTEROP_PLACE, read once at the first call of any interop function.
struct interop_config {
  int kind = DAO_PLACE_CUDA;
  std::string error;  // non-empty: the variable is malformed
};

const interop_config& config() {
  static const interop_config c = [] {
    interop_config r;
    const char* v = std::getenv("DAO_INTEROP_PLACE");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "cuda") == 0) return r;
    if (std::strcmp(v, "sim") == 0) {
      r.kind = DAO_PLACE_SIM;
      return r;
    }
    r.error = strprintf(
        "DAO_INTEROP_PLACE is '%s'; expected 'cuda' (the default) or 'sim' (simulated devices, "
        "for tests and what-if runs only)",
        v);
    return r;
  }();
  return c;
}

dao_place interop_place(int device, const char* function) {
  const interop_config& c = config();
  if (!c.error.empty()) throw invalid_argument(strprintf("%s: %s", function, c.error.c_str()));
  dao_place p;
  p.kind = static_cast<dao_place_kind>(c.kind);
  p.device = device;
  return p;
}

std::atomic<std::uint64_t> failed_mallocs{0};
std::atomic<std::uint64_t> failed_frees{0};

// guarded() for functions without a status: records the failure, with the
// function's name in front unless the message starts with it, and returns
// whether the body succeeded.
template <class Body>
bool interop_guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return true;
  } catch (...) {
    const failure f = current_failure();
    if (std::strncmp(f.message, function, std::strlen(function)) == 0) {
      set_last_error(f.status, f.message);
      return false;
    }
    try {
      set_last_error(f.status, strprintf("%s: %s", function, f.message).c_str());
    } catch (...) {
      set_last_error(f.status, f.message);
    }
    return false;
  }
}

// Gives a stream's pin back unless it was handed to a block.
struct pin_guard {
  interop_stream* stream;
  ~pin_guard() {
    if (stream != nullptr) interop_streams::get().unpin(*stream);
  }
};

void* interop_malloc(std::size_t size, int device, void* stream, const char* function) noexcept {
  void* result = nullptr;
  const bool ok = interop_guarded(function, [&] {
    const dao_place place = interop_place(device, function);
    strategy& s = place_strategy(place);
    interop_streams& streams = interop_streams::get();
    pin_guard pin{stream != nullptr ? &streams.acquire(place, stream, function) : nullptr};
    void* p = s.allocate(size, pin.stream != nullptr ? pin.stream->obj.get() : nullptr);
    try {
      streams.add_block(p, interop_block{device, pin.stream});
    } catch (...) {
      s.deallocate(p);
      throw;
    }
    pin.stream = nullptr;  // the block holds it now
    result = p;
  });
  if (!ok) failed_mallocs.fetch_add(1, std::memory_order_relaxed);
  return result;
}

void interop_free(void* ptr, int device, const char* function) noexcept {
  if (ptr == nullptr) return;
  const bool ok = interop_guarded(function, [&] {
    interop_streams& streams = interop_streams::get();
    interop_block b;
    if (!streams.take_block(ptr, b)) {
      // Not from these entry points: perhaps dao_alloc() on the place.
      place_strategy(interop_place(device, function)).deallocate(ptr);
      return;
    }
    try {
      place_strategy(interop_place(b.device, function)).deallocate(ptr);
    } catch (const invalid_pointer&) {
      streams.block_freed(b);  // freed meanwhile by another route: forget it
      throw;
    } catch (...) {
      streams.add_block(ptr, b);  // still live: keep its record
      throw;
    }
    streams.block_freed(b);
  });
  if (!ok) failed_frees.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace
}  // namespace dao::detail

using namespace dao::detail;

extern "C" void* dao_pluggable_malloc(ptrdiff_t size, int device, void* stream) {
  if (size == 0) return nullptr;
  if (size < 0) {
    set_last_error(
        DAO_ERR_INVALID_ARGUMENT,
        strprintf("dao_pluggable_malloc: size is %td; a size cannot be negative", size).c_str());
    failed_mallocs.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return interop_malloc(static_cast<std::size_t>(size), device, stream, "dao_pluggable_malloc");
}

extern "C" void dao_pluggable_free(void* ptr, ptrdiff_t, int device, void*) {
  interop_free(ptr, device, "dao_pluggable_free");
}

extern "C" void dao_pluggable_record_stream(void* ptr, void* stream) {
  static const char* const function = "dao_pluggable_record_stream";
  const bool ok = interop_guarded(function, [&] {
    interop_streams& streams = interop_streams::get();
    interop_block b;
    if (!streams.find_block(ptr, b)) {
      throw invalid_pointer(
          strprintf("%p is not a live block of dao_pluggable_malloc() or dao_cupy_malloc()", ptr));
    }
    const dao_place place = interop_place(b.device, function);
    strategy& s = place_strategy(place);
    if (stream == nullptr) {
      s.record_stream(ptr, nullptr);
      return;
    }
    pin_guard pin{&streams.acquire(place, stream, function)};
    s.record_stream(ptr, pin.stream->obj.get());
  });
  if (!ok) failed_frees.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void* dao_cupy_malloc(void* param, size_t size, int device) {
  if (size == 0) return nullptr;
  void* stream = nullptr;
  if (param != nullptr) {
    // One aligned pointer load: the Python side may move the slot to a new
    // stream between calls.
    stream = __atomic_load_n(static_cast<void* const*>(param), __ATOMIC_RELAXED);
  }
  return interop_malloc(size, device, stream, "dao_cupy_malloc");
}

extern "C" void dao_cupy_free(void*, void* ptr, int device) {
  interop_free(ptr, device, "dao_cupy_free");
}

extern "C" dao_status dao_interop_get_stats(dao_interop_stats* stats) {
  return guarded([&] {
    check_sized(stats, "dao_interop_get_stats", "stats");
    const dao_place place = interop_place(0, "dao_interop_get_stats");
    const interop_streams::counts c = interop_streams::get().read();
    dao_interop_stats s{};
    s.kind = place.kind;
    s.cached_streams = c.cached;
    s.idle_streams = c.idle;
    s.streams_wrapped = c.wrapped;
    s.streams_evicted = c.evicted;
    s.streams_retired = c.retired;
    s.failed_mallocs = failed_mallocs.load(std::memory_order_relaxed);
    s.failed_frees = failed_frees.load(std::memory_order_relaxed);
    write_sized(s, stats, "dao_interop_get_stats", "stats");
  });
}
