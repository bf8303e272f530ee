/*
 * Helpers shared by the subcommands of the `dao` tool (tools/dao_*.c): the
 * program name, command-line errors, JSON strings, byte counts and the
 * progress line on stderr. C99, no libdao internals.
 */
#ifndef DAO_TOOL_H
#define DAO_TOOL_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Exit status for a bad command line or bad input (a missing, truncated or
    foreign file). */
#define DAO_TOOL_EXIT_USAGE 2

/** "dao" */
extern const char *dao_tool_program;

/** Prints "dao: <what> '<arg>'" and "Try '<help>' ..." on stderr; returns 2. */
int dao_tool_bad_usage(const char *what, const char *arg, const char *help);

/** Prints "dao: <command>: <file>: <printf message>" on stderr; returns 2. */
int dao_tool_bad_input(const char *command, const char *file, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** 1 for "-h" and "--help". */
int dao_tool_is_help(const char *arg);

/** Writes `s` as a JSON string (quotes included), escaping what JSON needs
    and "</" (so that it can sit inside an HTML script element). */
void dao_tool_json_string(FILE *out, const char *s);
/** The same for `n` bytes that need not end with a NUL. */
void dao_tool_json_string_n(FILE *out, const char *s, size_t n);

/** "512 B", "1.5 MiB", "125.7 GiB". */
void dao_tool_format_bytes(double bytes, char *out, size_t out_size);

/** Seconds of a monotonic clock. */
double dao_tool_now(void);

/** Progress on stderr for long work: at most once a second, and only after
    the work has run for a second; "\r"-updated on a terminal, one line per
    report otherwise. `done` of `total` units (total 0: unknown). */
typedef struct dao_tool_progress {
  const char *what; /* "convert: reading input.csv" */
  double start;
  double last;
  int shown;
} dao_tool_progress;

void dao_tool_progress_start(dao_tool_progress *p, const char *what);
void dao_tool_progress_update(dao_tool_progress *p, double done, double total, const char *unit);
/** Ends the progress line if one was shown. */
void dao_tool_progress_end(dao_tool_progress *p);

/** malloc/realloc that exit with status 1 and a message when out of memory. */
void *dao_tool_xmalloc(size_t n);
void *dao_tool_xrealloc(void *p, size_t n);

/** Reads a whole file into *data (NUL-terminated, freed by the caller).
    Returns 0, or -1 with a message (strerror) in `error`. */
int dao_tool_read_file(const char *path, char **data, size_t *len, char *error, size_t error_size);

/** A map from 64-bit keys to 64-bit values (open addressing). */
typedef struct dao_tool_map {
  unsigned long long *keys, *vals;
  unsigned char *used;
  size_t cap, n;
} dao_tool_map;

void dao_tool_map_init(dao_tool_map *m);
void dao_tool_map_free(dao_tool_map *m);
/** 1 and *val when `key` is there. */
int dao_tool_map_get(const dao_tool_map *m, unsigned long long key, unsigned long long *val);
void dao_tool_map_put(dao_tool_map *m, unsigned long long key, unsigned long long val);
/** 1 when `key` was there (and is removed). */
int dao_tool_map_remove(dao_tool_map *m, unsigned long long key);

/** FNV-1a of `n` bytes. */
unsigned long long dao_tool_hash(const void *data, size_t n);

/* The subcommands: each in its own file (tools/dao_<command>.c). */
int dao_command_convert(int argc, char **argv);
void dao_usage_convert(FILE *out);
int dao_command_view(int argc, char **argv);
void dao_usage_view(FILE *out);

#ifdef __cplusplus
}
#endif

#endif
