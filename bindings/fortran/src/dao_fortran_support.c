/* The two things the Fortran layer needs that Fortran 2008 has no portable,
 * thread-safe way to express (no mutex, no thread-local storage without
 * OpenMP or coarrays):
 *
 * - the status and message of the last call of the Fortran layer on the
 *   calling thread (dao_last_status() / dao_last_message()), thread-local as
 *   dao_last_error() is;
 * - the registry of arrays handed out by dao_allocate(): their address, size
 *   in bytes and place, so that dao_deallocate() can give each one back to
 *   the place it came from (dao_free() needs the place) and can refuse a
 *   pointer that is foreign, already freed or only part of an array.
 *
 * Everything here is internal to libdao_fortran (hidden visibility); the
 * module `dao` declares these functions in interfaces of its own.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dao.h>

#define DAOF_INTERNAL __attribute__((visibility("hidden")))

/* --- last status and message of the Fortran layer, per thread ---
 * A fixed buffer, as the C library's own: recording an error must not
 * allocate (it may report a failed allocation). */
enum { DAOF_MESSAGE_CAPACITY = 1024 };
static _Thread_local int daof_status = DAO_OK;
static _Thread_local char daof_message[DAOF_MESSAGE_CAPACITY];

DAOF_INTERNAL void daof_set_last(int status, const char *message, size_t length) {
  daof_status = status;
  if (length >= DAOF_MESSAGE_CAPACITY) length = DAOF_MESSAGE_CAPACITY - 1;
  if (message != NULL && length > 0) memcpy(daof_message, message, length);
  daof_message[message != NULL ? length : 0] = '\0';
}

/* A failure of a C call: its status and dao_last_error(), which the C call
 * has just set on this thread. */
DAOF_INTERNAL void daof_set_last_from_c(int status) {
  const char *message = dao_last_error();
  daof_set_last(status, message, strlen(message));
}

DAOF_INTERNAL int daof_last_status(void) { return daof_status; }

DAOF_INTERNAL const char *daof_last_message(void) { return daof_message; }

/* --- registry of dao_allocate() arrays ---
 * Open addressing with linear probing over a power-of-two table, keyed by
 * address; deletion by backward shift, so there are no tombstones. One mutex:
 * an insert or a removal is a few memory accesses next to dao_alloc() /
 * dao_free(). */
typedef struct daof_entry {
  uintptr_t address; /* 0: empty slot */
  size_t bytes;
  dao_place place;
} daof_entry;

static pthread_mutex_t daof_lock = PTHREAD_MUTEX_INITIALIZER;
static daof_entry *daof_table = NULL;
static size_t daof_capacity = 0; /* slots, a power of two, or 0 */
static size_t daof_count = 0;

static size_t daof_slot(uintptr_t address, size_t capacity) {
  /* Addresses are 256-byte aligned: drop the low bits, then mix. */
  uint64_t h = (uint64_t)(address >> 8) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 32) & (capacity - 1);
}

/* Grows the table to twice its size (at least 64 slots). 0 on success. */
static int daof_grow(void) {
  size_t capacity = daof_capacity != 0 ? daof_capacity * 2 : 64;
  daof_entry *table = calloc(capacity, sizeof *table);
  size_t i;
  if (table == NULL) return -1;
  for (i = 0; i < daof_capacity; ++i) {
    if (daof_table[i].address != 0) {
      size_t j = daof_slot(daof_table[i].address, capacity);
      while (table[j].address != 0) j = (j + 1) & (capacity - 1);
      table[j] = daof_table[i];
    }
  }
  free(daof_table);
  daof_table = table;
  daof_capacity = capacity;
  return 0;
}

/* Records an array. DAO_OK, or DAO_ERR_OUT_OF_MEMORY if the table could
 * not grow. An entry for the same address is replaced: that array was freed
 * behind the registry's back (dao_free() on c_loc of it) and the address has
 * been handed out again. */
DAOF_INTERNAL int daof_registry_add(void *ptr, size_t bytes, dao_place place) {
  const uintptr_t address = (uintptr_t)ptr;
  size_t i;
  if (address == 0) return DAO_ERR_INVALID_POINTER;
  pthread_mutex_lock(&daof_lock);
  if ((daof_count + 1) * 4 > daof_capacity * 3 && daof_grow() != 0) {
    pthread_mutex_unlock(&daof_lock);
    return DAO_ERR_OUT_OF_MEMORY;
  }
  i = daof_slot(address, daof_capacity);
  while (daof_table[i].address != 0 && daof_table[i].address != address) {
    i = (i + 1) & (daof_capacity - 1);
  }
  if (daof_table[i].address != address) ++daof_count;
  daof_table[i].address = address;
  daof_table[i].bytes = bytes;
  daof_table[i].place = place;
  pthread_mutex_unlock(&daof_lock);
  return DAO_OK;
}

/* Removes the array at ptr if it is recorded with exactly `bytes`, and gives
 * its place. DAO_OK (removed), DAO_ERR_NOT_FOUND (no array starts there), or
 * DAO_ERR_INVALID_ARGUMENT (one starts there with another size, written to
 * *recorded_bytes; nothing removed). */
DAOF_INTERNAL int daof_registry_remove(void *ptr, size_t bytes, dao_place *place,
                                       size_t *recorded_bytes) {
  const uintptr_t address = (uintptr_t)ptr;
  size_t i, j;
  int status = DAO_ERR_NOT_FOUND;
  pthread_mutex_lock(&daof_lock);
  if (daof_capacity != 0 && address != 0) {
    i = daof_slot(address, daof_capacity);
    while (daof_table[i].address != 0 && daof_table[i].address != address) {
      i = (i + 1) & (daof_capacity - 1);
    }
    if (daof_table[i].address == address) {
      *recorded_bytes = daof_table[i].bytes;
      if (daof_table[i].bytes != bytes) {
        status = DAO_ERR_INVALID_ARGUMENT;
      } else {
        *place = daof_table[i].place;
        status = DAO_OK;
        /* Backward-shift deletion: move later entries of the probe run into
         * the hole when their home slot does not lie between hole and them. */
        daof_table[i].address = 0;
        j = i;
        for (;;) {
          size_t home;
          j = (j + 1) & (daof_capacity - 1);
          if (daof_table[j].address == 0) break;
          home = daof_slot(daof_table[j].address, daof_capacity);
          if (((j - home) & (daof_capacity - 1)) >= ((j - i) & (daof_capacity - 1))) {
            daof_table[i] = daof_table[j];
            daof_table[j].address = 0;
            i = j;
          }
        }
        --daof_count;
      }
    }
  }
  pthread_mutex_unlock(&daof_lock);
  return status;
}

/* Number of arrays recorded (for tests). */
DAOF_INTERNAL size_t daof_registry_count(void) {
  size_t count;
  pthread_mutex_lock(&daof_lock);
  count = daof_count;
  pthread_mutex_unlock(&daof_lock);
  return count;
}
