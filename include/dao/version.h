/**
 * @file version.h
 * @brief Compile-time and run-time version of libdao.
 *
 * Compare ::DAO_VERSION_NUMBER (the header you compiled against) with
 * dao_version_number() (the library loaded at run time) to detect a mismatch.
 * The SONAME of the shared library is `libdao.so.<DAO_VERSION_MAJOR>`.
 */
#ifndef DAO_VERSION_H
#define DAO_VERSION_H

#include "export.h"

/** Major version: incremented on an ABI break (and the SONAME with it). */
#define DAO_VERSION_MAJOR 0
/** Minor version: incremented when API is added compatibly. */
#define DAO_VERSION_MINOR 1
/** Patch version: incremented for fixes only. */
#define DAO_VERSION_PATCH 0

/** The version as one number: MAJOR*10000 + MINOR*100 + PATCH. */
#define DAO_VERSION_NUMBER (DAO_VERSION_MAJOR * 10000 + DAO_VERSION_MINOR * 100 + DAO_VERSION_PATCH)

/** @cond DAO_INTERNAL */
#define DAO_VERSION_STR_(x) #x
#define DAO_VERSION_STR(x) DAO_VERSION_STR_(x)
/** @endcond */

/** The version as a string, "MAJOR.MINOR.PATCH". */
#define DAO_VERSION_STRING           \
  DAO_VERSION_STR(DAO_VERSION_MAJOR) \
  "." DAO_VERSION_STR(DAO_VERSION_MINOR) "." DAO_VERSION_STR(DAO_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Version of the library loaded at run time.
 * @return MAJOR*10000 + MINOR*100 + PATCH, comparable with ::DAO_VERSION_NUMBER.
 * @par Thread safety
 * Safe to call from any thread at any time.
 */
DAO_API unsigned dao_version_number(void);

/**
 * @brief Version string of the library loaded at run time.
 * @return A static string "MAJOR.MINOR.PATCH"; never NULL, never freed.
 * @par Thread safety
 * Safe to call from any thread at any time.
 */
DAO_API const char *dao_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* DAO_VERSION_H */
