// The memory source under the bottom strategy of every allocator: it
// passes everything to the place's system resource and, while a recording
// runs (issue 18), records the memory taken from the system (`map`) and
// given back (`unmap`) for the allocator this thread works for
// (trace::current_allocator). Off, it costs one branch per system call.
#pragma once

#include "resource/memory_source.hpp"
#include "trace/recorder.hpp"

namespace dao::detail {

class trace_source final : public memory_source {
 public:
  explicit trace_source(memory_source& up) noexcept : up_(up) {}

  void* allocate(std::size_t bytes) override {
    void* p = up_.allocate(bytes);
    if (__builtin_expect(trace::active(), 0)) note(trace::kind::map, p, bytes);
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    // Recorded first: once given back, the range may be taken again at once.
    if (__builtin_expect(trace::active(), 0)) note(trace::kind::unmap, p, bytes);
    up_.deallocate(p, bytes);
  }
  dao_place place() const noexcept override { return up_.place(); }
  memory_info info() const override { return up_.info(); }
  bool host_accessible() const noexcept override { return up_.host_accessible(); }
  system_resource& resource() noexcept override { return up_.resource(); }

  std::size_t map_granularity() const noexcept override { return up_.map_granularity(); }
  std::size_t large_page_size() const noexcept override { return up_.large_page_size(); }
  void* reserve_addresses(std::size_t bytes) override { return up_.reserve_addresses(bytes); }
  void release_addresses(void* base, std::size_t bytes) noexcept override {
    up_.release_addresses(base, bytes);
  }
  void map(void* addr, std::size_t bytes) override {
    up_.map(addr, bytes);
    if (__builtin_expect(trace::active(), 0)) note(trace::kind::map, addr, bytes);
  }
  void unmap(void* addr, std::size_t bytes) noexcept override {
    if (__builtin_expect(trace::active(), 0)) note(trace::kind::unmap, addr, bytes);
    up_.unmap(addr, bytes);
  }
  bool unmaps_in_part() const noexcept override { return up_.unmaps_in_part(); }

 private:
  static void note(trace::kind what, void* p, std::size_t bytes) noexcept {
    trace::event e;
    e.what = what;
    e.allocator = trace::current_allocator::get();
    e.ptr = reinterpret_cast<std::uintptr_t>(p);
    e.size = bytes;
    trace::record(e);
  }

  memory_source& up_;
};

}  // namespace dao::detail
