// Transports handed in through the C hook (see hooked_transport.hpp). The
// other library reports failures as a status and a message on the calling
// thread; here they become exceptions of libdao's own hierarchy, so that no
// C++ type or exception crosses between the two shared libraries.
#define DAO_EXPERIMENTAL 1

#include "whole/hooked_transport.hpp"

#include <vector>

#include "core/error.hpp"
#include "util/format.hpp"
#include "whole/collective.hpp"

namespace dao::detail::whole {
namespace {

class hook {
 public:
  explicit hook(const dao_comm_transport& ops) : ops_(ops) {}
  ~hook() {
    if (ops_.destroy != nullptr) ops_.destroy(ops_.self);
  }
  hook(const hook&) = delete;
  hook& operator=(const hook&) = delete;

  const dao_comm_transport& ops() const noexcept { return ops_; }

  void check(dao_status status, const char* operation) const {
    if (status == DAO_OK) return;
    const char* message = ops_.last_error != nullptr ? ops_.last_error(ops_.self) : nullptr;
    throw error(status,
                strprintf("%s transport: %s failed: %s", ops_.name, operation,
                          message != nullptr && message[0] != '\0' ? message : "(no message)"));
  }

 private:
  dao_comm_transport ops_;
};

class hooked_window final : public window {
 public:
  // Made before the collective call that gives it its handle (attach()), so
  // that nothing can fail on one rank after that call.
  explicit hooked_window(std::shared_ptr<hook> h) : hook_(std::move(h)) {}
  void attach(void* handle, void* local) noexcept {
    handle_ = handle;
    local_ = local;
  }

  void get(int target, std::size_t offset, void* dst, std::size_t bytes) override {
    const auto& o = hook_->ops();
    hook_->check(o.window_get(o.self, handle_, target, offset, dst, bytes), "window_get");
  }
  void put(int target, std::size_t offset, const void* src, std::size_t bytes) override {
    const auto& o = hook_->ops();
    hook_->check(o.window_put(o.self, handle_, target, offset, src, bytes), "window_put");
  }
  void get_many(int target, std::size_t count, const std::size_t* target_offsets,
                const std::size_t* lengths, char* dst, const std::size_t* dst_offsets) override {
    const auto& o = hook_->ops();
    if (o.window_get_many == nullptr) {
      window::get_many(target, count, target_offsets, lengths, dst, dst_offsets);
      return;
    }
    hook_->check(o.window_get_many(o.self, handle_, target, count, target_offsets, lengths, dst,
                                   dst_offsets),
                 "window_get_many");
  }
  void put_many(int target, std::size_t count, const std::size_t* target_offsets,
                const std::size_t* lengths, const char* src,
                const std::size_t* src_offsets) override {
    const auto& o = hook_->ops();
    if (o.window_put_many == nullptr) {
      window::put_many(target, count, target_offsets, lengths, src, src_offsets);
      return;
    }
    hook_->check(o.window_put_many(o.self, handle_, target, count, target_offsets, lengths, src,
                                   src_offsets),
                 "window_put_many");
  }
  void complete() override {
    const auto& o = hook_->ops();
    hook_->check(o.window_complete(o.self, handle_), "window_complete");
  }
  void free() override {
    void* handle = handle_;
    handle_ = nullptr;
    if (handle == nullptr) return;
    const auto& o = hook_->ops();
    hook_->check(o.window_free(o.self, handle), "window_free");
  }
  void* local() const noexcept override { return local_; }

 private:
  std::shared_ptr<hook> hook_;
  void* handle_ = nullptr;
  void* local_ = nullptr;
};

class hooked_segment final : public shared_segment {
 public:
  // Made before the collective call that gives it its handle (attach()).
  explicit hooked_segment(std::shared_ptr<hook> h) : hook_(std::move(h)) {}
  void attach(void* handle) noexcept { handle_ = handle; }

  // Asked of the transport each time (MPI_Win_shared_query is local and
  // cheap): a query that fails then fails a step whose outcome the ranks
  // agree on, never the collective allocation itself.
  void* part(int rank) const override {
    const auto& o = hook_->ops();
    void* p = nullptr;
    hook_->check(o.shared_query(o.self, handle_, rank, &p), "shared_query");
    return p;
  }
  void free() override {
    void* handle = handle_;
    handle_ = nullptr;
    if (handle == nullptr) return;
    const auto& o = hook_->ops();
    hook_->check(o.shared_free(o.self, handle), "shared_free");
  }

 private:
  std::shared_ptr<hook> hook_;
  void* handle_ = nullptr;
};

class hooked_transport final : public transport {
 public:
  explicit hooked_transport(std::shared_ptr<hook> h) : hook_(std::move(h)) {}

  int rank() const noexcept override { return hook_->ops().rank; }
  int size() const noexcept override { return hook_->ops().size; }
  const char* name() const noexcept override { return hook_->ops().name; }
  bool shares_address_space() const noexcept override { return false; }
  bool shares_host_memory() const noexcept override {
    return hook_->ops().shares_host_memory != 0 && hook_->ops().shared_allocate != nullptr;
  }

  void barrier() override {
    const auto& o = hook_->ops();
    hook_->check(o.barrier(o.self), "barrier");
  }
  void allgather(const void* send, std::size_t bytes, void* recv) override {
    const auto& o = hook_->ops();
    hook_->check(o.allgather(o.self, send, bytes, recv), "allgather");
  }
  bool has_exchange() const noexcept override {
    return hook_->ops().alltoall != nullptr && hook_->ops().alltoallv != nullptr;
  }
  void alltoall(const void* send, std::size_t bytes, void* recv) override {
    const auto& o = hook_->ops();
    if (o.alltoall == nullptr) transport::alltoall(send, bytes, recv);
    hook_->check(o.alltoall(o.self, send, bytes, recv), "alltoall");
  }
  void alltoallv(const void* send, const std::size_t* send_counts, const std::size_t* send_displs,
                 void* recv, const std::size_t* recv_counts, const std::size_t* recv_displs,
                 std::size_t unit) override {
    const auto& o = hook_->ops();
    if (o.alltoallv == nullptr) {
      transport::alltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs, unit);
    }
    hook_->check(
        o.alltoallv(o.self, send, send_counts, send_displs, recv, recv_counts, recv_displs, unit),
        "alltoallv");
  }
  std::size_t exchange_limit() const noexcept override {
    const std::size_t limit = hook_->ops().exchange_limit;
    return limit != 0 ? limit : transport::exchange_limit();
  }
  // Each rank makes what the result needs before the transport's collective
  // call, and the ranks agree on that: a rank out of host memory must not
  // leave the others inside the call, nor hold a handle that only a
  // collective free can release (issue 20, defect 11).
  std::unique_ptr<window> expose(void* local, std::size_t bytes) override {
    const auto& o = hook_->ops();
    std::unique_ptr<hooked_window> w;
    agree_on_outcome(*this, "dao_whole_create",
                     capture([&] { w = std::make_unique<hooked_window>(hook_); }));
    void* handle = nullptr;
    hook_->check(o.window_create(o.self, local, bytes, &handle), "window_create");
    w->attach(handle, nullptr);
    return w;
  }
  std::unique_ptr<window> allocate_exposed(std::size_t bytes) override {
    const auto& o = hook_->ops();
    if (o.window_allocate == nullptr) return nullptr;
    std::unique_ptr<hooked_window> w;
    agree_on_outcome(*this, "dao_whole_create",
                     capture([&] { w = std::make_unique<hooked_window>(hook_); }));
    void* handle = nullptr;
    void* local = nullptr;
    hook_->check(o.window_allocate(o.self, bytes, &local, &handle), "window_allocate");
    w->attach(handle, local);
    return w;
  }
  std::unique_ptr<shared_segment> allocate_shared(std::size_t bytes, bool contiguous) override {
    const auto& o = hook_->ops();
    if (o.shared_allocate == nullptr) {
      throw error(DAO_ERR_INTERNAL, strprintf("%s transport: no shared_allocate", o.name));
    }
    std::unique_ptr<hooked_segment> segment;
    agree_on_outcome(*this, "dao_whole_create",
                     capture([&] { segment = std::make_unique<hooked_segment>(hook_); }));
    void* handle = nullptr;
    void* local = nullptr;
    hook_->check(o.shared_allocate(o.self, bytes, contiguous ? 1 : 0, &handle, &local),
                 "shared_allocate");
    segment->attach(handle);
    return segment;
  }

 private:
  std::shared_ptr<hook> hook_;
};

// The handed-in operations without a hook: what a rank that could not make
// its hook (out of host memory) uses to take part in the communicator's
// agreement, on the stack.
class bare_transport final : public transport {
 public:
  explicit bare_transport(const dao_comm_transport& ops) : ops_(ops) {}

  int rank() const noexcept override { return ops_.rank; }
  int size() const noexcept override { return ops_.size; }
  const char* name() const noexcept override { return ops_.name; }
  bool shares_address_space() const noexcept override { return false; }
  bool shares_host_memory() const noexcept override { return false; }
  void barrier() override { check(ops_.barrier(ops_.self), "barrier"); }
  void allgather(const void* send, std::size_t bytes, void* recv) override {
    check(ops_.allgather(ops_.self, send, bytes, recv), "allgather");
  }
  std::unique_ptr<window> expose(void*, std::size_t) override { throw unused(); }
  std::unique_ptr<window> allocate_exposed(std::size_t) override { throw unused(); }
  std::unique_ptr<shared_segment> allocate_shared(std::size_t, bool) override { throw unused(); }

 private:
  void check(dao_status status, const char* operation) const {
    if (status != DAO_OK)
      throw error(status, strprintf("%s transport: %s failed", ops_.name, operation));
  }
  static error unused() { return error(DAO_ERR_INTERNAL, "a bare transport only agrees"); }

  const dao_comm_transport& ops_;
};

// This rank could not adopt its transport (`failed`, out of host memory):
// the other ranks are about to agree on the communicator's creation
// (make_communicator()), so this one takes part too, with its failure, and
// throws what they all throw. Where not even the agreement's records (a few
// hundred bytes per rank) can be had, it can only throw alone.
[[noreturn]] void fail_with_the_others(const dao_comm_transport& ops, const char* function,
                                       const outcome& failed) {
  bare_transport t(ops);
  const outcome room = capture([&] { reserve_agreement(t); });
  if (!room.ok()) throw error(failed.status, failed.message);
  call c{function, call_kind::comm_create, 0, {}, {}, nullptr};
  agree_on_call(t, c, failed);  // throws: this rank's outcome is a failure
  throw error(failed.status, failed.message);
}

}  // namespace

std::unique_ptr<transport> adopt_transport(const dao_comm_transport& ops, const char* function) {
  const char* missing = nullptr;
  if (ops.destroy == nullptr) missing = "destroy";
  else if (ops.last_error == nullptr) missing = "last_error";
  else if (ops.barrier == nullptr) missing = "barrier";
  else if (ops.allgather == nullptr) missing = "allgather";
  else if (ops.window_create == nullptr) missing = "window_create";
  else if (ops.window_get == nullptr) missing = "window_get";
  else if (ops.window_put == nullptr) missing = "window_put";
  else if (ops.window_complete == nullptr) missing = "window_complete";
  else if (ops.window_free == nullptr) missing = "window_free";
  else if (ops.shared_allocate != nullptr && ops.shared_query == nullptr) missing = "shared_query";
  else if (ops.shared_allocate != nullptr && ops.shared_free == nullptr) missing = "shared_free";
  const char* bad_name = ops.name == nullptr ? "transport->name must not be NULL" : nullptr;
  const bool bad_rank = ops.size < 1 || ops.rank < 0 || ops.rank >= ops.size;
  if (missing != nullptr || bad_name != nullptr || bad_rank) {
    // Owned from the call on: destroyed now, as the header promises.
    if (ops.destroy != nullptr) ops.destroy(ops.self);
    if (missing != nullptr)
      throw invalid_argument(strprintf("transport->%s must not be NULL", missing));
    if (bad_name != nullptr) throw invalid_argument(bad_name);
    throw invalid_argument(
        strprintf("transport: rank %d of size %d is not a rank", ops.rank, ops.size));
  }
  // The operations are usable: from here a failure of this rank alone (its
  // bookkeeping out of memory) is agreed on with the others, which would
  // otherwise wait for it for ever (issue 20, defect 11).
  std::shared_ptr<hook> h;
  const outcome made = capture([&] { h = std::make_shared<hook>(ops); });
  if (!made.ok()) {
    struct destroy_on_exit {
      const dao_comm_transport& ops;
      ~destroy_on_exit() { ops.destroy(ops.self); }
    } owned{ops};
    fail_with_the_others(ops, function, made);
  }
  // From here the hook owns the transport: destroy is called when it goes.
  std::unique_ptr<hooked_transport> t;
  const outcome wrapped = capture([&] {
    t = std::make_unique<hooked_transport>(h);
    reserve_agreement(*t);
  });
  if (!wrapped.ok()) fail_with_the_others(ops, function, wrapped);
  return t;
}

}  // namespace dao::detail::whole
