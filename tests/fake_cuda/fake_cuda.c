/*
 * A fake CUDA driver for tests: exactly the driver entry points libdao
 * resolves, served from host memory, so the CUDA backends run on machines
 * with no GPU. Point libdao to it with DAO_CUDA_LIBRARY=<path of this .so>.
 *
 * Environment, read by cuInit:
 *   FAKE_CUDA_DEVICES        number of devices (default 1; 0: cuInit gives
 *                            CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_CAPACITY       bytes per device (default 64MiB; K/M/G suffixes)
 *   FAKE_CUDA_HOST_CAPACITY  bytes of pinned host memory (default 64MiB)
 *   FAKE_CUDA_FAIL_SIZE      an allocation of exactly this many bytes fails
 *                            with CUDA_ERROR_ILLEGAL_ADDRESS (default: none)
 *   FAKE_CUDA_GRANULARITY    virtual memory granularity (default 2MiB; a
 *                            power of two, at least the host page size)
 *   FAKE_CUDA_NO_VMM         1: cuDeviceGetAttribute reports no virtual
 *                            memory management support
 *   FAKE_CUDA_HIDDEN         1: device memory (cuMemAlloc) is not host
 *                            memory: see "Hidden device memory" below
 *   FAKE_CUDA_NO_PEER        1: cuDeviceCanAccessPeer says no for every
 *                            pair of devices (default: every pair of
 *                            different devices can)
 *
 * Hidden device memory (FAKE_CUDA_HIDDEN=1), as on a card: the address
 * cuMemAlloc hands out is a PROT_NONE mapping, so the host faults on it, and
 * only the driver's copies (cuMemcpyAsync) reach the bytes, through a
 * second mapping of the same memory (a memfd). Such memory can be exported
 * to another process: cuIpcGetMemHandle (of an allocation's base, as the
 * driver documents) puts the owner's pid and the memfd's descriptor into
 * the handle, and cuIpcOpenMemHandle in another process maps
 * /proc/<pid>/fd/<fd>. Like the real driver, it refuses to open a handle in
 * the process that exported it (CUDA_ERROR_INVALID_CONTEXT), counts
 * repeated opens in one context and returns the same address, and needs
 * CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as the flags. Without hidden memory
 * cuIpcGetMemHandle gives CUDA_ERROR_NOT_SUPPORTED. Peer access
 * (cuDeviceCanAccessPeer, cuCtxEnablePeerAccess) is recorded per pair of
 * devices; copies do not depend on it (nor do the real driver's).
 *
 * Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
 * ...) works on host address space: a reservation is a PROT_NONE mapping,
 * cuMemCreate counts its bytes against the device's capacity, cuMemSetAccess
 * makes mapped granules readable and writable, and cuMemUnmap drops their
 * pages. Like the real driver, cuMemUnmap refuses any range that is not
 * exactly the range of one cuMemMap call, and memory lives until it is
 * neither mapped nor referenced by its handle. (Unlike the real driver, the
 * memory of a plain handle belongs to the addresses, not the handle:
 * mapping one handle twice does not share its bytes. A handle created with
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, or any handle with hidden
 * memory, is a memfd that every mapping shares, as on the card;
 * cuMemExportToShareableHandle gives a copy of its descriptor, which
 * cuMemImportFromShareableHandle takes in any process, and the memfd's
 * name carries the device, so that cuMemSetAccess for another device
 * without peer access (FAKE_CUDA_NO_PEER) fails with
 * CUDA_ERROR_INVALID_DEVICE.) Built with -DFAKE_CUDA_WITHOUT_VMM (the
 * dao_fake_cuda_novmm library), the driver lacks these entry points
 * altogether, as an old driver would.
 *
 * Like the real driver it keeps a per-thread stack of current contexts and
 * refuses memory, stream and event calls without one, so a backend that
 * forgets to push its context fails here. Streams run their work on a thread
 * of their own, so it really is asynchronous. The fake_cuda_* functions let
 * a test look inside.
 *
 * Prototypes come from libdao's private src/resource/cuda_api.h, so the
 * compiler checks every signature against the declarations libdao uses.
 * Built with -DFAKE_CUDA_TOOLKIT_HEADER (tests/cuda.cmake, where a CUDA
 * toolkit is found) it takes them from the toolkit's cuda.h instead, which
 * checks those declarations against the real API (cuda.h maps e.g.
 * cuMemAlloc to cuMemAlloc_v2).
 */
#define _GNU_SOURCE /* memfd_create */
#ifdef FAKE_CUDA_TOOLKIT_HEADER
#include <cuda.h>
#else
#include "resource/cuda_api.h"
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAKE_MAX_DEVICES 16
#define FAKE_MAX_DEPTH 32
#define FAKE_ALIGNMENT 256
#define FAKE_HOST (-1) /* the "device" of pinned host memory */

struct CUctx_st {
  int device;
  int retains;
};

struct allocation {
  void *p;
  size_t bytes; /* rounded to FAKE_ALIGNMENT, as counted */
  int device;   /* FAKE_HOST for cuMemHostAlloc */
  /* Hidden memory: p is PROT_NONE, the bytes are at shadow (a memfd). */
  void *shadow;
  int fd;         /* the memfd of an allocation of this process, else -1 */
  int imported;   /* opens of another process's memory (cuIpcOpenMemHandle) */
  long owner_pid; /* imported: the exporter's pid and memfd */
  int owner_fd;
  struct allocation *next;
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static int fake_initialised;
static int fake_devices;
static size_t fake_capacity;
static size_t fake_host_capacity;
static size_t fake_fail_size;
static size_t fake_granularity;
static int fake_no_vmm;
static int fake_hidden;
static int fake_no_peer;
static long fake_live_imports;
static unsigned char fake_peer_enabled[FAKE_MAX_DEVICES][FAKE_MAX_DEVICES];
static size_t fake_used_bytes[FAKE_MAX_DEVICES];
static size_t fake_host_used;
static long fake_live_count;
static struct allocation *fake_live;
static struct CUctx_st fake_contexts[FAKE_MAX_DEVICES];

/* This thread's context stack, as the driver keeps one per thread. */
static __thread CUcontext fake_stack[FAKE_MAX_DEPTH];
static __thread int fake_depth;

static size_t env_size(const char *name, size_t fallback) {
  const char *text = getenv(name);
  char *end = NULL;
  unsigned long long value;
  if (text == NULL || *text == '\0') return fallback;
  value = strtoull(text, &end, 10);
  switch (*end) {
    case 'K':
    case 'k': value <<= 10; break;
    case 'M':
    case 'm': value <<= 20; break;
    case 'G':
    case 'g': value <<= 30; break;
    default: break;
  }
  return (size_t)value;
}

static int checked_device(CUdevice dev) {
  return fake_initialised && dev >= 0 && dev < fake_devices;
}

/* The device of this thread's current context, or -1 without one. */
static int current_device(void) { return fake_depth > 0 ? fake_stack[fake_depth - 1]->device : -1; }

static size_t round_up(size_t bytes) {
  return (bytes + FAKE_ALIGNMENT - 1) & ~(size_t)(FAKE_ALIGNMENT - 1);
}

/* Maps `bytes` of `fd` twice: readable and writable at *shadow, and
   PROT_NONE at the address returned (NULL on failure). */
static void *map_hidden(int fd, size_t bytes, void **shadow) {
  void *p;
  *shadow = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (*shadow == MAP_FAILED) return NULL;
  p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    munmap(*shadow, bytes);
    return NULL;
  }
  return p;
}

/* Hidden device memory of `rounded` bytes: a memfd mapped twice. */
static CUresult hidden_allocate(struct allocation *a, size_t rounded) {
  int fd = memfd_create("fake-cuda-device", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, (off_t)rounded) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->p = map_hidden(fd, rounded, &a->shadow);
  if (a->p == NULL) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->fd = fd;
  return CUDA_SUCCESS;
}

/* Allocates `bytes` on `device` (or FAKE_HOST); the caller holds fake_lock.
   `hidden`: device memory the host cannot address (FAKE_CUDA_HIDDEN). */
static CUresult fake_allocate_as(void **out, size_t bytes, int device, int hidden) {
  size_t rounded, *used, capacity;
  struct allocation *a;
  void *p = NULL;
  if (out == NULL || bytes == 0 || bytes > SIZE_MAX - FAKE_ALIGNMENT)
    return CUDA_ERROR_INVALID_VALUE;
  if (fake_fail_size != 0 && bytes == fake_fail_size) return CUDA_ERROR_ILLEGAL_ADDRESS;
  rounded = round_up(bytes);
  used = device == FAKE_HOST ? &fake_host_used : &fake_used_bytes[device];
  capacity = device == FAKE_HOST ? fake_host_capacity : fake_capacity;
  if (rounded > capacity - *used) return CUDA_ERROR_OUT_OF_MEMORY;
  a = (struct allocation *)calloc(1, sizeof *a);
  if (a == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  a->fd = -1;
  if (hidden) {
    CUresult r = hidden_allocate(a, rounded);
    if (r != CUDA_SUCCESS) {
      free(a);
      return r;
    }
    p = a->p;
  } else if (posix_memalign(&p, FAKE_ALIGNMENT, rounded) != 0) {
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->p = p;
  a->bytes = rounded;
  a->device = device;
  a->next = fake_live;
  fake_live = a;
  *used += rounded;
  ++fake_live_count;
  *out = p;
  return CUDA_SUCCESS;
}

static CUresult fake_allocate(void **out, size_t bytes, int device) {
  return fake_allocate_as(out, bytes, device, 0);
}

/* Gives back the memory of `a` (not the record). */
static void unmap_allocation(struct allocation *a) {
  if (a->shadow != NULL) {
    munmap(a->shadow, a->bytes);
    munmap(a->p, a->bytes);
    if (a->fd >= 0) close(a->fd);
  } else {
    free(a->p);
  }
}

/* The allocation that holds [p, p + bytes), or NULL; the caller holds
   fake_lock. */
static struct allocation *allocation_holding(uintptr_t p, size_t bytes) {
  struct allocation *a;
  for (a = fake_live; a != NULL; a = a->next) {
    uintptr_t base = (uintptr_t)a->p;
    if (p >= base && p - base < a->bytes && bytes <= a->bytes - (p - base)) return a;
  }
  return NULL;
}

/* Hidden memory mapped with cuMemMap that holds p: its shadow for p, and
   in *avail the bytes from p to the mapping's end; NULL when none. The
   caller holds fake_lock. (Defined with the virtual memory functions.) */
static void *mapped_view(uintptr_t p, size_t *avail);

/* Where the host reaches p: the shadow of hidden memory, with in *avail the
   bytes from p to the end of that memory (a copy may go on into the next
   mapping, as device addresses do), else p itself and SIZE_MAX. */
static void *host_view(uintptr_t p, size_t *avail) {
  struct allocation *a;
  void *out = (void *)p;
  *avail = SIZE_MAX;
  pthread_mutex_lock(&fake_lock);
  for (a = fake_live; a != NULL; a = a->next) {
    uintptr_t base = (uintptr_t)a->p;
    if (a->shadow == NULL || p < base || p - base >= a->bytes) continue;
    out = (char *)a->shadow + (p - base);
    *avail = a->bytes - (p - base);
    pthread_mutex_unlock(&fake_lock);
    return out;
  }
  {
    void *m = mapped_view(p, avail);
    if (m != NULL) out = m;
  }
  pthread_mutex_unlock(&fake_lock);
  return out;
}

/* Frees p if it is live and of the right sort; the caller holds fake_lock. */
static CUresult fake_release(void *p, int host) {
  struct allocation **link = &fake_live;
  for (; *link != NULL; link = &(*link)->next) {
    struct allocation *a = *link;
    if (a->p != p) continue;
    if ((a->device == FAKE_HOST) != host || a->imported) return CUDA_ERROR_INVALID_VALUE;
    if (a->device == FAKE_HOST) fake_host_used -= a->bytes;
    else fake_used_bytes[a->device] -= a->bytes;
    *link = a->next;
    --fake_live_count;
    unmap_allocation(a);
    free(a);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- the driver entry points ---- */

CUresult cuInit(unsigned int flags) {
  CUresult r = CUDA_SUCCESS;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  if (!fake_initialised) {
    int i, n = (int)env_size("FAKE_CUDA_DEVICES", 1);
    if (n <= 0) {
      r = CUDA_ERROR_NO_DEVICE;
    } else {
      fake_devices = n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : n;
      fake_capacity = env_size("FAKE_CUDA_CAPACITY", (size_t)64 << 20);
      fake_host_capacity = env_size("FAKE_CUDA_HOST_CAPACITY", (size_t)64 << 20);
      fake_fail_size = env_size("FAKE_CUDA_FAIL_SIZE", 0);
      fake_granularity = env_size("FAKE_CUDA_GRANULARITY", (size_t)2 << 20);
      if (fake_granularity == 0 || (fake_granularity & (fake_granularity - 1)) != 0 ||
          fake_granularity % (size_t)sysconf(_SC_PAGESIZE) != 0)
        fake_granularity = (size_t)2 << 20;
      fake_no_vmm = env_size("FAKE_CUDA_NO_VMM", 0) != 0;
      fake_hidden = env_size("FAKE_CUDA_HIDDEN", 0) != 0;
      fake_no_peer = env_size("FAKE_CUDA_NO_PEER", 0) != 0;
      for (i = 0; i < fake_devices; ++i) fake_contexts[i].device = i;
      fake_initialised = 1;
    }
  }
  pthread_mutex_unlock(&fake_lock);
  return r;
}

CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_initialised) return CUDA_ERROR_NOT_INITIALIZED;
  *count = fake_devices;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (!checked_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!checked_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Fake CUDA Device %d", dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!checked_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = fake_capacity;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!checked_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&fake_lock);
  ++fake_contexts[dev].retains;
  pthread_mutex_unlock(&fake_lock);
  *ctx = &fake_contexts[dev];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  CUresult r = CUDA_SUCCESS;
  if (!checked_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&fake_lock);
  if (fake_contexts[dev].retains > 0) --fake_contexts[dev].retains;
  else r = CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&fake_lock);
  return r;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  int valid;
  if (!fake_initialised) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  valid =
      ctx != NULL && ctx >= fake_contexts && ctx < fake_contexts + fake_devices && ctx->retains > 0;
  pthread_mutex_unlock(&fake_lock);
  if (!valid) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_depth == FAKE_MAX_DEPTH) return CUDA_ERROR_INVALID_VALUE;
  fake_stack[fake_depth++] = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
  if (!fake_initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (fake_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --fake_depth;
  if (ctx != NULL) *ctx = fake_stack[fake_depth];
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  void *p = NULL;
  CUresult r;
  int device = current_device();
  if (dptr == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  r = fake_allocate_as(&p, bytes, device, fake_hidden);
  pthread_mutex_unlock(&fake_lock);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
  return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags) {
  void *p = NULL;
  CUresult r;
  int device = current_device();
  if (dptr == NULL || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
    return CUDA_ERROR_INVALID_VALUE;
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  r = fake_allocate(&p, bytes, device);
  pthread_mutex_unlock(&fake_lock);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  CUresult r;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  r = fake_release((void *)(uintptr_t)dptr, 0);
  pthread_mutex_unlock(&fake_lock);
  return r;
}

CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
  CUresult r;
  if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                          CU_MEMHOSTALLOC_WRITECOMBINED))
    return CUDA_ERROR_INVALID_VALUE;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  r = fake_allocate(pp, bytes, FAKE_HOST);
  pthread_mutex_unlock(&fake_lock);
  return r;
}

CUresult cuMemFreeHost(void *p) {
  CUresult r;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  r = fake_release(p, 1);
  pthread_mutex_unlock(&fake_lock);
  return r;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  int device = current_device();
  if (free_bytes == NULL || total_bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  *total_bytes = fake_capacity;
  *free_bytes = fake_capacity - fake_used_bytes[device];
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice dev) {
  if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!checked_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
#ifdef FAKE_CUDA_WITHOUT_VMM
      *value = 0;
#else
      *value = !fake_no_vmm;
#endif
      return CUDA_SUCCESS;
    default:
      /* Not modelled: a test notices if libdao starts to rely on it. */
      return CUDA_ERROR_INVALID_VALUE;
  }
}

/* ---- virtual memory management ----
 *
 * Everything under fake_lock. Reservations, physical allocations (handles)
 * and mappings are kept in lists: a test maps at most a few thousand
 * granules, so linear searches are fine. */

#ifndef FAKE_CUDA_WITHOUT_VMM

/* An injected failure (fake_cuda_fail_call): the call named `name` fails
   with `result` once `skip` calls of it have succeeded. */
static char fake_fail_call[32];
static int fake_fail_skip;
static CUresult fake_fail_result;

/* Whether this call of `name` is to fail; the caller holds fake_lock. */
static int injected_failure(const char *name, CUresult *result) {
  if (fake_fail_call[0] == '\0' || strcmp(fake_fail_call, name) != 0) return 0;
  if (fake_fail_skip > 0) {
    --fake_fail_skip;
    return 0;
  }
  fake_fail_call[0] = '\0';
  *result = fake_fail_result;
  return 1;
}

struct reservation {
  uintptr_t base;
  size_t bytes;
  struct reservation *next;
};

struct handle {
  int device; /* -1: imported from another process's descriptor */
  size_t bytes;
  int mappings; /* live cuMemMap of it */
  int released; /* cuMemRelease called */
  /* A memfd holding the bytes (hidden memory, or a shareable handle asked
     for: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), else -1: then the
     memory belongs to the addresses it is mapped at. */
  int fd;
  int exportable;  /* created with a POSIX file descriptor handle type */
  int from_device; /* imported: the exporter's device, -1 when unknown */
  struct handle *next;
};

struct mapping {
  uintptr_t base;
  size_t bytes;
  struct handle *handle;
  void *shadow; /* hidden memory (FAKE_CUDA_HIDDEN): the bytes, else NULL */
  int shared;   /* the handle's memfd is mapped at base */
  struct mapping *next;
};

static struct reservation *fake_reservations;
static struct handle *fake_handles;
static struct mapping *fake_mappings;
static long fake_live_reservations;
static long fake_live_handles;
static long fake_live_mappings;
static long fake_map_calls;

static int is_power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

static int valid_prop(const CUmemAllocationProp *prop) {
  return prop != NULL && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         (prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE ||
          prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) &&
         prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && checked_device(prop->location.id);
}

/* The live handle with this value, or NULL; the caller holds fake_lock. */
static struct handle *find_handle(CUmemGenericAllocationHandle value) {
  struct handle *h;
  for (h = fake_handles; h != NULL; h = h->next)
    if ((CUmemGenericAllocationHandle)(uintptr_t)h == value) return h;
  return NULL;
}

/* Frees a handle's memory once it is neither mapped nor referenced; the
   caller holds fake_lock. */
static void handle_maybe_free(struct handle *h) {
  struct handle **link;
  if (!h->released || h->mappings > 0) return;
  for (link = &fake_handles; *link != h; link = &(*link)->next) {
  }
  *link = h->next;
  if (h->device >= 0) {
    fake_used_bytes[h->device] -= h->bytes;
    --fake_live_count;
  }
  if (h->fd >= 0) close(h->fd);
  --fake_live_handles;
  free(h);
}

/* The reservation holding all of [base, base+bytes), or NULL. */
static struct reservation *reservation_of(uintptr_t base, size_t bytes) {
  struct reservation *r;
  for (r = fake_reservations; r != NULL; r = r->next)
    if (base >= r->base && base - r->base <= r->bytes && bytes <= r->bytes - (base - r->base))
      return r;
  return NULL;
}

/* Whether a mapping overlaps [base, base+bytes). */
static int overlaps_mapping(uintptr_t base, size_t bytes) {
  struct mapping *m;
  for (m = fake_mappings; m != NULL; m = m->next)
    if (base < m->base + m->bytes && m->base < base + bytes) return 1;
  return 0;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
  if (granularity == NULL || !valid_prop(prop) ||
      (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
       option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = fake_granularity;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  struct reservation *r;
  CUresult result = CUDA_SUCCESS;
  uintptr_t raw, base;
  size_t extra;
  void *p;
  (void)addr; /* only a hint */
  if (ptr == NULL || size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (alignment == 0) alignment = fake_granularity;
  if (!is_power_of_two(alignment) || size % fake_granularity != 0 || size > ((size_t)1 << 46))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  if (injected_failure("cuMemAddressReserve", &result)) {
    pthread_mutex_unlock(&fake_lock);
    return result;
  }
  pthread_mutex_unlock(&fake_lock);
  /* Over-reserve, then cut the ends off to align the base. */
  extra = alignment > fake_granularity ? alignment : fake_granularity;
  p = mmap(NULL, size + extra, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  raw = (uintptr_t)p;
  base = (raw + extra - 1) & ~(uintptr_t)(extra - 1);
  if (base > raw) munmap(p, base - raw);
  if (raw + size + extra > base + size)
    munmap((void *)(base + size), raw + size + extra - base - size);
  r = (struct reservation *)malloc(sizeof *r);
  if (r == NULL) {
    munmap((void *)base, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  r->base = base;
  r->bytes = size;
  pthread_mutex_lock(&fake_lock);
  r->next = fake_reservations;
  fake_reservations = r;
  ++fake_live_reservations;
  pthread_mutex_unlock(&fake_lock);
  *ptr = (CUdeviceptr)base;
  return CUDA_SUCCESS;
}

/* Refuses a range that is not exactly one reservation, or one that still
   has mappings. */
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  struct reservation **link, *r = NULL;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  for (link = &fake_reservations; *link != NULL; link = &(*link)->next) {
    if ((*link)->base == (uintptr_t)ptr && (*link)->bytes == size) {
      r = *link;
      break;
    }
  }
  if (r == NULL || overlaps_mapping(r->base, r->bytes)) {
    pthread_mutex_unlock(&fake_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *link = r->next;
  --fake_live_reservations;
  pthread_mutex_unlock(&fake_lock);
  munmap((void *)r->base, r->bytes);
  free(r);
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *out, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags) {
  struct handle *h;
  CUresult result = CUDA_SUCCESS;
  int device;
  if (out == NULL || !valid_prop(prop) || flags != 0 || size == 0 || size % fake_granularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  device = prop->location.id;
  pthread_mutex_lock(&fake_lock);
  if (injected_failure("cuMemCreate", &result)) {
    pthread_mutex_unlock(&fake_lock);
    return result;
  }
  if (size > fake_capacity - fake_used_bytes[device] ||
      (h = (struct handle *)calloc(1, sizeof *h)) == NULL) {
    pthread_mutex_unlock(&fake_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  h->device = device;
  h->bytes = size;
  h->fd = -1;
  h->exportable = prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  if (fake_hidden || h->exportable) {
    /* The name carries the device, for an importer's peer access check. */
    char name[32];
    snprintf(name, sizeof name, "fake-cuda-vmm:%d", device);
    h->fd = memfd_create(name, MFD_CLOEXEC);
    if (h->fd < 0 || ftruncate(h->fd, (off_t)size) != 0) {
      if (h->fd >= 0) close(h->fd);
      free(h);
      pthread_mutex_unlock(&fake_lock);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  h->next = fake_handles;
  fake_handles = h;
  fake_used_bytes[device] += size;
  ++fake_live_handles;
  ++fake_live_count;
  pthread_mutex_unlock(&fake_lock);
  *out = (CUmemGenericAllocationHandle)(uintptr_t)h;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle value) {
  struct handle *h;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  h = find_handle(value);
  if (h == NULL || h->released) {
    pthread_mutex_unlock(&fake_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  h->released = 1;
  handle_maybe_free(h);
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

/* Maps the handle's memory, without access: cuMemSetAccess grants it. */
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle value,
                  unsigned long long flags) {
  struct handle *h;
  struct mapping *m;
  CUresult result = CUDA_SUCCESS;
  const uintptr_t base = (uintptr_t)ptr;
  if (flags != 0 || size == 0 || base % fake_granularity != 0 || size % fake_granularity != 0 ||
      offset % fake_granularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  h = find_handle(value);
  if (h == NULL || h->released || offset > h->bytes || size > h->bytes - offset ||
      reservation_of(base, size) == NULL || overlaps_mapping(base, size)) {
    pthread_mutex_unlock(&fake_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (injected_failure("cuMemMap", &result) || (m = (struct mapping *)malloc(sizeof *m)) == NULL) {
    pthread_mutex_unlock(&fake_lock);
    return result != CUDA_SUCCESS ? result : CUDA_ERROR_OUT_OF_MEMORY;
  }
  m->shadow = NULL;
  m->shared = h->fd >= 0;
  if (m->shared) {
    /* The handle's memfd at the addresses (PROT_NONE until cuMemSetAccess;
       for ever when hidden: then the bytes are reached at the shadow, a
       second mapping of it). */
    void *shadow = NULL;
    if (mmap((void *)base, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, (off_t)offset) ==
        MAP_FAILED)
      shadow = MAP_FAILED;
    else if (fake_hidden)
      shadow = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, (off_t)offset);
    if (shadow == MAP_FAILED) {
      mmap((void *)base, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
           -1, 0);
      pthread_mutex_unlock(&fake_lock);
      free(m);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->shadow = shadow;
  }
  m->base = base;
  m->bytes = size;
  m->handle = h;
  m->next = fake_mappings;
  fake_mappings = m;
  ++h->mappings;
  ++fake_live_mappings;
  ++fake_map_calls;
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

/* Only the exact range of one cuMemMap call, as the real driver. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  struct mapping **link, *m = NULL;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  for (link = &fake_mappings; *link != NULL; link = &(*link)->next) {
    if ((*link)->base == (uintptr_t)ptr && (*link)->bytes == size) {
      m = *link;
      break;
    }
  }
  if (m == NULL) {
    pthread_mutex_unlock(&fake_lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *link = m->next;
  --fake_live_mappings;
  /* The memory is gone: the next mapping there starts from zeros, and a
     stray access faults. */
  if (m->shared) {
    if (m->shadow != NULL) munmap(m->shadow, m->bytes);
    mmap((void *)m->base, m->bytes, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  } else {
    madvise((void *)m->base, m->bytes, MADV_DONTNEED);
    mprotect((void *)m->base, m->bytes, PROT_NONE);
  }
  --m->handle->mappings;
  handle_maybe_free(m->handle);
  pthread_mutex_unlock(&fake_lock);
  free(m);
  return CUDA_SUCCESS;
}

/* The range must be whole mappings, back to back. */
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  CUresult result = CUDA_SUCCESS;
  uintptr_t cursor = (uintptr_t)ptr;
  const uintptr_t end = (uintptr_t)ptr + size;
  int prot = PROT_NONE;
  size_t i;
  if (desc == NULL || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!checked_device(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
    switch (desc[i].flags) {
      case CU_MEM_ACCESS_FLAGS_PROT_NONE: break;
      case CU_MEM_ACCESS_FLAGS_PROT_READ: prot |= PROT_READ; break;
      case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: prot |= PROT_READ | PROT_WRITE; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  while (cursor < end) {
    struct mapping *m;
    for (m = fake_mappings; m != NULL && m->base != cursor; m = m->next) {
    }
    if (m == NULL || m->bytes > end - cursor) {
      pthread_mutex_unlock(&fake_lock);
      return CUDA_ERROR_INVALID_VALUE;
    }
    /* Another device reaches this memory only over a peer path. */
    for (i = 0; i < count; ++i) {
      const int owner = m->handle->device >= 0 ? m->handle->device : m->handle->from_device;
      if (desc[i].location.id != owner && owner >= 0 && fake_no_peer) {
        pthread_mutex_unlock(&fake_lock);
        return CUDA_ERROR_INVALID_DEVICE;
      }
    }
    cursor += m->bytes;
  }
  if (!injected_failure("cuMemSetAccess", &result) && !fake_hidden &&
      mprotect((void *)(uintptr_t)ptr, size, prot) != 0)
    result = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&fake_lock);
  return result;
}

/* A descriptor of a handle's memory, for another process (which takes a
   copy of it, e.g. with pidfd_getfd). */
CUresult cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle value,
                                      CUmemAllocationHandleType type, unsigned long long flags) {
  struct handle *h;
  int fd = -1;
  if (shareable == NULL || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  h = find_handle(value);
  /* Only a handle created with this handle type can be exported so. */
  if (h != NULL && !h->released && h->exportable) fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
  pthread_mutex_unlock(&fake_lock);
  if (h == NULL || h->released || !h->exportable) return CUDA_ERROR_INVALID_VALUE;
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *(int *)shareable = fd;
  return CUDA_SUCCESS;
}

/* A new handle to the memory a descriptor names; the caller keeps (and
   closes) its descriptor. */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *out, void *os,
                                        CUmemAllocationHandleType type) {
  struct handle *h;
  struct stat st;
  const int fd = (int)(uintptr_t)os;
  if (out == NULL || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (fstat(fd, &st) != 0 || st.st_size <= 0 || (size_t)st.st_size % fake_granularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  h = (struct handle *)calloc(1, sizeof *h);
  if (h == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  h->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (h->fd < 0) {
    free(h);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  h->device = -1; /* charged to the exporter's device, in its process */
  h->from_device = -1;
  {
    /* The exporter's device, from the memfd's name ("/memfd:fake-cuda-vmm:N"). */
    char link[64], target[128];
    ssize_t n;
    const char *colon;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    colon = strstr(target, "fake-cuda-vmm:");
    if (colon != NULL) h->from_device = atoi(colon + strlen("fake-cuda-vmm:"));
  }
  h->bytes = (size_t)st.st_size;
  pthread_mutex_lock(&fake_lock);
  h->next = fake_handles;
  fake_handles = h;
  ++fake_live_handles;
  pthread_mutex_unlock(&fake_lock);
  *out = (CUmemGenericAllocationHandle)(uintptr_t)h;
  return CUDA_SUCCESS;
}

static void *mapped_view(uintptr_t p, size_t *avail) {
  struct mapping *m;
  for (m = fake_mappings; m != NULL; m = m->next) {
    if (m->shadow == NULL || p < m->base || p - m->base >= m->bytes) continue;
    *avail = m->bytes - (p - m->base);
    return (char *)m->shadow + (p - m->base);
  }
  return NULL;
}

#else

static void *mapped_view(uintptr_t p, size_t *avail) {
  (void)p;
  (void)avail;
  return NULL;
}

#endif /* FAKE_CUDA_WITHOUT_VMM */

/* ---- streams and events ----
 *
 * Each stream has a worker thread that runs its queue in order, so work is
 * really asynchronous and cuStreamQuery / cuEventQuery can answer
 * CUDA_ERROR_NOT_READY. An item stays at the head of its queue while it
 * runs. The legacy default stream (NULL) runs everything at once on the
 * calling thread. One lock and one condition variable (broadcast on every
 * change) serve all streams and events: simple beats fast in a fake.
 *
 * An event counts generations: a record takes the next one, and the event
 * is complete when the marker of its last record has run. */

#define FAKE_STREAM_MAGIC 0x5354524du /* "STRM" */
#define FAKE_EVENT_MAGIC 0x45564e54u  /* "EVNT" */

struct CUevent_st {
  unsigned magic;
  int device;
  unsigned long recorded; /* generation of the last record; 0: never */
  unsigned long done;     /* highest generation whose marker has run */
  int refs;               /* the handle, plus each queued item */
};

enum fake_op { FAKE_COPY, FAKE_HOST_FN, FAKE_MARK, FAKE_WAIT };

struct fake_item {
  enum fake_op op;
  void *dst;
  const void *src;
  size_t bytes;
  CUhostFn fn;
  void *user_data;
  struct CUevent_st *event;
  unsigned long generation;
  struct fake_item *next;
};

struct CUstream_st {
  unsigned magic;
  int device;
  struct fake_item *head, *tail;
  int stopping;
  pthread_t worker;
  unsigned long long id;    /* cuStreamGetId: never reused, as the driver's */
  struct CUstream_st *next; /* in fake_streams */
};

static pthread_mutex_t fake_stream_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_stream_changed = PTHREAD_COND_INITIALIZER;
static long fake_live_streams;
static long fake_live_events;
static struct CUstream_st *fake_streams; /* every live stream */
static unsigned long long fake_last_stream_id;
static struct CUstream_st *fake_spare_streams; /* destroyed, for reuse */

/* Drops one reference; the caller holds fake_stream_lock. */
static void event_release_locked(struct CUevent_st *e) {
  if (--e->refs == 0) {
    free(e);
    --fake_live_events;
  }
}

/* A destroyed stream's memory is kept for the next stream (fake_spare_streams),
   never given back: so a handle of a destroyed stream can be refused by its
   magic without reading freed memory (libdao's interop cache may still hold
   the handle of a stream its owner destroyed, as the real driver allows), and
   a new stream takes a destroyed one's address, as it may with the driver. */
static int valid_stream(CUstream s) { return s != NULL && s->magic == FAKE_STREAM_MAGIC; }
static int valid_event(CUevent e) { return e != NULL && e->magic == FAKE_EVENT_MAGIC; }

static void *stream_main(void *arg) {
  CUstream s = (CUstream)arg;
  pthread_mutex_lock(&fake_stream_lock);
  for (;;) {
    struct fake_item *item = s->head;
    if (item == NULL) {
      if (s->stopping) break;
      pthread_cond_wait(&fake_stream_changed, &fake_stream_lock);
      continue;
    }
    if (item->op == FAKE_WAIT && item->event->done < item->generation) {
      pthread_cond_wait(&fake_stream_changed, &fake_stream_lock);
      continue;
    }
    if (item->op == FAKE_COPY || item->op == FAKE_HOST_FN) {
      pthread_mutex_unlock(&fake_stream_lock);
      if (item->op == FAKE_COPY) memcpy(item->dst, item->src, item->bytes);
      else item->fn(item->user_data);
      pthread_mutex_lock(&fake_stream_lock);
    } else if (item->op == FAKE_MARK && item->event->done < item->generation) {
      item->event->done = item->generation;
    }
    if (item->event != NULL) event_release_locked(item->event);
    s->head = item->next;
    if (s->head == NULL) s->tail = NULL;
    free(item);
    pthread_cond_broadcast(&fake_stream_changed);
  }
  pthread_mutex_unlock(&fake_stream_lock);
  return NULL;
}

/* Creates a stream on `device`; no context needed. */
static CUresult stream_create(CUstream *out, int device) {
  CUstream s;
  pthread_mutex_lock(&fake_stream_lock);
  s = fake_spare_streams;
  if (s != NULL) fake_spare_streams = s->next;
  pthread_mutex_unlock(&fake_stream_lock);
  if (s != NULL) memset(s, 0, sizeof *s);
  else s = (CUstream)calloc(1, sizeof *s);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  s->magic = FAKE_STREAM_MAGIC;
  s->device = device;
  if (pthread_create(&s->worker, NULL, stream_main, s) != 0) {
    free(s);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&fake_stream_lock);
  ++fake_live_streams;
  s->id = ++fake_last_stream_id;
  s->next = fake_streams;
  fake_streams = s;
  pthread_mutex_unlock(&fake_stream_lock);
  *out = s;
  return CUDA_SUCCESS;
}

/* Runs what is queued, then stops the worker and frees the stream. (The real
   driver returns at once and finishes the work later.) */
static CUresult stream_destroy(CUstream s) {
  if (!valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_stream_lock);
  s->stopping = 1;
  s->magic = 0;
  pthread_cond_broadcast(&fake_stream_changed);
  pthread_mutex_unlock(&fake_stream_lock);
  pthread_join(s->worker, NULL);
  pthread_mutex_lock(&fake_stream_lock);
  --fake_live_streams;
  {
    struct CUstream_st **link = &fake_streams;
    while (*link != s) link = &(*link)->next;
    *link = s->next;
  }
  s->next = fake_spare_streams; /* magic stays 0: refused until reused */
  fake_spare_streams = s;
  pthread_mutex_unlock(&fake_stream_lock);
  return CUDA_SUCCESS;
}

/* Blocks until `e` has reached `generation`; the caller holds the lock. */
static void event_wait_locked(CUevent e, unsigned long generation) {
  while (e->done < generation) pthread_cond_wait(&fake_stream_changed, &fake_stream_lock);
}

/* Queues `item` (malloc'ed by the caller) on `s`; takes the event reference
   and, for a marker, the next generation. */
static void enqueue_locked(CUstream s, struct fake_item *item) {
  item->next = NULL;
  if (item->event != NULL) {
    ++item->event->refs;
    if (item->op == FAKE_MARK) item->generation = ++item->event->recorded;
  }
  if (s->tail != NULL) s->tail->next = item;
  else s->head = item;
  s->tail = item;
  pthread_cond_broadcast(&fake_stream_changed);
}

/* The work of one call: on a stream it is queued, on the legacy default
   stream (NULL) it runs now. */
static CUresult submit(CUstream s, enum fake_op op, void *dst, const void *src, size_t bytes,
                       CUhostFn fn, void *user_data, CUevent e) {
  struct fake_item *item;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (s != NULL && !valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (e != NULL && !valid_event(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (s == NULL) {
    switch (op) {
      case FAKE_COPY: memcpy(dst, src, bytes); break;
      case FAKE_HOST_FN: fn(user_data); break;
      case FAKE_MARK:
        pthread_mutex_lock(&fake_stream_lock);
        e->done = ++e->recorded;
        pthread_cond_broadcast(&fake_stream_changed);
        pthread_mutex_unlock(&fake_stream_lock);
        break;
      case FAKE_WAIT:
        pthread_mutex_lock(&fake_stream_lock);
        event_wait_locked(e, e->recorded);
        pthread_mutex_unlock(&fake_stream_lock);
        break;
    }
    return CUDA_SUCCESS;
  }
  item = (struct fake_item *)calloc(1, sizeof *item);
  if (item == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  item->op = op;
  item->dst = dst;
  item->src = src;
  item->bytes = bytes;
  item->fn = fn;
  item->user_data = user_data;
  item->event = e;
  pthread_mutex_lock(&fake_stream_lock);
  if (op == FAKE_WAIT) item->generation = e->recorded;
  enqueue_locked(s, item);
  pthread_mutex_unlock(&fake_stream_lock);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  int device = current_device();
  if (stream == NULL || (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  return stream_create(stream, device);
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  return stream_destroy(stream);
}

/* The legacy default stream is number 0; a destroyed stream's handle is
   refused (unless a new stream has its address: then the number is the new
   stream's, as with the real driver). */
CUresult cuStreamGetId(CUstream stream, unsigned long long *id) {
  if (id == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (stream == NULL) {
    *id = 0;
    return CUDA_SUCCESS;
  }
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  *id = stream->id;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream == NULL) return CUDA_SUCCESS;
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_stream_lock);
  while (stream->head != NULL) pthread_cond_wait(&fake_stream_changed, &fake_stream_lock);
  pthread_mutex_unlock(&fake_stream_lock);
  return CUDA_SUCCESS;
}

/* Waits until every stream of the current context's device has run what is
   queued on it. */
CUresult cuCtxSynchronize(void) {
  int device = current_device();
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_stream_lock);
  for (;;) {
    struct CUstream_st *s = fake_streams;
    while (s != NULL && (s->device != device || s->head == NULL)) s = s->next;
    if (s == NULL) break;
    pthread_cond_wait(&fake_stream_changed, &fake_stream_lock);
  }
  pthread_mutex_unlock(&fake_stream_lock);
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream stream) {
  CUresult r;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream == NULL) return CUDA_SUCCESS;
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_stream_lock);
  r = stream->head == NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&fake_stream_lock);
  return r;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  if (flags != 0 || event == NULL) return CUDA_ERROR_INVALID_VALUE;
  return submit(stream, FAKE_WAIT, NULL, NULL, 0, NULL, NULL, event);
}

/* Unified addressing: the direction comes from the addresses; hidden
   device memory is reached through its shadow. */
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (dst == 0 || src == 0) return CUDA_ERROR_INVALID_VALUE;
  /* A copy that crosses from one piece of hidden memory into the next
     (adjacent mappings of a reserved range) goes as one copy per piece. */
  while (bytes != 0) {
    size_t to_avail, from_avail, n = bytes;
    void *to = host_view((uintptr_t)dst, &to_avail);
    void *from = host_view((uintptr_t)src, &from_avail);
    CUresult r;
    if (to_avail < n) n = to_avail;
    if (from_avail < n) n = from_avail;
    r = submit(stream, FAKE_COPY, to, from, n, NULL, NULL, NULL);
    if (r != CUDA_SUCCESS) return r;
    dst += n;
    src += n;
    bytes -= n;
  }
  return CUDA_SUCCESS;
}

/* ---- peer access, address ranges and interprocess memory ---- */

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
  if (can == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!checked_device(dev) || !checked_device(peer)) return CUDA_ERROR_INVALID_DEVICE;
  *can = dev != peer && !fake_no_peer;
  return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  int device = current_device(), other;
  CUresult r = CUDA_SUCCESS;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || peer == NULL || peer < fake_contexts || peer >= fake_contexts + fake_devices ||
      peer->device == device)
    return CUDA_ERROR_INVALID_CONTEXT;
  other = peer->device;
  if (fake_no_peer) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  pthread_mutex_lock(&fake_lock);
  if (fake_peer_enabled[device][other]) r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  fake_peer_enabled[device][other] = 1;
  pthread_mutex_unlock(&fake_lock);
  return r;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr ptr) {
  struct allocation *a;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  a = allocation_holding((uintptr_t)ptr, 1);
  if (a != NULL && a->device != FAKE_HOST) {
    if (base != NULL) *base = (CUdeviceptr)(uintptr_t)a->p;
    if (size != NULL) *size = a->bytes;
  }
  pthread_mutex_unlock(&fake_lock);
  return a != NULL && a->device != FAKE_HOST ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* What a fake handle holds (CU_IPC_HANDLE_SIZE bytes). */
struct fake_ipc {
  unsigned magic;
  int fd;
  long pid;
  size_t bytes;
};
#define FAKE_IPC_MAGIC 0x1bcfa4e5u

CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr ptr) {
  struct allocation *a;
  struct fake_ipc h;
  CUresult r = CUDA_SUCCESS;
  if (handle == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  memset(&h, 0, sizeof h);
  pthread_mutex_lock(&fake_lock);
  a = allocation_holding((uintptr_t)ptr, 1);
  if (a == NULL || a->device == FAKE_HOST || a->imported || (uintptr_t)a->p != (uintptr_t)ptr) {
    r = CUDA_ERROR_INVALID_VALUE; /* not the base of device memory of this process */
  } else if (a->fd < 0) {
    r = CUDA_ERROR_NOT_SUPPORTED; /* only hidden memory has a memfd to share */
  } else {
    h.magic = FAKE_IPC_MAGIC;
    h.fd = a->fd;
    h.pid = (long)getpid();
    h.bytes = a->bytes;
  }
  pthread_mutex_unlock(&fake_lock);
  if (r != CUDA_SUCCESS) return r;
  memset(handle, 0, sizeof *handle);
  memcpy(handle->reserved, &h, sizeof h);
  return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *ptr, CUipcMemHandle handle, unsigned int flags) {
  struct fake_ipc h;
  struct allocation *a;
  char path[64];
  struct stat st;
  int device = current_device(), fd;
  if (ptr == NULL || flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  memcpy(&h, handle.reserved, sizeof h);
  if (h.magic != FAKE_IPC_MAGIC || h.bytes == 0) return CUDA_ERROR_INVALID_HANDLE;
  /* The driver refuses a handle in the process that exported it. */
  if (h.pid == (long)getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  for (a = fake_live; a != NULL; a = a->next) {
    if (a->imported && a->owner_pid == h.pid && a->owner_fd == h.fd && a->device == device) {
      ++a->imported; /* opened again by this context: the same address */
      *ptr = (CUdeviceptr)(uintptr_t)a->p;
      pthread_mutex_unlock(&fake_lock);
      return CUDA_SUCCESS;
    }
  }
  pthread_mutex_unlock(&fake_lock);
  snprintf(path, sizeof path, "/proc/%ld/fd/%d", h.pid, h.fd);
  fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE; /* the exporter or its memory is gone */
  if (fstat(fd, &st) != 0 || (size_t)st.st_size < h.bytes) {
    close(fd);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  a = (struct allocation *)calloc(1, sizeof *a);
  if (a == NULL) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->p = map_hidden(fd, h.bytes, &a->shadow);
  close(fd); /* the mappings keep the memory */
  if (a->p == NULL) {
    free(a);
    return CUDA_ERROR_MAP_FAILED;
  }
  a->bytes = h.bytes;
  a->device = device;
  a->fd = -1;
  a->imported = 1;
  a->owner_pid = h.pid;
  a->owner_fd = h.fd;
  pthread_mutex_lock(&fake_lock);
  a->next = fake_live;
  fake_live = a;
  ++fake_live_imports;
  pthread_mutex_unlock(&fake_lock);
  *ptr = (CUdeviceptr)(uintptr_t)a->p;
  return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr ptr) {
  struct allocation **link, *a = NULL;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&fake_lock);
  for (link = &fake_live; *link != NULL; link = &(*link)->next) {
    if ((*link)->imported && (uintptr_t)(*link)->p == (uintptr_t)ptr) {
      a = *link;
      if (--a->imported == 0) {
        *link = a->next;
        --fake_live_imports;
      } else {
        a = (struct allocation *)1; /* still open */
      }
      break;
    }
  }
  pthread_mutex_unlock(&fake_lock);
  if (a == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (a != (struct allocation *)1) {
    unmap_allocation(a);
    free(a);
  }
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *user_data) {
  if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  return submit(stream, FAKE_HOST_FN, NULL, NULL, 0, fn, user_data, NULL);
}

CUresult cuEventCreate(CUevent *event, unsigned int flags) {
  CUevent e;
  int device = current_device();
  if (event == NULL || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                            CU_EVENT_INTERPROCESS)))
    return CUDA_ERROR_INVALID_VALUE;
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  e = (CUevent)calloc(1, sizeof *e);
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = FAKE_EVENT_MAGIC;
  e->device = device;
  e->refs = 1;
  pthread_mutex_lock(&fake_stream_lock);
  ++fake_live_events;
  pthread_mutex_unlock(&fake_stream_lock);
  *event = e;
  return CUDA_SUCCESS;
}

/* Work still queued keeps the event alive until it has run. */
CUresult cuEventDestroy_v2(CUevent event) {
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (!valid_event(event)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_stream_lock);
  event->magic = 0;
  event_release_locked(event);
  pthread_mutex_unlock(&fake_stream_lock);
  return CUDA_SUCCESS;
}

/* Like the real driver: the event and the stream must share a context. */
CUresult cuEventRecord(CUevent event, CUstream stream) {
  int device = current_device();
  if (!valid_event(event)) return CUDA_ERROR_INVALID_HANDLE;
  if (stream != NULL && valid_stream(stream)) device = stream->device;
  if (device >= 0 && device != event->device) return CUDA_ERROR_INVALID_HANDLE;
  return submit(stream, FAKE_MARK, NULL, NULL, 0, NULL, NULL, event);
}

CUresult cuEventQuery(CUevent event) {
  CUresult r;
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (!valid_event(event)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_stream_lock);
  r = event->done >= event->recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&fake_stream_lock);
  return r;
}

CUresult cuEventSynchronize(CUevent event) {
  if (current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (!valid_event(event)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_stream_lock);
  event_wait_locked(event, event->recorded);
  pthread_mutex_unlock(&fake_stream_lock);
  return CUDA_SUCCESS;
}

static const struct {
  CUresult code;
  const char *name;
  const char *text;
} fake_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

CUresult cuGetErrorName(CUresult error, const char **name) {
  size_t i;
  if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; ++i) {
    if (fake_errors[i].code == error) {
      *name = fake_errors[i].name;
      return CUDA_SUCCESS;
    }
  }
  *name = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  size_t i;
  if (text == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; ++i) {
    if (fake_errors[i].code == error) {
      *text = fake_errors[i].text;
      return CUDA_SUCCESS;
    }
  }
  *text = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- for tests: a look inside (not part of the CUDA API) ---- */

/* Depth of this thread's context stack. */
int fake_cuda_context_depth(void) { return fake_depth; }

/* Device of this thread's current context, or -1. */
int fake_cuda_current_device(void) { return current_device(); }

/* Outstanding cuDevicePrimaryCtxRetain calls on a device. */
int fake_cuda_retain_count(int device) {
  int n;
  if (device < 0 || device >= FAKE_MAX_DEVICES) return -1;
  pthread_mutex_lock(&fake_lock);
  n = fake_contexts[device].retains;
  pthread_mutex_unlock(&fake_lock);
  return n;
}

/* Another process's memory opened here (cuIpcOpenMemHandle), not closed. */
long fake_cuda_live_imports(void) {
  long n;
  pthread_mutex_lock(&fake_lock);
  n = fake_live_imports;
  pthread_mutex_unlock(&fake_lock);
  return n;
}

/* Whether cuCtxEnablePeerAccess let `device` address `peer`'s memory. */
int fake_cuda_peer_enabled(int device, int peer) {
  int n;
  if (device < 0 || device >= FAKE_MAX_DEVICES || peer < 0 || peer >= FAKE_MAX_DEVICES) return -1;
  pthread_mutex_lock(&fake_lock);
  n = fake_peer_enabled[device][peer];
  pthread_mutex_unlock(&fake_lock);
  return n;
}

/* Live allocations of every kind. */
long fake_cuda_live_allocations(void) {
  long n;
  pthread_mutex_lock(&fake_lock);
  n = fake_live_count;
  pthread_mutex_unlock(&fake_lock);
  return n;
}

/* Bytes in use on a device (rounded to 256), or of pinned memory for -1. */
size_t fake_cuda_used(int device) {
  size_t n = 0;
  pthread_mutex_lock(&fake_lock);
  if (device == FAKE_HOST) n = fake_host_used;
  else if (device >= 0 && device < FAKE_MAX_DEVICES) n = fake_used_bytes[device];
  pthread_mutex_unlock(&fake_lock);
  return n;
}

/* Virtual memory: live reservations, physical allocations (cuMemCreate
   memory not yet freed: mapped or not released; also counted in
   fake_cuda_live_allocations), mappings, and successful cuMemMap calls
   since start. All 0 in the library without virtual memory. */
long fake_cuda_live_reservations(void) {
  long n = 0;
#ifndef FAKE_CUDA_WITHOUT_VMM
  pthread_mutex_lock(&fake_lock);
  n = fake_live_reservations;
  pthread_mutex_unlock(&fake_lock);
#endif
  return n;
}

long fake_cuda_live_handles(void) {
  long n = 0;
#ifndef FAKE_CUDA_WITHOUT_VMM
  pthread_mutex_lock(&fake_lock);
  n = fake_live_handles;
  pthread_mutex_unlock(&fake_lock);
#endif
  return n;
}

long fake_cuda_live_mappings(void) {
  long n = 0;
#ifndef FAKE_CUDA_WITHOUT_VMM
  pthread_mutex_lock(&fake_lock);
  n = fake_live_mappings;
  pthread_mutex_unlock(&fake_lock);
#endif
  return n;
}

long fake_cuda_map_calls(void) {
  long n = 0;
#ifndef FAKE_CUDA_WITHOUT_VMM
  pthread_mutex_lock(&fake_lock);
  n = fake_map_calls;
  pthread_mutex_unlock(&fake_lock);
#endif
  return n;
}

/* The next call of `call` ("cuMemCreate", "cuMemMap", "cuMemSetAccess" or
   "cuMemAddressReserve") after `skip` successful ones fails with `result`,
   once. NULL cancels. */
void fake_cuda_fail_call(const char *call, int skip, int result) {
#ifdef FAKE_CUDA_WITHOUT_VMM
  (void)call;
  (void)skip;
  (void)result;
#else
  pthread_mutex_lock(&fake_lock);
  if (call == NULL) {
    fake_fail_call[0] = '\0';
  } else {
    snprintf(fake_fail_call, sizeof fake_fail_call, "%s", call);
    fake_fail_skip = skip;
    fake_fail_result = (CUresult)result;
  }
  pthread_mutex_unlock(&fake_lock);
#endif
}

/* Streams and events that are alive (created, not yet destroyed; an event
   destroyed with work pending stays alive until that work has run). */
long fake_cuda_live_streams(void) {
  long n;
  pthread_mutex_lock(&fake_stream_lock);
  n = fake_live_streams;
  pthread_mutex_unlock(&fake_stream_lock);
  return n;
}

long fake_cuda_live_events(void) {
  long n;
  pthread_mutex_lock(&fake_stream_lock);
  n = fake_live_events;
  pthread_mutex_unlock(&fake_stream_lock);
  return n;
}

/* A stream of a device made as a caller's own code would, for
   dao_stream_wrap(); NULL on failure. Needs no current context. */
CUstream fake_cuda_stream_create(int device) {
  CUstream s = NULL;
  if (!checked_device(device) || stream_create(&s, device) != CUDA_SUCCESS) return NULL;
  return s;
}

/* Destroys a stream of fake_cuda_stream_create(); 0 on success. */
int fake_cuda_stream_destroy(CUstream stream) { return (int)stream_destroy(stream); }
