// A scope in which a held lock is released (the tiered pool's executor
// waits for copies and runs kernels without its mutex).
#pragma once

#include <mutex>

namespace dao::detail {

// Releases a held lock for a scope and takes it back at its end.
class unlocked {
 public:
  explicit unlocked(std::unique_lock<std::mutex>& lock) : lock_(lock) { lock_.unlock(); }
  ~unlocked() { lock_.lock(); }
  unlocked(const unlocked&) = delete;
  unlocked& operator=(const unlocked&) = delete;

 private:
  std::unique_lock<std::mutex>& lock_;
};

}  // namespace dao::detail
