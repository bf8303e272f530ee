// Poisoning of pooled memory for AddressSanitizer. A pool holds memory that
// ASan considers allocated (a chunk from malloc) or does not know at all
// (pages mapped with mmap), so a use after free inside the pool would go
// unseen. The strategies poison every free block of host-accessible memory
// and unpoison a block when they hand it out, so that ASan reports a use
// after free as "use-after-poison". Without ASan these functions do nothing.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define DAO_ASAN_POISONING 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DAO_ASAN_POISONING 1
#endif
#endif

#ifdef DAO_ASAN_POISONING
#include <sanitizer/asan_interface.h>
#endif

namespace dao::detail {

inline void asan_poison(const void* p, std::size_t bytes) noexcept {
#ifdef DAO_ASAN_POISONING
  ASAN_POISON_MEMORY_REGION(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

inline void asan_unpoison(const void* p, std::size_t bytes) noexcept {
#ifdef DAO_ASAN_POISONING
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace dao::detail
