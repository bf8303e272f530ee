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
  hooked_window(std::shared_ptr<hook> h, void* handle, void* local)
      : hook_(std::move(h)), handle_(handle), local_(local) {}

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
  void* handle_;
  void* local_;
};

class hooked_segment final : public shared_segment {
 public:
  hooked_segment(std::shared_ptr<hook> h, void* handle, int ranks)
      : hook_(std::move(h)), handle_(handle), parts_(static_cast<std::size_t>(ranks)) {
    const auto& o = hook_->ops();
    for (int r = 0; r < ranks; ++r) {
      hook_->check(o.shared_query(o.self, handle_, r, &parts_[static_cast<std::size_t>(r)]),
                   "shared_query");
    }
  }
  void* part(int rank) const override { return parts_.at(static_cast<std::size_t>(rank)); }
  void free() override {
    void* handle = handle_;
    handle_ = nullptr;
    if (handle == nullptr) return;
    const auto& o = hook_->ops();
    hook_->check(o.shared_free(o.self, handle), "shared_free");
  }

 private:
  std::shared_ptr<hook> hook_;
  void* handle_;
  std::vector<void*> parts_;
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
  std::unique_ptr<window> expose(void* local, std::size_t bytes) override {
    const auto& o = hook_->ops();
    void* handle = nullptr;
    hook_->check(o.window_create(o.self, local, bytes, &handle), "window_create");
    return std::make_unique<hooked_window>(hook_, handle, nullptr);
  }
  std::unique_ptr<window> allocate_exposed(std::size_t bytes) override {
    const auto& o = hook_->ops();
    if (o.window_allocate == nullptr) return nullptr;
    void* handle = nullptr;
    void* local = nullptr;
    hook_->check(o.window_allocate(o.self, bytes, &local, &handle), "window_allocate");
    return std::make_unique<hooked_window>(hook_, handle, local);
  }
  std::unique_ptr<shared_segment> allocate_shared(std::size_t bytes, bool contiguous) override {
    const auto& o = hook_->ops();
    if (o.shared_allocate == nullptr) {
      throw error(DAO_ERR_INTERNAL, strprintf("%s transport: no shared_allocate", o.name));
    }
    void* handle = nullptr;
    void* local = nullptr;
    hook_->check(o.shared_allocate(o.self, bytes, contiguous ? 1 : 0, &handle, &local),
                 "shared_allocate");
    return std::make_unique<hooked_segment>(hook_, handle, size());
  }

 private:
  std::shared_ptr<hook> hook_;
};

}  // namespace

std::unique_ptr<transport> adopt_transport(const dao_comm_transport& ops) {
  // Owned from here on: the hook calls destroy when the last user goes,
  // including when a check below throws.
  auto h = std::make_shared<hook>(ops);
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
  if (missing != nullptr) {
    throw invalid_argument(strprintf("transport->%s must not be NULL", missing));
  }
  if (ops.name == nullptr) throw invalid_argument("transport->name must not be NULL");
  if (ops.size < 1 || ops.rank < 0 || ops.rank >= ops.size) {
    throw invalid_argument(
        strprintf("transport: rank %d of size %d is not a rank", ops.rank, ops.size));
  }
  auto t = std::make_unique<hooked_transport>(std::move(h));
  reserve_agreement(*t);
  return t;
}

}  // namespace dao::detail::whole
