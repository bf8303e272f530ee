/**
 * @file status.h
 * @brief Status codes returned by every fallible libdao function, and the
 *        thread-local message of the last failure.
 *
 * The numbers are part of the ABI: they never change and are never reused.
 * A retired code keeps its slot. Bindings accept codes they do not know as
 * plain numbers.
 */
#ifndef DAO_STATUS_H
#define DAO_STATUS_H

#include "export.h"

/**
 * @brief The one list of status codes: X(NAME, VALUE, DESCRIPTION).
 *
 * Everything that needs the list (the enum, dao_status_string(), the
 * bindings' tables) is generated from it, so they cannot drift apart.
 */
#define DAO_STATUS_LIST(X)                                                   \
  X(DAO_OK, 0, "success")                                                    \
  X(DAO_ERR_INVALID_ARGUMENT, 1, "invalid argument")                         \
  X(DAO_ERR_OUT_OF_MEMORY, 2, "out of memory")                               \
  X(DAO_ERR_INVALID_POINTER, 3, "invalid pointer")                           \
  X(DAO_ERR_UNSUPPORTED, 4, "operation not supported")                       \
  X(DAO_ERR_NO_DEVICE, 5, "no such device")                                  \
  X(DAO_ERR_TIMEOUT, 6, "timed out")                                         \
  X(DAO_ERR_CLOSED, 7, "closed")                                             \
  X(DAO_ERR_BACKEND, 8, "backend (driver or operating system) error")        \
  X(DAO_ERR_INTERNAL, 9, "internal error")                                   \
  X(DAO_ERR_INVALID_STATE, 10, "operation not allowed in the current state") \
  X(DAO_ERR_BUSY, 11, "resource still in use")                               \
  X(DAO_ERR_NOT_FOUND, 12, "not found")

/**
 * @brief Result of a libdao call. ::DAO_OK (0) is success; anything else is
 *        a failure whose details dao_last_error() gives.
 */
typedef enum dao_status {
/** @cond DAO_INTERNAL */
#define DAO_STATUS_ENUM_ENTRY_(name, value, text) name = value,
  DAO_STATUS_LIST(DAO_STATUS_ENUM_ENTRY_)
#undef DAO_STATUS_ENUM_ENTRY_
  /** @endcond */
  /** One past the largest code of this version (not a status). */
  DAO_STATUS_END_ = 13
} dao_status;

/**
 * @var DAO_OK
 * Success.
 * @var DAO_ERR_INVALID_ARGUMENT
 * An argument is NULL where it must not be, out of range, or malformed
 * (for example a config string with an unknown key), or a handle argument
 * is not a live handle of its type. Every handle starts with a magic value
 * that each call checks, so a handle of another type, a pointer to
 * something else, or a destroyed handle whose memory still holds the
 * cleared magic is refused with this status (the message gives the
 * pointer) rather than used. Nothing was changed.
 * @var DAO_ERR_OUT_OF_MEMORY
 * The place, the allocator's cap, or the system has no room for the request.
 * The message tells the size asked for and what the place holds.
 * @var DAO_ERR_INVALID_POINTER
 * A pointer that is not live in this allocator or place: foreign, already
 * freed, or interior. Nothing was changed.
 * @var DAO_ERR_UNSUPPORTED
 * The operation exists but not for this place, strategy or build.
 * @var DAO_ERR_NO_DEVICE
 * The place names a device that does not exist on this machine; the message
 * says why (for example no NVIDIA driver).
 * @var DAO_ERR_TIMEOUT
 * A blocking call ran out of time.
 * @var DAO_ERR_CLOSED
 * The object was closed.
 * @var DAO_ERR_BACKEND
 * The driver or the operating system reported an error; the message holds
 * its name and text.
 * @var DAO_ERR_INTERNAL
 * A bug in libdao. Please report it with the message.
 * @var DAO_ERR_INVALID_STATE
 * The call is not allowed now (for example configuring simulated devices
 * after they are in use).
 * @var DAO_ERR_BUSY
 * The object is still in use (for example destroying an allocator that has
 * live blocks). Nothing was changed.
 * @var DAO_ERR_NOT_FOUND
 * A name or key that was looked up does not exist.
 */

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Short English name of a status, such as "out of memory".
 * @param status Any value, including ones this version does not know.
 * @return A static string; never NULL, never freed. Unknown values give
 *         "unknown status".
 * @par Thread safety
 * Safe to call from any thread at any time.
 */
DAO_API const char *dao_status_string(dao_status status);

/**
 * @brief Message of the last failed libdao call on the calling thread.
 *
 * Every function that returns a status other than ::DAO_OK sets it first.
 * Successful calls leave it unchanged, as errno does.
 * @return A thread-local string, "" if no call failed yet on this thread.
 *         It stays valid until the next failing libdao call on the same
 *         thread; copy it to keep it. Never NULL; do not free.
 * @par Thread safety
 * Safe from any thread; each thread sees only its own message.
 */
DAO_API const char *dao_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* DAO_STATUS_H */
