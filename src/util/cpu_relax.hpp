// A spin-wait hint: tells the core that this thread is busy-waiting, so a
// sibling hyper-thread gets the pipeline and the memory order machine is not
// flooded with speculative loads. One definition for every spinning loop.
#pragma once

namespace dao::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#elif defined(__powerpc64__) || defined(__powerpc__)
  __asm__ __volatile__("or 27,27,27" ::: "memory");  // lower the thread's priority
#else
  __asm__ __volatile__("" ::: "memory");  // at least a compiler barrier
#endif
}

}  // namespace dao::detail
