/* Hostile numbers (issue 20): every numeric config key and every size
 * argument of the public API at 0, 1, the largest accepted value, just above
 * it, SIZE_MAX and past it, tiny and huge floats, NaN and infinities,
 * negative numbers and malformed spellings.
 *
 * Each case must end in one of two ways:
 *   - accepted, and the object works: it is created, a small allocation (or
 *     tensor, or buffer) is made, written and freed, and it is destroyed; an
 *     accepted config value reads back, through dao_allocator_info(), as the
 *     number that was written (a value that wrapped around reads back as
 *     another), and the effective config is accepted again;
 *   - refused with DAO_ERR_INVALID_ARGUMENT and a message that names the key
 *     or the argument, or with DAO_ERR_OUT_OF_MEMORY (sizes too large to
 *     satisfy) and a message.
 * Never an abort, a hang (each case has a watchdog), a wrong status, or a
 * sanitizer report: each case runs in a child process of its own, so a crash
 * or an ASan/UBSan report fails that case and the others still run. The
 * parent never calls libdao (a fork after libdao started threads would copy
 * its locks in any state).
 *
 * Coverage: the config keys are read from the library itself. A config with
 * an unknown key is refused with a message that lists the known keys
 * ("unknown key 'x'; known keys: a, b"), for every strategy of
 * strategy/strategy_list.h, for tiered pools and for recycle pools; the test
 * fails when a key it finds has no row in `key_rows` below (or a row names a
 * key the library does not know), so a new key cannot be added untested.
 *
 * Usage: test_hostile_numbers [SUBSTRING]  runs the cases whose label holds
 * SUBSTRING; HOSTILE_VERBOSE=1 prints every case's outcome. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dao.h>

#include "strategy/strategy_list.h"

#define MIB ((size_t)1 << 20)
#define SIM_BYTES (64 * MIB) /* DAO_SIM_DEVICES=2x64MiB (set by ctest) */
#define GROUP 64             /* cases per child process */
#define WATCHDOG_SECONDS 20  /* a case that runs longer hangs */

static int verbose;

/* ------------------------------------------------------------------------- */
/* the keys                                                                   */

typedef enum key_kind {
  K_SIZE,      /* parse_size: a number of bytes with an optional unit */
  K_DOUBLE,    /* a floating-point number */
  K_BOOL,      /* true/false */
  K_COUNT,     /* a whole number without unit */
  K_BANDWIDTH, /* bytes per second with a unit */
  K_SIZE_AUTO, /* "auto" or a size */
  K_FRAC_NONE, /* "none" or a fraction */
  K_WORD,      /* one of some names */
  K_TEXT       /* any text */
} key_kind;

#define MAX_EXTRA 12

/* One config key: its area (a strategy's name, "tiered" or "recycle"), its
 * kind, and values particular to it (largest accepted, just above, ...). */
typedef struct key_row {
  const char *area;
  const char *key;
  key_kind kind;
  const char *extra[MAX_EXTRA];
} key_row;

static const key_row key_rows[] = {
    {"buddy", "min_block", K_SIZE, {"8", "15", "16", "32", "1TiB", "9223372036854775808"}},
    {"buddy",
     "chunk_size",
     K_SIZE,
     {"1048577", "1MiB", "9223372036854775808", "4611686018427387904"}},
    {"buddy", "max_pool", K_SIZE, {"64MiB", "65MiB", "63MiB"}},
    {"buddy", "initial_pool", K_SIZE, {"64MiB", "65MiB", "63MiB"}},
    {"caching", "max_split_size", K_SIZE, {"20MiB", "20971521", "21MiB"}},
    {"caching",
     "max_split_size_mb",
     K_DOUBLE,
     {"17592186044415", "17592186044416", "20", "21", "21.5", "1e15", "1.7592186044415e13"}},
    {"caching",
     "roundup_power2_divisions",
     K_DOUBLE,
     {"64", "65", "128", "3", "4294967296", "4294967297", "1e19", "2.0000000000000004"}},
    {"caching", "garbage_collection_threshold", K_DOUBLE, {"0.9999999999999999", "0.5"}},
    {"caching", "memory_fraction", K_DOUBLE, {"1.0000000000000002", "0.9999999999999999"}},
    {"caching", "max_pool", K_SIZE, {"64MiB", "65MiB", "21MiB"}},
    {"caching", "expandable_segments", K_BOOL, {"true", "FALSE", "yes", "off", "01", "tru"}},
    {"caching",
     "reserve_slack",
     K_FRAC_NONE,
     {"1000", "1000.0000000000001", "none", "None", "nonee"}},
    {"caching",
     "reserve_headroom",
     K_FRAC_NONE,
     {"1000", "1000.0000000000001", "none", "None", "nonee"}},
    {"caching", "fast_reuse", K_BOOL, {"true", "FALSE", "yes", "off", "01", "tru"}},
    {"caching", "map_chunk", K_SIZE_AUTO, {"auto", "AUTO", "2MiB", "2097153", "64MiB", "65MiB"}},
    {"limit", "max_pool", K_SIZE, {"64MiB", "65MiB"}},
    {"limit", "memory_fraction", K_DOUBLE, {"1.0000000000000002", "0.9999999999999999"}},
    {"tiered", "policy", K_WORD, {"lru", "belady", "LRU", "lru1"}},
    {"tiered", "prefetch", K_COUNT, {"1000000", "1000001"}},
    {"tiered", "host_budget", K_SIZE, {"4KiB", "4095"}},
    {"tiered",
     "link_bandwidth",
     K_BANDWIDTH,
     {"0.9999999999999999", "1B/s", "16GB/s", "1e300TB/s", "1e308TB/s", "1e-300GB/s", "1e-12TB/s",
      "nanGB/s", "infGB/s", "-1GB/s", "1GB/", "1GB/ms"}},
    {"tiered",
     "pageable_to_device",
     K_BANDWIDTH,
     {"0.9999999999999999", "1B/s", "8.1GB/s", "1e308TB/s", "1e-300GB/s", "nanGB/s", "-1GB/s"}},
    {"tiered",
     "pageable_to_host",
     K_BANDWIDTH,
     {"0.9999999999999999", "1B/s", "11.9GB/s", "1e308TB/s", "1e-300GB/s", "infGB/s"}},
    {"tiered", "sim_host", K_WORD, {"pinned", "pageable", "Pinned", "pinnedx"}},
    {"tiered", "staging_buffers", K_COUNT, {"64", "65", "0", "1"}},
    {"tiered", "staging_chunk", K_SIZE, {"64KiB", "65535", "256MiB", "268435457"}},
    {"tiered",
     "idle_trim",
     K_WORD,
     {"1ms", "999us", "0.001s", "86400s", "86401s", "1440min", "1440.0001min", "off", "nans",
      "infs", "-0s", "1e-300s"}},
    {"tiered", "inline_copy", K_SIZE, {"0", "1", "256MiB", "268435457"}},
    {"recycle", "name", K_TEXT, {"x"}},
    {"recycle", "spin", K_COUNT, {"1073741824", "1073741825"}},
};
#define KEY_ROWS (sizeof key_rows / sizeof key_rows[0])

/* Every numeric key gets these. Values cannot hold ',' (the item separator). */
static const char *const common_values[] = {
    /* small, signs */
    "0", "1", "2", "-1", "-0", "+1", "4096", "1048576", "00", "-9223372036854775808",
    /* around SIZE_MAX and other limits */
    "4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
    "18446744073709551614", "18446744073709551615", "18446744073709551616",
    "340282366920938463463374607431768211456",
    "99999999999999999999999999999999999999999999999999999999999999999999999999999999",
    /* floats: tiny, huge, denormal, beyond double */
    "1e-300", "4.9e-324", "2.2250738585072014e-308", "1e-400", "1e300", "1.7976931348623157e308",
    "1e309", "-1e300", "-1e-300", "1.8446744073709552e19",
    /* NaN and infinities */
    "nan", "NaN", "-nan", "nan(0x1)", "inf", "-inf", "Infinity", "+inf",
    /* malformed spellings */
    "0x10", "0x1p3", "0x", "1.5", "0.5", ".5", "5.", ".", "1..5", "1e", "1e+", "12abc", "1 2",
    "--1", "-+1", "1-", "\xef\xbc\x91", "0b101", "1_000", "1'000",
    "\302\2401", /* a no-break space before 1 (octal: a hex escape would run on) */
    "1\x01"};
#define COMMON_VALUES (sizeof common_values / sizeof common_values[0])

/* Sizes also get unit spellings and products that overflow. */
static const char *const size_values[] = {"16777215TiB",
                                          "16777216TiB",
                                          "17179869183GiB",
                                          "17179869184GiB",
                                          "18014398509481983KiB",
                                          "18014398509481984KiB",
                                          "18446744073709551615KiB",
                                          "1.5KiB",
                                          "0.5B",
                                          "1.0000000001KiB",
                                          "18446744073709551615.0",
                                          "18446744073709551616.0",
                                          "1e3",
                                          "1KiBKiB",
                                          "1 KiB",
                                          "1kib",
                                          "1Ki",
                                          "1TiB",
                                          "-1KiB",
                                          "nanKiB",
                                          "infKiB",
                                          "0x10KiB",
                                          "0.0",
                                          "16777215.99TiB",
                                          "16777215.999999999TiB",
                                          "1EiB",
                                          "1PiB"};
#define SIZE_VALUES (sizeof size_values / sizeof size_values[0])

/* ------------------------------------------------------------------------- */
/* helpers                                                                    */

static int failf(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int failf(const char *label, const char *fmt, ...) {
  va_list ap;
  printf("FAIL %s: ", label);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  return 1;
}

/* The outcome of a refused call: INVALID_ARGUMENT naming `name`, or
 * OUT_OF_MEMORY (when `oom_ok`) with a message. 0 when it is one of them. */
static int check_refusal(const char *label, dao_status st, const char *name, int oom_ok) {
  const char *msg = dao_last_error();
  if (st == DAO_ERR_INVALID_ARGUMENT) {
    if (msg == NULL || strstr(msg, name) == NULL)
      return failf(label, "refused, but the message does not name '%s': %s", name,
                   msg ? msg : "(null)");
    return 0;
  }
  if (st == DAO_ERR_OUT_OF_MEMORY && oom_ok) {
    if (msg == NULL || msg[0] == '\0') return failf(label, "out of memory without a message");
    return 0;
  }
  return failf(label, "status %d (%s), expected DAO_OK, DAO_ERR_INVALID_ARGUMENT%s; message: %s",
               (int)st, dao_status_string(st), oom_ok ? " or DAO_ERR_OUT_OF_MEMORY" : "",
               msg ? msg : "(null)");
}

static void note(const char *label, dao_status st) {
  if (verbose)
    printf("  %-70s -> %s: %s\n", label, dao_status_string(st),
           st == DAO_OK ? "" : dao_last_error());
}

/* Parses a size the way docs/environment.md documents it: digits with at most
 * one dot, then an optional unit. Returns 0 and sets *out, or -1. */
static int test_parse_size(const char *text, long double *out) {
  const char *s = text;
  char *end = NULL;
  long double v;
  int dots = 0;
  const char *p;
  static const struct {
    const char *name;
    long double factor;
  } units[] = {{"", 1},          {"b", 1},        {"k", 1024.0L},   {"kb", 1024.0L},
               {"kib", 1024.0L}, {"m", 0x1p20L},  {"mb", 0x1p20L},  {"mib", 0x1p20L},
               {"g", 0x1p30L},   {"gb", 0x1p30L}, {"gib", 0x1p30L}, {"t", 0x1p40L},
               {"tb", 0x1p40L},  {"tib", 0x1p40L}};
  size_t i;
  char unit[8];
  size_t n = 0;
  while (*s == ' ') ++s;
  for (p = s; (*p >= '0' && *p <= '9') || *p == '.'; ++p)
    if (*p == '.') ++dots;
  if (p == s || dots > 1) return -1;
  v = strtold(s, &end);
  if (end != p) return -1;
  while (*p == ' ') ++p;
  for (; *p != '\0' && *p != ' ' && n + 1 < sizeof unit; ++p) unit[n++] = (char)(*p | 0x20);
  unit[n] = '\0';
  while (*p == ' ') ++p;
  if (*p != '\0') return -1;
  for (i = 0; i < sizeof units / sizeof units[0]; ++i) {
    if (strcmp(unit, units[i].name) == 0) {
      *out = v * units[i].factor;
      return 0;
    }
  }
  return -1;
}

/* The value of `key` in a "k=v,k=v" config (top level only), or NULL. */
static const char *config_value(const char *config, const char *key, char *buf, size_t cap) {
  const char *p = config;
  size_t len = strlen(key);
  while (p != NULL && *p != '\0') {
    const char *comma = strchr(p, ',');
    size_t item = comma ? (size_t)(comma - p) : strlen(p);
    if (item > len && strncmp(p, key, len) == 0 && p[len] == '=') {
      size_t vlen = item - len - 1;
      if (vlen >= cap) vlen = cap - 1;
      memcpy(buf, p + len + 1, vlen);
      buf[vlen] = '\0';
      return buf;
    }
    p = comma ? comma + 1 : NULL;
  }
  return NULL;
}

static dao_place place_of(int code) { return code == 0 ? dao_place_cpu() : dao_place_sim(0); }
static const char *place_name(int code) { return code == 0 ? "cpu" : "sim0"; }

/* Allocates `bytes`, writes its first and last byte, frees it. */
static int small_alloc_works(const char *label, dao_allocator *a, size_t bytes) {
  void *p = NULL;
  size_t usable = 0;
  dao_status st = dao_allocator_alloc(a, bytes, NULL, &p);
  if (st == DAO_ERR_OUT_OF_MEMORY) return 0; /* a cap of a few bytes is a cap */
  if (st != DAO_OK)
    return failf(label, "accepted, but alloc(%zu) gives %s: %s", bytes, dao_status_string(st),
                 dao_last_error());
  if (dao_allocator_usable_size(a, p, &usable) != DAO_OK || usable < bytes)
    return failf(label, "usable size %zu < %zu", usable, bytes);
  memset(p, 0x5a, bytes);
  if ((st = dao_allocator_free(a, p)) != DAO_OK)
    return failf(label, "free gives %s: %s", dao_status_string(st), dao_last_error());
  return 0;
}

/* ------------------------------------------------------------------------- */
/* cases                                                                      */

typedef struct hcase hcase;
typedef int (*case_fn)(const hcase *c);
struct hcase {
  char label[320];
  case_fn fn;
  const key_row *key; /* config cases */
  const char *value;
  int place;   /* 0: CPU, 1: SIM 0 */
  size_t n, m; /* size cases */
  double d;    /* float cases */
  int variant; /* what the case function does with them */
  const char *env_name, *env_value;
};

/* A config key of a strategy: create, use, read back, recreate, destroy. */
static int allocator_key_case(const hcase *c) {
  char config[512], readback[256];
  dao_allocator *a = NULL, *b = NULL;
  const char *strategy = NULL, *effective = NULL;
  dao_place place = place_of(c->place);
  dao_status st;
  const char *rb;
  int rc = 0;
  snprintf(config, sizeof config, "%s=%s", c->key->key, c->value);
  st = dao_allocator_create(place, c->key->area, config, &a);
  note(c->label, st);
  if (st != DAO_OK) return check_refusal(c->label, st, c->key->key, 1);
  rc |= small_alloc_works(c->label, a, 64);
  rc |= small_alloc_works(c->label, a, 3 * MIB + 5);
  if ((st = dao_allocator_trim(a, NULL)) != DAO_OK)
    rc |= failf(c->label, "trim gives %s: %s", dao_status_string(st), dao_last_error());
  if ((st = dao_allocator_info(a, NULL, &strategy, &effective)) != DAO_OK)
    return failf(c->label, "info gives %s", dao_status_string(st));
  /* Reads back as written: a wrapped or clamped number reads as another. */
  rb = config_value(effective, c->key->key, readback, sizeof readback);
  if (rb != NULL && (c->key->kind == K_SIZE || c->key->kind == K_SIZE_AUTO) &&
      strcmp(c->value, "auto") != 0 && strcmp(c->value, "AUTO") != 0) {
    long double given = 0, got = 0;
    /* max_split_size: 0 and SIZE_MAX both mean no limit, and read as 0. */
    int zero_means_none = strcmp(c->key->key, "max_split_size") == 0;
    if (test_parse_size(c->value, &given) != 0)
      rc |= failf(c->label, "accepted '%s', which is not a documented size", c->value);
    else if (test_parse_size(rb, &got) != 0 ||
             (got != given &&
              !(zero_means_none && got == 0 && (given == 0 || given >= 0x1p64L - 1))))
      rc |= failf(c->label, "'%s' reads back as '%s'", c->value, rb);
  } else if (rb != NULL && c->key->kind == K_DOUBLE) {
    char *end = NULL;
    double given = strtod(c->value, &end), got = strtod(rb, NULL);
    if (!isfinite(given) || given != got)
      rc |= failf(c->label, "'%s' reads back as '%s'", c->value, rb);
  }
  /* The effective config is a config this library accepts. */
  st = dao_allocator_create(place, strategy, effective, &b);
  if (st == DAO_OK) dao_allocator_destroy(b);
  else if (st != DAO_ERR_OUT_OF_MEMORY)
    rc |= failf(c->label, "its effective config '%s' is refused: %s", effective, dao_last_error());
  if ((st = dao_allocator_destroy(a)) != DAO_OK)
    rc |= failf(c->label, "destroy gives %s: %s", dao_status_string(st), dao_last_error());
  return rc;
}

/* The same key one level down, under limit (upstream.<key>). */
static int stacked_key_case(const hcase *c) {
  char config[512];
  dao_allocator *a = NULL;
  dao_status st;
  int rc = 0;
  snprintf(config, sizeof config, "upstream=%s,upstream.%s=%s", c->key->area, c->key->key,
           c->value);
  st = dao_allocator_create(place_of(c->place), "limit", config, &a);
  note(c->label, st);
  if (st != DAO_OK) return check_refusal(c->label, st, c->key->key, 1);
  rc |= small_alloc_works(c->label, a, 64);
  if ((st = dao_allocator_destroy(a)) != DAO_OK)
    rc |= failf(c->label, "destroy gives %s", dao_status_string(st));
  return rc;
}

/* A tiered pool on SIM 0 with its host tier on the CPU: one tensor written,
 * read back through a kernel-free round trip, released. */
static int tiered_works(const char *label, dao_tiered *t, size_t bytes) {
  dao_tensor *x = NULL;
  unsigned char in[4096], out[4096];
  dao_status st;
  int rc = 0;
  if (bytes > sizeof in) bytes = sizeof in;
  memset(in, 0x3c, sizeof in);
  if ((st = dao_tensor_create(t, bytes, &x)) != DAO_OK)
    return failf(label, "accepted, but tensor_create gives %s: %s", dao_status_string(st),
                 dao_last_error());
  if ((st = dao_tensor_write(x, in, bytes)) == DAO_ERR_OUT_OF_MEMORY)
    ; /* host_budget below one tensor: a cap is a cap */
  else if (st != DAO_OK)
    rc |= failf(label, "tensor_write gives %s: %s", dao_status_string(st), dao_last_error());
  else if ((st = dao_tensor_read(x, out, bytes)) != DAO_OK)
    rc |= failf(label, "tensor_read gives %s: %s", dao_status_string(st), dao_last_error());
  else if (memcmp(in, out, bytes) != 0) rc |= failf(label, "tensor reads back other bytes");
  if ((st = dao_tensor_release(x)) != DAO_OK)
    rc |= failf(label, "tensor_release gives %s", dao_status_string(st));
  return rc;
}

static int tiered_key_case(const hcase *c) {
  char config[512];
  dao_tiered *t = NULL;
  dao_status st;
  int rc;
  snprintf(config, sizeof config, "%s=%s", c->key->key, c->value);
  st = dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, config, &t);
  note(c->label, st);
  if (st != DAO_OK) return check_refusal(c->label, st, c->key->key, 1);
  rc = tiered_works(c->label, t, 4096);
  if ((st = dao_tiered_synchronize(t)) != DAO_OK)
    rc |= failf(c->label, "synchronize gives %s: %s", dao_status_string(st), dao_last_error());
  if ((st = dao_tiered_destroy(t)) != DAO_OK)
    rc |= failf(c->label, "destroy gives %s", dao_status_string(st));
  return rc;
}

static int recycle_works(const char *label, dao_recycle_pool *pool) {
  dao_buffer *b = NULL;
  void *data = NULL;
  size_t elem = 0, bytes = 0;
  dao_status st;
  if ((st = dao_recycle_acquire(pool, 0, &b)) != DAO_OK) {
    if (st == DAO_ERR_OUT_OF_MEMORY) return 0;
    return failf(label, "accepted, but acquire gives %s: %s", dao_status_string(st),
                 dao_last_error());
  }
  if (dao_buffer_data(b, &data) != DAO_OK || dao_buffer_size(b, &elem, &bytes) != DAO_OK)
    return failf(label, "buffer data/size fail: %s", dao_last_error());
  if (bytes <= 4096) memset(data, 0x11, bytes);
  if ((st = dao_buffer_release(b)) != DAO_OK)
    return failf(label, "release gives %s", dao_status_string(st));
  return 0;
}

static int recycle_key_case(const hcase *c) {
  char config[512];
  dao_recycle_pool *pool = NULL;
  size_t shape[1] = {64};
  dao_status st;
  int rc;
  snprintf(config, sizeof config, "%s=%s", c->key->key, c->value);
  st = dao_recycle_create(place_of(c->place), 4, 1, shape, 2, 1, config, &pool);
  note(c->label, st);
  if (st != DAO_OK) return check_refusal(c->label, st, c->key->key, 1);
  rc = recycle_works(c->label, pool);
  if ((st = dao_recycle_destroy(pool)) != DAO_OK)
    rc |= failf(c->label, "destroy gives %s", dao_status_string(st));
  return rc;
}

/* Environment: the place defaults read DAO_ALLOC_CONF_<KIND> at first use. */
static int env_alloc_case(const hcase *c) {
  void *p = NULL;
  dao_place place = place_of(c->place);
  dao_status st = dao_alloc(place, 64, &p);
  note(c->label, st);
  if (st == DAO_OK) {
    memset(p, 1, 64);
    if ((st = dao_free(place, p)) != DAO_OK) return failf(c->label, "dao_free gives %d", (int)st);
    return 0;
  }
  if (st == DAO_ERR_OUT_OF_MEMORY && c->variant == 1) return 0; /* fault injection */
  return check_refusal(c->label, st, c->env_name, 1);
}

/* DAO_SIM_DEVICES with a hostile capacity or count. */
static int env_sim_case(const hcase *c) {
  int count = -7;
  void *p = NULL;
  dao_status st = dao_place_device_count(DAO_PLACE_SIM, &count);
  note(c->label, st);
  if (st != DAO_OK) return check_refusal(c->label, st, "DAO_SIM_DEVICES", 0);
  if (count < 0 || count > DAO_SIM_MAX_DEVICES) return failf(c->label, "count %d", count);
  if (count == 0) return 0;
  st = dao_alloc(dao_place_sim(0), 64, &p);
  if (st == DAO_OK) {
    memset(p, 1, 64);
    return dao_free(dao_place_sim(0), p) == DAO_OK ? 0 : failf(c->label, "free");
  }
  return check_refusal(c->label, st, "size", 1);
}

/* Size arguments ----------------------------------------------------------- */

static const size_t hostile_sizes[] = {0,
                                       1,
                                       64,
                                       4096,
                                       MIB,
                                       SIM_BYTES - 1,
                                       SIM_BYTES,
                                       SIM_BYTES + 1,
                                       (size_t)1 << 32,
                                       (size_t)1 << 40,
                                       (size_t)1 << 48,
                                       SIZE_MAX / 2,
                                       SIZE_MAX / 2 + 1,
                                       SIZE_MAX - ((size_t)2 << 20) + 1,
                                       SIZE_MAX - 8191,
                                       SIZE_MAX - 4095,
                                       SIZE_MAX - 511,
                                       SIZE_MAX - 255,
                                       SIZE_MAX - 15,
                                       SIZE_MAX - 1,
                                       SIZE_MAX};
#define HOSTILE_SIZES (sizeof hostile_sizes / sizeof hostile_sizes[0])

/* Allocators for the size cases: a strategy and a config. */
static const char *const alloc_setups[][2] = {
    {"buddy", ""},
    {"buddy", "chunk_size=1MiB,max_pool=8MiB"},
    {"caching", ""},
    {"caching", "expandable_segments=true"},
    {"caching", "expandable_segments=false,max_split_size=21MiB,roundup_power2_divisions=4"},
    {"caching", "memory_fraction=1"},
    {"system", ""},
    {"limit", "max_pool=1MiB"},
    {"limit", "max_pool=18446744073709551615"},
    {"caching", "upstream=buddy"},
};
#define ALLOC_SETUPS (sizeof alloc_setups / sizeof alloc_setups[0])

/* dao_allocator_alloc(size), on the default stream or a stream of the place. */
static int alloc_size_case(const hcase *c) {
  dao_allocator *a = NULL;
  dao_stream s = NULL;
  void *p = NULL;
  size_t usable = 0;
  dao_status st;
  int rc = 0;
  st = dao_allocator_create(place_of(c->place), alloc_setups[c->variant][0],
                            alloc_setups[c->variant][1], &a);
  if (st != DAO_OK) return failf(c->label, "setup: %s", dao_last_error());
  if (c->m && dao_stream_create(place_of(c->place), &s) != DAO_OK)
    return failf(c->label, "stream: %s", dao_last_error());
  st = dao_allocator_alloc(a, c->n, s, &p);
  note(c->label, st);
  if (st == DAO_OK) {
    if (c->n > 0 && p == NULL) rc |= failf(c->label, "DAO_OK with NULL");
    if (p != NULL) {
      if (dao_allocator_usable_size(a, p, &usable) != DAO_OK || usable < c->n)
        rc |= failf(c->label, "usable size %zu < %zu", usable, c->n);
      if (c->n > 0 && c->n <= SIM_BYTES) {
        ((volatile char *)p)[0] = 1;
        ((volatile char *)p)[c->n - 1] = 1;
      }
      if ((st = dao_allocator_free(a, p)) != DAO_OK)
        rc |= failf(c->label, "free gives %s", dao_status_string(st));
    }
  } else {
    rc |= check_refusal(c->label, st, "size", 1);
  }
  /* Still serves a small request. */
  rc |= small_alloc_works(c->label, a, 100);
  if (s != NULL && dao_stream_destroy(s) != DAO_OK) rc |= failf(c->label, "stream destroy");
  if ((st = dao_allocator_destroy(a)) != DAO_OK)
    rc |= failf(c->label, "destroy gives %s: %s", dao_status_string(st), dao_last_error());
  return rc;
}

/* dao_alloc(place, size): the place defaults. */
static int place_alloc_case(const hcase *c) {
  void *p = NULL;
  dao_place place = place_of(c->place);
  dao_status st = dao_alloc(place, c->n, &p);
  int rc = 0;
  note(c->label, st);
  if (st == DAO_OK) {
    if (c->n > 0 && c->n <= SIM_BYTES) memset(p, 2, c->n);
    if (p != NULL && dao_free(place, p) != DAO_OK) rc |= failf(c->label, "free");
  } else {
    rc |= check_refusal(c->label, st, "size", 1);
  }
  if (dao_alloc(place, 64, &p) != DAO_OK || dao_free(place, p) != DAO_OK)
    rc |= failf(c->label, "a small allocation fails after it: %s", dao_last_error());
  return rc;
}

/* dao_tiered_create(budget), then dao_tensor_create(size) and
 * dao_tensor_write/read(bytes) on a 4 KiB tensor. */
static int tiered_size_case(const hcase *c) {
  dao_tiered *t = NULL;
  dao_tensor *x = NULL;
  dao_status st;
  int rc = 0;
  unsigned char buf[8192];
  const size_t budget = c->variant == 0 ? c->n : MIB;
  st = dao_tiered_create(dao_place_sim(0), dao_place_cpu(), budget, "", &t);
  if (c->variant == 0) note(c->label, st);
  if (st != DAO_OK) {
    if (c->variant != 0) return failf(c->label, "setup: %s", dao_last_error());
    return check_refusal(c->label, st, "budget", 1);
  }
  if (c->variant == 0) {
    rc |= tiered_works(c->label, t, 4096);
  } else if (c->variant == 1) {
    st = dao_tensor_create(t, c->n, &x);
    note(c->label, st);
    if (st == DAO_OK) {
      if (c->n <= sizeof buf) {
        memset(buf, 7, c->n);
        if (dao_tensor_write(x, buf, c->n) != DAO_OK || dao_tensor_read(x, buf, c->n) != DAO_OK)
          rc |= failf(c->label, "write/read: %s", dao_last_error());
      }
      if (dao_tensor_release(x) != DAO_OK) rc |= failf(c->label, "release");
    } else {
      rc |= check_refusal(c->label, st, "bytes", 1);
    }
  } else {
    /* variant 2: write, 3: read, c->n bytes of a 4096-byte tensor. */
    if ((st = dao_tensor_create(t, 4096, &x)) != DAO_OK)
      return failf(c->label, "setup tensor: %s", dao_last_error());
    memset(buf, 9, sizeof buf);
    if (c->variant == 3 && dao_tensor_write(x, buf, 4096) != DAO_OK)
      return failf(c->label, "setup write: %s", dao_last_error());
    st = c->variant == 2 ? dao_tensor_write(x, buf, c->n) : dao_tensor_read(x, buf, c->n);
    note(c->label, st);
    if (c->n == 4096 ? st != DAO_OK : check_refusal(c->label, st, "bytes", 0) != 0)
      rc |= failf(c->label, "status %s", dao_status_string(st));
    if (dao_tensor_release(x) != DAO_OK) rc |= failf(c->label, "release");
  }
  if (dao_tiered_synchronize(t) != DAO_OK) rc |= failf(c->label, "sync: %s", dao_last_error());
  if (dao_tiered_destroy(t) != DAO_OK) rc |= failf(c->label, "destroy");
  return rc;
}

/* dao_recycle_create / dao_collection_add with hostile sizes. variant:
 * 0 element_size, 1 shape[0] (ndim 1), 2 shape {n, m} (ndim 2),
 * 3 max_buffers, 4 preallocate (max_buffers 4), 5 ndim = (int)n,
 * 6 collection_add's element_size. */
static int recycle_size_case(const hcase *c) {
  dao_recycle_pool *pool = NULL;
  dao_collection *coll = NULL;
  size_t shape[DAO_RECYCLE_MAX_DIMS + 2] = {8, 8, 1, 1, 1, 1, 1, 1, 1, 1};
  size_t elem = 4, max_buffers = 2, prealloc = 0;
  int ndim = 1;
  const char *arg = "";
  dao_status st;
  int rc = 0;
  switch (c->variant) {
    case 0:
      elem = c->n;
      arg = "element_size";
      break;
    case 1:
      shape[0] = c->n;
      arg = "shape";
      break;
    case 2:
      shape[0] = c->n;
      shape[1] = c->m;
      ndim = 2;
      arg = "shape";
      break;
    case 3:
      max_buffers = c->n;
      arg = "max_buffers";
      break;
    case 4:
      max_buffers = 4;
      prealloc = c->n;
      arg = "preallocate";
      break;
    case 5:
      ndim = (int)(long)c->n;
      arg = "ndim";
      break;
    default:
      elem = c->n;
      arg = "element_size";
      break;
  }
  if (c->variant == 6) {
    if (dao_collection_create(&coll) != DAO_OK) return failf(c->label, "collection");
    st = dao_collection_add(coll, "x", place_of(c->place), elem, ndim, shape, max_buffers, prealloc,
                            "", &pool);
  } else {
    st =
        dao_recycle_create(place_of(c->place), elem, ndim, shape, max_buffers, prealloc, "", &pool);
  }
  note(c->label, st);
  if (st == DAO_OK) {
    rc |= recycle_works(c->label, pool);
    if (coll == NULL && dao_recycle_destroy(pool) != DAO_OK) rc |= failf(c->label, "destroy");
  } else if (st == DAO_ERR_OUT_OF_MEMORY) {
    rc |= check_refusal(c->label, st, arg, 1);
  } else {
    /* The shape's message names the product ("element_size x shape"). */
    rc |= check_refusal(c->label, st, arg, 0);
  }
  if (coll != NULL && dao_collection_destroy(coll) != DAO_OK) rc |= failf(c->label, "coll destroy");
  return rc;
}

/* Recycle timeouts (doubles): on a pool with a free buffer (variant 0) they
 * must not matter; on an exhausted pool (variant 1) a short one times out and
 * a long one waits until another thread closes the pool. variant 2: take. */
static void *close_later(void *arg) {
  struct timespec ts = {0, 200 * 1000 * 1000};
  nanosleep(&ts, NULL);
  dao_recycle_close((dao_recycle_pool *)arg);
  return NULL;
}

static int recycle_timeout_case(const hcase *c) {
  dao_recycle_pool *pool = NULL;
  dao_buffer *held = NULL, *b = NULL;
  size_t shape[1] = {16};
  pthread_t closer;
  dao_status st;
  int rc = 0, started = 0;
  if (dao_recycle_create(dao_place_cpu(), 4, 1, shape, 1, 0, "", &pool) != DAO_OK)
    return failf(c->label, "setup: %s", dao_last_error());
  if (c->variant >= 1) {
    if (c->variant == 1 && dao_recycle_acquire(pool, 0, &held) != DAO_OK)
      return failf(c->label, "setup acquire");
    if (pthread_create(&closer, NULL, close_later, pool) != 0) return failf(c->label, "thread");
    started = 1;
  }
  st = c->variant == 2 ? dao_recycle_take(pool, c->d, &b) : dao_recycle_acquire(pool, c->d, &b);
  note(c->label, st);
  if (st == DAO_OK) {
    if (c->variant != 0) rc |= failf(c->label, "got a buffer from an empty pool");
    dao_buffer_release(b);
  } else if (st == DAO_ERR_INVALID_ARGUMENT) {
    rc |= check_refusal(c->label, st, "timeout", 0);
  } else if (!(c->variant != 0 && (st == DAO_ERR_TIMEOUT || st == DAO_ERR_CLOSED))) {
    rc |= failf(c->label, "status %s: %s", dao_status_string(st), dao_last_error());
  }
  if (started) pthread_join(closer, NULL);
  if (held != NULL) dao_buffer_release(held);
  if (dao_recycle_destroy(pool) != DAO_OK) rc |= failf(c->label, "destroy: %s", dao_last_error());
  return rc;
}

/* dao_sim_configure(count, capacities) before first use. variant 0: count =
 * (int)n with NULL capacities; 1: one device of n bytes; 2: two devices, the
 * second of n bytes. */
static int sim_configure_case(const hcase *c) {
  size_t caps[2] = {MIB, MIB};
  int count = 1;
  const size_t *capacities = caps;
  dao_status st;
  void *p = NULL;
  if (c->variant == 0) {
    count = (int)(long)c->n;
    capacities = NULL;
  } else if (c->variant == 1) {
    caps[0] = c->n;
  } else {
    count = 2;
    caps[1] = c->n;
  }
  st = dao_sim_configure(count, capacities);
  note(c->label, st);
  if (st != DAO_OK) return check_refusal(c->label, st, c->variant == 0 ? "count" : "capacit", 0);
  if (count == 0) return 0;
  /* The devices work: a small allocation, memory info, a caching
   * allocator with memory_fraction=1 (2^64 as a double for SIZE_MAX). */
  {
    size_t free_b = 0, total_b = 0;
    dao_allocator *a = NULL;
    int dev = count - 1;
    if (dao_place_memory_info(dao_place_sim(dev), &free_b, &total_b) != DAO_OK)
      return failf(c->label, "memory_info: %s", dao_last_error());
    if (c->variant != 0 && total_b != (c->variant == 1 ? caps[0] : caps[1]))
      return failf(c->label, "total %zu, configured %zu", total_b, c->n);
    st = dao_alloc(dao_place_sim(dev), 64, &p);
    if (st == DAO_OK) {
      memset(p, 3, 64);
      dao_free(dao_place_sim(dev), p);
    } else if (check_refusal(c->label, st, "size", 1)) {
      return 1;
    }
    st = dao_allocator_create(dao_place_sim(dev), "caching", "memory_fraction=1", &a);
    if (st != DAO_OK) return failf(c->label, "caching: %s", dao_last_error());
    if (small_alloc_works(c->label, a, 4096)) return 1;
    dao_allocator_destroy(a);
    st = dao_allocator_create(dao_place_sim(dev), "buddy", "", &a);
    if (st != DAO_OK) return failf(c->label, "buddy: %s", dao_last_error());
    if (small_alloc_works(c->label, a, 4096)) return 1;
    dao_allocator_destroy(a);
  }
  return 0;
}

/* dao_memcpy_async(bytes) between two 4 KiB host buffers: 0 and 4096 work;
 * a count whose range wraps around the address space is refused. */
static int memcpy_case(const hcase *c) {
  static unsigned char src[4096], dst[4096];
  dao_stream s = NULL;
  dao_status st;
  int rc = 0;
  if (c->variant == 1 && dao_stream_create(dao_place_sim(0), &s) != DAO_OK)
    return failf(c->label, "stream");
  st = dao_memcpy_async(dst, src, c->n, s);
  note(c->label, st);
  if (c->n <= sizeof dst) {
    if (st != DAO_OK)
      rc |= failf(c->label, "status %s: %s", dao_status_string(st), dao_last_error());
  } else {
    rc |= check_refusal(c->label, st, "bytes", 0);
  }
  if (s != NULL) {
    if (dao_stream_synchronize(s) != DAO_OK) rc |= failf(c->label, "sync: %s", dao_last_error());
    dao_stream_destroy(s);
  }
  return rc;
}

/* Partitioned memory on one in-process rank. variant 0: total_size n (entry
 * 1); 1: entry_size n (total 4096); 2: total n, entry m; then gather and
 * scatter with count n (variant 3), entry_rank(index n) (variant 4). */
static int whole_case(const hcase *c) {
  dao_place place = place_of(c->place);
  dao_comm *comm = NULL;
  dao_whole *w = NULL;
  dao_whole_desc d;
  dao_status st;
  int rc = 0, types;
  if (dao_comm_create_local(1, &place, &comm) != DAO_OK)
    return failf(c->label, "comm: %s", dao_last_error());
  for (types = 0; types < 3; ++types) {
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.type = (dao_whole_type)types;
    d.location = c->place == 0 ? DAO_WHOLE_HOST : DAO_WHOLE_DEVICE;
    d.total_size = 4096;
    d.entry_size = 8;
    if (c->variant == 0) d.total_size = c->n, d.entry_size = 1;
    if (c->variant == 1) d.entry_size = c->n;
    if (c->variant == 2) d.total_size = c->n, d.entry_size = c->m;
    st = dao_whole_create(comm, &d, &w);
    if (c->variant <= 2) {
      char label[400];
      snprintf(label, sizeof label, "%s type %d", c->label, types);
      note(label, st);
      if (st == DAO_OK) {
        int64_t idx = 0;
        unsigned char e[64];
        if (d.entry_size <= sizeof e && d.total_size >= d.entry_size) {
          memset(e, 4, d.entry_size);
          if (dao_whole_scatter(w, e, &idx, 1) != DAO_OK ||
              dao_whole_gather(w, &idx, 1, e) != DAO_OK)
            rc |= failf(label, "scatter/gather: %s", dao_last_error());
        }
        dao_whole_destroy(w);
      } else if (st != DAO_ERR_UNSUPPORTED) {
        rc |= check_refusal(label, st, "desc", 1); /* "desc: ..." names the field */
      }
      continue;
    }
    if (st == DAO_ERR_UNSUPPORTED) continue;
    if (st != DAO_OK) {
      rc |= failf(c->label, "setup: %s", dao_last_error());
      continue;
    }
    if (c->variant == 3) {
      /* Arrays of 512 entries: larger counts are refused only where
       * count x entry_size overflows (the library cannot know the arrays). */
      static unsigned char buf[4096];
      static int64_t idx[512];
      if (c->n > 512 && c->n <= SIZE_MAX / 8) {
        dao_whole_destroy(w);
        continue;
      }
      st = dao_whole_gather(w, idx, c->n, buf);
      if (c->n <= 512 ? st != DAO_OK : check_refusal(c->label, st, "entries", 0) != 0)
        rc |= failf(c->label, "gather type %d: %s %s", types, dao_status_string(st),
                    dao_last_error());
      st = dao_whole_scatter(w, buf, idx, c->n);
      if (c->n <= 512 ? st != DAO_OK : check_refusal(c->label, st, "entries", 0) != 0)
        rc |= failf(c->label, "scatter type %d: %s %s", types, dao_status_string(st),
                    dao_last_error());
    } else {
      int rank = -5;
      const int64_t index = (int64_t)c->n;
      int64_t one = index;
      unsigned char e[8] = {0};
      st = dao_whole_entry_rank(w, index, &rank);
      if (index >= 0 && index < 512 ? st != DAO_OK : check_refusal(c->label, st, "index", 0) != 0)
        rc |= failf(c->label, "entry_rank type %d", types);
      st = dao_whole_gather(w, &one, 1, e);
      if (index >= 0 && index < 512 ? st != DAO_OK : check_refusal(c->label, st, "ind", 0) != 0)
        rc |= failf(c->label, "gather(index) type %d", types);
    }
    dao_whole_destroy(w);
  }
  dao_comm_destroy(comm);
  return rc;
}

/* Enumerations and indices given as hostile ints: names of unknown values
 * are strings, indices out of range are refused. */
static int enum_case(const hcase *c) {
  const int v = (int)(long)c->n;
  const char *s;
  dao_sim_cost cost;
  int rc = 0;
  dao_status st;
  if ((s = dao_place_kind_name((dao_place_kind)v)) == NULL) rc |= failf(c->label, "kind name NULL");
  if ((s = dao_sim_op_name((dao_sim_op)v)) == NULL) rc |= failf(c->label, "op name NULL");
  if ((s = dao_whole_type_name((dao_whole_type)v)) == NULL) rc |= failf(c->label, "type NULL");
  if ((s = dao_whole_location_name((dao_whole_location)v)) == NULL)
    rc |= failf(c->label, "location NULL");
  if ((s = dao_status_string((dao_status)v)) == NULL) rc |= failf(c->label, "status NULL");
  memset(&cost, 0, sizeof cost);
  cost.struct_size = sizeof cost;
  st = dao_sim_get_cost(v, DAO_SIM_OP_ALLOC, &cost);
  if (!(v == 0 || v == 1) && st != DAO_ERR_NO_DEVICE && check_refusal(c->label, st, "device", 0))
    rc = 1;
  st = dao_sim_get_cost(0, (dao_sim_op)v, &cost);
  if (st != DAO_OK && check_refusal(c->label, st, "op", 0)) rc = 1;
  {
    void *p = NULL;
    st = dao_alloc(dao_place_sim(v), 64, &p);
    if (st == DAO_OK) dao_free(dao_place_sim(v), p);
    else if (st != DAO_ERR_NO_DEVICE && check_refusal(c->label, st, "device", 0)) rc = 1;
  }
  return rc;
}

/* ------------------------------------------------------------------------- */
/* the runner                                                                 */

/* Under ASan, host memory that the system grants is poisoned and unpoisoned
 * block by block (docs/reliability.md): a CPU block or pool of gigabytes
 * to terabytes costs its size / 8 bytes of shadow writes, minutes on a busy
 * machine. Such cases test ASan, not libdao: they run in the other builds. */
#if defined(__SANITIZE_ADDRESS__)
#define HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTILE_ASAN 1
#endif
#endif
#ifndef HOSTILE_ASAN
#define HOSTILE_ASAN 0
#endif

static int slow_under_asan(int place, size_t bytes, const char *value) {
  long double v = 0;
  if (!HOSTILE_ASAN || place != 0) return 0;
  if (value != NULL && test_parse_size(value, &v) == 0) bytes = v > 0x1p63L ? SIZE_MAX : (size_t)v;
  return bytes > ((size_t)1 << 30) && bytes <= ((size_t)1 << 48);
}

static hcase *cases;
static size_t case_count, case_cap;

static hcase *add_case(case_fn fn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static hcase *add_case(case_fn fn, const char *fmt, ...) {
  va_list ap;
  hcase *c;
  if (case_count == case_cap) {
    case_cap = case_cap ? case_cap * 2 : 1024;
    cases = realloc(cases, case_cap * sizeof *cases);
    if (cases == NULL) abort();
  }
  c = &cases[case_count++];
  memset(c, 0, sizeof *c);
  c->fn = fn;
  va_start(ap, fmt);
  vsnprintf(c->label, sizeof c->label, fmt, ap);
  va_end(ap);
  return c;
}

/* Runs `fn` in a child with a watchdog; 0 when it passed. */
static int run_child(const hcase *c) {
  pid_t pid;
  int status = 0;
  fflush(stdout);
  pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    int rc;
    alarm(WATCHDOG_SECONDS);
    if (c->env_name != NULL) setenv(c->env_name, c->env_value, 1);
    rc = c->fn(c);
    fflush(stdout);
    exit(rc == 0 ? 0 : 1); /* exit(), so that LeakSanitizer runs */
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFSIGNALED(status)) {
    printf("FAIL %s: died of signal %d%s\n", c->label, WTERMSIG(status),
           WTERMSIG(status) == SIGALRM ? " (hang: the watchdog fired)" : "");
  } else if (WEXITSTATUS(status) != 1) {
    printf("FAIL %s: exit status %d (a sanitizer report?)\n", c->label, WEXITSTATUS(status));
  }
  return 1;
}

/* Runs cases [first, last) in one child, silently (a fork per case is slow
 * under ASan); 0 when all passed. The runner then reruns a group that did
 * not pass one case per child, which reports each failure. */
static int run_group(size_t first, size_t last) {
  pid_t pid;
  int status = 0;
  fflush(stdout);
  pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    size_t i;
    int rc = 0;
    if (freopen("/dev/null", "w", stdout) == NULL) exit(2);
    for (i = first; i < last; ++i) {
      alarm(WATCHDOG_SECONDS);
      rc |= cases[i].fn(&cases[i]);
    }
    exit(rc == 0 ? 0 : 1);
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* Key discovery (in a child): writes "area key" lines to `fd`, read from the
 * "known keys: ..." list of the message that refuses an unknown key. */
static void write_known_keys(int fd, const char *area, const char *msg) {
  const char *list = msg ? strstr(msg, "known keys: ") : NULL;
  char line[256];
  if (list == NULL) {
    snprintf(line, sizeof line, "? %s\n", area);
    if (write(fd, line, strlen(line)) < 0) exit(2);
    return;
  }
  list += strlen("known keys: ");
  while (*list != '\0') {
    size_t n = strcspn(list, ",");
    snprintf(line, sizeof line, "%s %.*s\n", area, (int)n, list);
    if (write(fd, line, strlen(line)) < 0) exit(2);
    list += n;
    while (*list == ',' || *list == ' ') ++list;
  }
}

static void discover_keys(int fd) {
#define DAO_NAME_(s) #s,
  static const char *const strategies[] = {DAO_STRATEGY_LIST(DAO_NAME_)};
#undef DAO_NAME_
  const char *probe = "hostile_probe_key=1";
  size_t i, shape[1] = {4};
  dao_allocator *a = NULL;
  dao_tiered *t = NULL;
  dao_recycle_pool *p = NULL;
  for (i = 0; i < sizeof strategies / sizeof strategies[0]; ++i) {
    dao_allocator_create(dao_place_cpu(), strategies[i], probe, &a);
    write_known_keys(fd, strategies[i], dao_last_error());
  }
  dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, probe, &t);
  write_known_keys(fd, "tiered", dao_last_error());
  dao_recycle_create(dao_place_cpu(), 4, 1, shape, 1, 0, probe, &p);
  write_known_keys(fd, "recycle", dao_last_error());
}

/* 0 when the library's keys and key_rows agree; fills `found`. */
static int check_key_coverage(void) {
  int fds[2], status = 0, bad = 0;
  pid_t pid;
  char buf[16384];
  size_t len = 0;
  ssize_t n;
  char *line, *save = NULL;
  int seen[KEY_ROWS] = {0};
  size_t i, keys = 0;
  if (pipe(fds) != 0) return 1;
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    close(fds[0]);
    discover_keys(fds[1]);
    exit(0);
  }
  close(fds[1]);
  while ((n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
  buf[len] = '\0';
  close(fds[0]);
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("FAIL key discovery: the child failed\n");
    return 1;
  }
  for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    char area[64], key[128];
    int found = 0;
    if (sscanf(line, "%63s %127s", area, key) != 2) {
      printf("FAIL key discovery: no key list for '%s'\n", line);
      bad = 1;
      continue;
    }
    /* Every strategy's upstream keys lead to the rows of the strategy below. */
    if (strcmp(key, "upstream") == 0 || strcmp(key, "upstream.<key>") == 0) continue;
    ++keys;
    for (i = 0; i < KEY_ROWS; ++i) {
      if (strcmp(key_rows[i].area, area) == 0 && strcmp(key_rows[i].key, key) == 0) {
        seen[i] = found = 1;
      }
    }
    if (!found) {
      printf("FAIL key coverage: %s takes the key '%s', which has no row in key_rows of "
             "tests/reliability/test_hostile_numbers.c\n",
             area, key);
      bad = 1;
    }
  }
  for (i = 0; i < KEY_ROWS; ++i) {
    if (!seen[i]) {
      printf("FAIL key coverage: key_rows has %s '%s', which the library does not take\n",
             key_rows[i].area, key_rows[i].key);
      bad = 1;
    }
  }
  printf("key coverage: %zu keys found in the library, %zu rows\n", keys, KEY_ROWS);
  return bad;
}

static void add_key_cases(const key_row *k, const char *value) {
  int place;
  if (strcmp(k->area, "tiered") == 0) {
    hcase *c = add_case(tiered_key_case, "config tiered %s=%s", k->key, value);
    c->key = k, c->value = value;
    return;
  }
  if (strcmp(k->area, "recycle") == 0) {
    for (place = 0; place < 2; ++place) {
      hcase *c =
          add_case(recycle_key_case, "config recycle %s %s=%s", place_name(place), k->key, value);
      c->key = k, c->value = value, c->place = place;
    }
    return;
  }
  for (place = 0; place < 2; ++place) {
    hcase *c;
    if (slow_under_asan(place, 0, value)) continue;
    c = add_case(allocator_key_case, "config %s %s %s=%s", k->area, place_name(place), k->key,
                 value);
    c->key = k, c->value = value, c->place = place;
  }
  if (strcmp(k->area, "limit") != 0) {
    hcase *c =
        add_case(stacked_key_case, "config limit sim0 upstream.%s.%s=%s", k->area, k->key, value);
    c->key = k, c->value = value, c->place = 1;
  }
}

static void build_cases(void) {
  size_t i, j;
  int place;
  for (i = 0; i < KEY_ROWS; ++i) {
    const key_row *k = &key_rows[i];
    if (k->kind != K_TEXT)
      for (j = 0; j < COMMON_VALUES; ++j) add_key_cases(k, common_values[j]);
    if (k->kind == K_SIZE || k->kind == K_SIZE_AUTO)
      for (j = 0; j < SIZE_VALUES; ++j) add_key_cases(k, size_values[j]);
    for (j = 0; j < MAX_EXTRA && k->extra[j] != NULL; ++j) add_key_cases(k, k->extra[j]);
  }
  /* The environment: the same keys through DAO_ALLOC_CONF_<KIND>. */
  {
    static const char *const env_values[] = {
        "18446744073709551616", "16777216TiB", "nan", "inf", "-1", "1e300", "1e-300", "0"};
    static const struct {
      const char *var, *key;
      int place;
    } env_keys[] = {{"DAO_ALLOC_CONF_CPU", "chunk_size", 0},
                    {"DAO_ALLOC_CONF_CPU", "min_block", 0},
                    {"DAO_ALLOC_CONF_CPU", "initial_pool", 0},
                    {"DAO_ALLOC_CONF_SIM", "max_split_size_mb", 1},
                    {"DAO_ALLOC_CONF_SIM", "memory_fraction", 1},
                    {"DAO_ALLOC_CONF_SIM", "roundup_power2_divisions", 1},
                    {"DAO_ALLOC_CONF", "max_pool", 1}};
    static char texts[sizeof env_keys / sizeof env_keys[0]][8][96];
    for (i = 0; i < sizeof env_keys / sizeof env_keys[0]; ++i) {
      for (j = 0; j < 8; ++j) {
        hcase *c;
        snprintf(texts[i][j], sizeof texts[i][j], "%s=%s", env_keys[i].key, env_values[j]);
        c = add_case(env_alloc_case, "env %s=%s", env_keys[i].var, texts[i][j]);
        c->env_name = env_keys[i].var, c->env_value = texts[i][j], c->place = env_keys[i].place;
      }
    }
    static const char *const sim_env[] = {"0",
                                          "1",
                                          "18446744073709551615",
                                          "18446744073709551616",
                                          "16777216TiB",
                                          "-1",
                                          "1e300",
                                          "nan",
                                          "inf",
                                          "0x1MiB",
                                          "-1x1MiB",
                                          "65x1MiB",
                                          "64x1MiB",
                                          "99999999999999999999x1MiB",
                                          "2147483648x1MiB",
                                          "1x18446744073709551615",
                                          "2x0",
                                          "1.5x1MiB",
                                          "1x"};
    for (j = 0; j < sizeof sim_env / sizeof sim_env[0]; ++j) {
      hcase *c = add_case(env_sim_case, "env DAO_SIM_DEVICES=%s", sim_env[j]);
      c->env_name = "DAO_SIM_DEVICES", c->env_value = sim_env[j];
    }
    static const char *const fault_env[] = {"alloc=0",
                                            "alloc=-1",
                                            "alloc=18446744073709551616",
                                            "alloc=pnan",
                                            "alloc=pinf",
                                            "alloc=p1e300",
                                            "alloc=p-1",
                                            "alloc=p1e-300,seed=-1",
                                            "alloc=p0.5,seed=18446744073709551616",
                                            "map=1e300",
                                            "copy=p",
                                            "alloc=1,alloc=2"};
    for (j = 0; j < sizeof fault_env / sizeof fault_env[0]; ++j) {
      hcase *c = add_case(env_alloc_case, "env DAO_FAULT_INJECT=%s", fault_env[j]);
      c->env_name = "DAO_FAULT_INJECT", c->env_value = fault_env[j], c->place = 1, c->variant = 1;
    }
  }
  /* Size arguments. */
  for (i = 0; i < ALLOC_SETUPS; ++i)
    for (place = 0; place < 2; ++place)
      for (j = 0; j < HOSTILE_SIZES; ++j) {
        hcase *c;
        if (slow_under_asan(place, hostile_sizes[j], NULL)) continue;
        c = add_case(alloc_size_case, "alloc %s[%s] %s size=%zu", alloc_setups[i][0],
                     alloc_setups[i][1], place_name(place), hostile_sizes[j]);
        c->variant = (int)i, c->place = place, c->n = hostile_sizes[j];
        if (place == 1 && strcmp(alloc_setups[i][0], "caching") == 0) {
          c = add_case(alloc_size_case, "alloc %s[%s] %s stream size=%zu", alloc_setups[i][0],
                       alloc_setups[i][1], place_name(place), hostile_sizes[j]);
          c->variant = (int)i, c->place = place, c->n = hostile_sizes[j], c->m = 1;
        }
      }
  for (place = 0; place < 2; ++place)
    for (j = 0; j < HOSTILE_SIZES; ++j) {
      hcase *c;
      if (slow_under_asan(place, hostile_sizes[j], NULL)) continue;
      c = add_case(place_alloc_case, "dao_alloc %s size=%zu", place_name(place), hostile_sizes[j]);
      c->place = place, c->n = hostile_sizes[j];
    }
  for (i = 0; i < 4; ++i)
    for (j = 0; j < HOSTILE_SIZES; ++j) {
      static const char *const what[] = {"tiered_create budget", "tensor_create bytes",
                                         "tensor_write bytes", "tensor_read bytes"};
      hcase *c = add_case(tiered_size_case, "%s=%zu", what[i], hostile_sizes[j]);
      c->variant = (int)i, c->n = hostile_sizes[j];
    }
  for (j = 0; j < 3; ++j) {
    static const size_t near[] = {4095, 4097, 8192};
    hcase *c = add_case(tiered_size_case, "tensor_write bytes=%zu", near[j]);
    c->variant = 2, c->n = near[j];
    c = add_case(tiered_size_case, "tensor_read bytes=%zu", near[j]);
    c->variant = 3, c->n = near[j];
  }
  for (i = 0; i < 7; ++i) {
    static const char *const what[] = {
        "element_size", "shape[0]", "shape {n, 2^32}",        "max_buffers",
        "preallocate",  "ndim",     "collection element_size"};
    if (i == 5) continue;
    for (place = 0; place < 2; ++place)
      for (j = 0; j < HOSTILE_SIZES; ++j) {
        hcase *c;
        /* bytes of one buffer: element 4 x shape (x 2^32 for {n, 2^32}) */
        const size_t n = hostile_sizes[j];
        const size_t bytes = i == 2 ? (n > ((size_t)1 << 30) ? SIZE_MAX : n << 34) : n * 4;
        if (slow_under_asan(place, n == 0 ? 0 : bytes / 4 < n ? SIZE_MAX : bytes, NULL)) continue;
        c = add_case(recycle_size_case, "recycle %s %s=%zu", place_name(place), what[i],
                     hostile_sizes[j]);
        c->variant = (int)i, c->place = place, c->n = hostile_sizes[j], c->m = (size_t)1 << 32;
      }
  }
  {
    static const size_t more[] = {(size_t)1 << 20, ((size_t)1 << 20) + 1, 3, 4, 5};
    for (j = 0; j < 5; ++j) {
      hcase *c = add_case(recycle_size_case, "recycle cpu %s=%zu",
                          j < 2 ? "max_buffers" : "preallocate", more[j]);
      c->variant = j < 2 ? 3 : 4, c->n = more[j];
    }
  }
  {
    static const long ndims[] = {
        0, 1, -1, DAO_RECYCLE_MAX_DIMS, DAO_RECYCLE_MAX_DIMS + 1, INT_MAX, INT_MIN};
    for (j = 0; j < sizeof ndims / sizeof ndims[0]; ++j) {
      hcase *c = add_case(recycle_size_case, "recycle cpu ndim=%ld", ndims[j]);
      c->variant = 5, c->n = (size_t)ndims[j];
    }
  }
  {
    static const double timeouts[] = {
        0.0,      -0.0,      1e-300, 4.9e-324, 1e-9, 0.01,  -1e-300,
        -1,       -1e300,    1e9,    9.3e9,    1e18, 1e300, 1.7976931348623157e308,
        INFINITY, -INFINITY, NAN,    -NAN};
    for (i = 0; i < 3; ++i)
      for (j = 0; j < sizeof timeouts / sizeof timeouts[0]; ++j) {
        static const char *const what[] = {"acquire (free buffer)", "acquire (exhausted)",
                                           "take (empty)"};
        hcase *c = add_case(recycle_timeout_case, "recycle %s timeout=%g", what[i], timeouts[j]);
        c->variant = (int)i, c->d = timeouts[j];
        if (i > 0 && j < 6) c->d = timeouts[j]; /* short: times out */
      }
  }
  {
    static const long counts[] = {0,  1,       2,      DAO_SIM_MAX_DEVICES, DAO_SIM_MAX_DEVICES + 1,
                                  -1, INT_MAX, INT_MIN};
    for (j = 0; j < sizeof counts / sizeof counts[0]; ++j) {
      hcase *c = add_case(sim_configure_case, "sim_configure count=%ld", counts[j]);
      c->n = (size_t)counts[j], c->env_name = "DAO_SIM_DEVICES", c->env_value = "";
    }
    for (i = 1; i < 3; ++i)
      for (j = 0; j < HOSTILE_SIZES; ++j) {
        hcase *c = add_case(sim_configure_case, "sim_configure capacities[%zu]=%zu", i - 1,
                            hostile_sizes[j]);
        c->variant = (int)i, c->n = hostile_sizes[j], c->env_name = "DAO_SIM_DEVICES",
        c->env_value = "";
      }
  }
  for (i = 0; i < 2; ++i)
    for (j = 0; j < HOSTILE_SIZES; ++j) {
      hcase *c = add_case(memcpy_case, "memcpy_async %s bytes=%zu", i ? "sim stream" : "sync",
                          hostile_sizes[j]);
      c->variant = (int)i, c->n = hostile_sizes[j];
    }
  for (place = 0; place < 2; ++place) {
    for (j = 0; j < HOSTILE_SIZES; ++j) {
      hcase *c =
          add_case(whole_case, "whole %s total_size=%zu", place_name(place), hostile_sizes[j]);
      c->place = place, c->n = hostile_sizes[j];
      c = add_case(whole_case, "whole %s entry_size=%zu", place_name(place), hostile_sizes[j]);
      c->place = place, c->variant = 1, c->n = hostile_sizes[j];
      c = add_case(whole_case, "whole %s total_size=%zu entry_size=2^32", place_name(place),
                   hostile_sizes[j]);
      c->place = place, c->variant = 2, c->n = hostile_sizes[j], c->m = (size_t)1 << 32;
      c = add_case(whole_case, "whole %s gather/scatter count=%zu", place_name(place),
                   hostile_sizes[j]);
      c->place = place, c->variant = 3, c->n = hostile_sizes[j];
    }
    {
      static const int64_t idx[] = {0, 511, 512, -1, INT64_MAX, INT64_MIN, (int64_t)1 << 32};
      for (j = 0; j < sizeof idx / sizeof idx[0]; ++j) {
        hcase *c =
            add_case(whole_case, "whole %s index=%lld", place_name(place), (long long)idx[j]);
        c->place = place, c->variant = 4, c->n = (size_t)idx[j];
      }
    }
  }
  {
    static const long ints[] = {-1, 2, 3, 64, 1000, INT_MAX, INT_MIN};
    for (j = 0; j < sizeof ints / sizeof ints[0]; ++j) {
      hcase *c = add_case(enum_case, "enum and device values %ld", ints[j]);
      c->n = (size_t)ints[j];
    }
  }
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  size_t i, run = 0, failed = 0;
  const char *v = getenv("HOSTILE_VERBOSE");
  verbose = v != NULL && strcmp(v, "1") == 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (filter == NULL && check_key_coverage() != 0) ++failed;
  build_cases();
  for (i = 0; i < case_count;) {
    /* Cases that set the environment need a fresh process each; the others
     * run in groups of GROUP, and a group that fails runs again case by case. */
    size_t end = i, j;
    if (filter != NULL && strstr(cases[i].label, filter) == NULL) {
      ++i;
      continue;
    }
    while (end < case_count && end - i < GROUP && cases[end].env_name == NULL &&
           (filter == NULL || strstr(cases[end].label, filter) != NULL))
      ++end;
    if (end == i) end = i + 1;
    run += end - i;
    if (end - i == 1 || run_group(i, end) != 0)
      for (j = i; j < end; ++j)
        if (run_child(&cases[j]) != 0) ++failed;
    i = end;
  }
  printf("hostile numbers: %zu cases run, %zu failed\n", run, failed);
  free(cases);
  return failed == 0 ? 0 : 1;
}
