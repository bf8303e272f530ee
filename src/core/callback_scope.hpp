// Which user callback the calling thread is running, if any: a host function
// of a stream, a kernel of a tiered pool or a scoring callback of one. The
// thread that runs a callback (a stream's worker, a pool's executor, the
// CUDA driver's) marks it for its duration; a library call that would wait
// for the callback itself, or take a lock the callback's caller holds, asks
// here and throws invalid_state (issue 20, reentrancy) instead of hanging.
#pragma once

namespace dao::detail {

class callback_scope {
 public:
  enum class kind { host_function, kernel, scoring, oom };

  // `owner`: the stream_impl whose host function runs, or the tiered_pool
  // whose kernel or scoring callback runs, or the strategy whose
  // out-of-memory observer runs (issue 18). `stream`: a kernel's compute
  // stream handle (dao_stream_st*), else null. Only compared, never used.
  callback_scope(kind what, const void* owner, const void* stream = nullptr) noexcept
      : what_(what), owner_(owner), stream_(stream), outer_(current_) {
    current_ = this;
  }
  ~callback_scope() { current_ = outer_; }
  callback_scope(const callback_scope&) = delete;
  callback_scope& operator=(const callback_scope&) = delete;

  // The innermost callback this thread runs, or null.
  static const callback_scope* current() noexcept { return current_; }

  // Whether this thread runs a callback of `what` owned by `owner` (any
  // owner when null), at any depth.
  static bool inside(kind what, const void* owner = nullptr) noexcept {
    for (const callback_scope* s = current_; s != nullptr; s = s->outer_)
      if (s->what_ == what && (owner == nullptr || s->owner_ == owner)) return true;
    return false;
  }

  // The innermost scope of `what`, or null.
  static const callback_scope* find(kind what) noexcept {
    for (const callback_scope* s = current_; s != nullptr; s = s->outer_)
      if (s->what_ == what) return s;
    return nullptr;
  }

  kind what() const noexcept { return what_; }
  const void* owner() const noexcept { return owner_; }
  const void* stream() const noexcept { return stream_; }

 private:
  kind what_;
  const void* owner_;
  const void* stream_;
  callback_scope* outer_;
  static inline thread_local callback_scope* current_ = nullptr;
};

}  // namespace dao::detail
