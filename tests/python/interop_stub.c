/* A stand-in for the entry points of include/dao/interop.h, for the tests of
 * dao.torch and dao.cupy (tests/python) while the libdao under test lacks
 * them: the same ABI, over the default allocator of SIM device n. The tests
 * use libdao's own entry points whenever it exports them. Not installed. */
#include <dao.h>
#include <stddef.h>

#if defined(__GNUC__)
#define STUB_API __attribute__((visibility("default")))
#else
#define STUB_API
#endif

static dao_allocator *device_allocator(int device) {
  dao_allocator *a = NULL;
  return dao_place_allocator(dao_place_sim(device), &a) == DAO_OK ? a : NULL;
}

STUB_API void *dao_pluggable_malloc(ptrdiff_t size, int device, void *stream) {
  void *p = NULL;
  dao_allocator *a = device_allocator(device);
  (void)stream;
  if (size < 0 || !a || dao_allocator_alloc(a, (size_t)size, DAO_STREAM_DEFAULT, &p) != DAO_OK) {
    return NULL;
  }
  return p;
}

STUB_API void dao_pluggable_free(void *ptr, ptrdiff_t size, int device, void *stream) {
  dao_allocator *a = device_allocator(device);
  (void)size;
  (void)stream;
  if (a) {
    (void)dao_allocator_free(a, ptr);
  }
}

STUB_API void *dao_cupy_malloc(void *param, size_t size, int device) {
  (void)param;
  return dao_pluggable_malloc((ptrdiff_t)size, device, NULL);
}

STUB_API void dao_cupy_free(void *param, void *ptr, int device) {
  (void)param;
  dao_pluggable_free(ptr, 0, device, NULL);
}
