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
 *
 * Like the real driver it keeps a per-thread stack of current contexts and
 * refuses memory calls without one, so a backend that forgets to push its
 * context fails here. The fake_cuda_* functions let a test look inside.
 *
 * Prototypes come from cuda.h, so the compiler checks every signature
 * against the real API (cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  struct allocation *next;
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static int fake_initialised;
static int fake_devices;
static size_t fake_capacity;
static size_t fake_host_capacity;
static size_t fake_fail_size;
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
    case 'K': case 'k': value <<= 10; break;
    case 'M': case 'm': value <<= 20; break;
    case 'G': case 'g': value <<= 30; break;
    default: break;
  }
  return (size_t)value;
}

static int checked_device(CUdevice dev) {
  return fake_initialised && dev >= 0 && dev < fake_devices;
}

/* The device of this thread's current context, or -1 without one. */
static int current_device(void) {
  return fake_depth > 0 ? fake_stack[fake_depth - 1]->device : -1;
}

static size_t round_up(size_t bytes) {
  return (bytes + FAKE_ALIGNMENT - 1) & ~(size_t)(FAKE_ALIGNMENT - 1);
}

/* Allocates `bytes` on `device` (or FAKE_HOST); the caller holds fake_lock. */
static CUresult fake_allocate(void **out, size_t bytes, int device) {
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
  a = (struct allocation *)malloc(sizeof *a);
  if (a == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  if (posix_memalign(&p, FAKE_ALIGNMENT, rounded) != 0) {
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

/* Frees p if it is live and of the right sort; the caller holds fake_lock. */
static CUresult fake_release(void *p, int host) {
  struct allocation **link = &fake_live;
  for (; *link != NULL; link = &(*link)->next) {
    struct allocation *a = *link;
    if (a->p != p) continue;
    if ((a->device == FAKE_HOST) != host) return CUDA_ERROR_INVALID_VALUE;
    if (a->device == FAKE_HOST)
      fake_host_used -= a->bytes;
    else
      fake_used_bytes[a->device] -= a->bytes;
    *link = a->next;
    --fake_live_count;
    free(a->p);
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
  if (fake_contexts[dev].retains > 0)
    --fake_contexts[dev].retains;
  else
    r = CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&fake_lock);
  return r;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  int valid;
  if (!fake_initialised) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  valid = ctx != NULL && ctx >= fake_contexts && ctx < fake_contexts + fake_devices &&
          ctx->retains > 0;
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
  r = fake_allocate(&p, bytes, device);
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
  if (device == FAKE_HOST)
    n = fake_host_used;
  else if (device >= 0 && device < FAKE_MAX_DEVICES)
    n = fake_used_bytes[device];
  pthread_mutex_unlock(&fake_lock);
  return n;
}
