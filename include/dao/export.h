/**
 * @file export.h
 * @brief Symbol export macro for the libdao public API.
 *
 * libdao is built with hidden visibility; only declarations marked
 * ::DAO_API are exported from the shared library. A packager may predefine
 * DAO_API (for example to nothing when linking the static library into a
 * shared object of their own).
 */
#ifndef DAO_EXPORT_H
#define DAO_EXPORT_H

/**
 * @def DAO_API
 * @brief Marks a declaration as part of the exported libdao API.
 */
#ifndef DAO_API
#if defined(_WIN32)
#if defined(DAO_BUILDING_LIBRARY) && !defined(DAO_STATIC)
#define DAO_API __declspec(dllexport)
#elif !defined(DAO_STATIC)
#define DAO_API __declspec(dllimport)
#else
#define DAO_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define DAO_API __attribute__((visibility("default")))
#else
#define DAO_API
#endif
#endif

#endif /* DAO_EXPORT_H */
