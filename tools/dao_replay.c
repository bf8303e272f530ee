/*
 * dao replay TRACE: runs a trace's allocations and frees through any
 * strategy and config on any place, over the public API, and reports
 * whether it fits, the peak reserved memory, fragmentation, system calls
 * and time (and the simulated driver time on a SIM device). Also the
 * engine of `dao plan`, which runs it in child processes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "dao_history.h"
#include "dao_tool.h"

#define EXIT_DOES_NOT_FIT 3

typedef struct stream_map {
  uint32_t *ids;
  dao_stream *streams;
  size_t count, capacity;
} stream_map;

/* The replay's stream for a trace stream id (NULL for 0 or off devices). */
static dao_stream stream_for(stream_map *m, dao_place place, int device, uint32_t id) {
  size_t i;
  dao_stream s = NULL;
  if (id == 0 || !device) return NULL;
  for (i = 0; i < m->count; ++i)
    if (m->ids[i] == id) return m->streams[i];
  if (m->count == m->capacity) {
    size_t cap = m->capacity != 0 ? m->capacity * 2 : 16;
    uint32_t *ids = (uint32_t *)realloc(m->ids, cap * sizeof *ids);
    dao_stream *streams;
    if (ids == NULL) return NULL;
    m->ids = ids;
    streams = (dao_stream *)realloc(m->streams, cap * sizeof *streams);
    if (streams == NULL) return NULL;
    m->streams = streams;
    m->capacity = cap;
  }
  if (dao_stream_create(place, &s) != DAO_OK) return NULL; /* the default stream then */
  m->ids[m->count] = id;
  m->streams[m->count++] = s;
  return s;
}

static void fail(dao_replay_result *r, dao_status s, const char *call) {
  r->status = s;
  snprintf(r->message, sizeof r->message, "%s: %s: %s", call, dao_status_string(s),
           dao_last_error());
}

/* The SIM capacity to use when none was given: the recorded one of the
   first allocator on a device, else 64 x the max load (at least 1 GiB). */
static uint64_t default_capacity(const dao_trace *t, uint64_t max_load) {
  size_t i;
  uint64_t cap = max_load * 64;
  for (i = 0; i < t->allocator_count; ++i) {
    const dao_tr_allocator *a = &t->allocators[i];
    if (a->capacity != 0 && (strncmp(a->place, "sim", 3) == 0 || strncmp(a->place, "cuda", 4) == 0))
      return a->capacity;
  }
  return cap < ((uint64_t)1 << 30) ? (uint64_t)1 << 30 : cap;
}

int dao_replay_run(const dao_trace *t, const dao_replay_options *o, dao_replay_result *r) {
  dao_allocator *a = NULL;
  dao_status s;
  void **ptrs = NULL;
  stream_map streams;
  size_t i;
  int device = o->place.kind == DAO_PLACE_SIM || o->place.kind == DAO_PLACE_CUDA;
  double start;
  int rc = 0;

  memset(r, 0, sizeof *r);
  memset(&streams, 0, sizeof streams);
  dao_history_max_load(t, o->allocator, &r->max_load, NULL);
  if (o->sim) {
    size_t caps[64];
    int n = o->place.device + 1, k;
    r->capacity = o->capacity != 0 ? o->capacity : default_capacity(t, r->max_load);
    if (n > 64 || r->capacity > SIZE_MAX) {
      r->setup_failed = 1;
      fail(r, DAO_ERR_INVALID_ARGUMENT, "sim place");
      return 1;
    }
    for (k = 0; k < n; ++k) caps[k] = (size_t)r->capacity;
    s = dao_sim_configure(n, caps);
    if (s != DAO_OK) {
      r->setup_failed = 1;
      fail(r, s, "dao_sim_configure");
      return 1;
    }
  }
  s = dao_allocator_create(o->place, o->strategy, o->config, &a);
  if (s != DAO_OK) {
    r->setup_failed = 1;
    fail(r, s, "dao_allocator_create");
    return 1;
  }
  ptrs = (void **)calloc(t->count != 0 ? t->count : 1, sizeof *ptrs);
  if (ptrs == NULL) {
    r->setup_failed = 1;
    fail(r, DAO_ERR_OUT_OF_MEMORY, "host memory for the replay");
    dao_allocator_destroy(a);
    return 1;
  }
  r->fits = 1;
  start = dao_tool_now();
  for (i = 0; i < t->count; ++i) {
    const dao_tr_record *rec = &t->records[i];
    if (o->allocator != 0 && rec->alloc != o->allocator) continue;
    if (rec->kind == DAO_TR_ALLOC) {
      if (rec->req == 0) continue;
      if (rec->req > SIZE_MAX) {
        r->fits = 0;
        r->failed_line = rec->line;
        r->failed_size = rec->req;
        fail(r, DAO_ERR_OUT_OF_MEMORY, "size");
        break;
      }
      s = dao_allocator_alloc(a, (size_t)rec->req,
                              stream_for(&streams, o->place, device, rec->stream), &ptrs[i]);
      if (s != DAO_OK) {
        r->fits = 0;
        r->failed_line = rec->line;
        r->failed_size = rec->req;
        fail(r, s, "dao_allocator_alloc");
        if (s != DAO_ERR_OUT_OF_MEMORY) rc = 1;
        break;
      }
      ++r->allocs;
    } else if (rec->kind == DAO_TR_FREE && ptrs[rec->match] != NULL) {
      s = dao_allocator_free(a, ptrs[rec->match]);
      if (s != DAO_OK) {
        r->fits = 0;
        rc = 1;
        r->failed_line = rec->line;
        fail(r, s, "dao_allocator_free");
        break;
      }
      ptrs[rec->match] = NULL;
      ++r->frees;
    } else if (rec->kind == DAO_TR_USE && device && ptrs[rec->match] != NULL) {
      dao_stream st = stream_for(&streams, o->place, device, rec->stream);
      if (st != NULL && dao_allocator_record_stream(a, ptrs[rec->match], st) == DAO_OK) ++r->uses;
    }
    if ((i & 0xFFFF) == 0)
      dao_history_progress("replaying: %.0f%%", 100.0 * (double)i / (double)t->count);
  }
  r->seconds = dao_tool_now() - start;
  dao_history_progress_done();
  r->stats.struct_size = sizeof r->stats;
  dao_allocator_get_stats(a, &r->stats);
  if (o->sim) {
    int op;
    for (op = 0; op < DAO_SIM_OP_COUNT; ++op) {
      dao_sim_cost c;
      memset(&c, 0, sizeof c);
      c.struct_size = sizeof c;
      if (dao_sim_get_cost(o->place.device, (dao_sim_op)op, &c) == DAO_OK) {
        r->sim_ns += c.ns;
        r->sim_calls += c.count;
      }
    }
  }
  for (i = 0; i < t->count; ++i)
    if (ptrs[i] != NULL) dao_allocator_free(a, ptrs[i]);
  free(ptrs);
  for (i = 0; i < streams.count; ++i) {
    dao_stream_synchronize(streams.streams[i]);
    dao_stream_destroy(streams.streams[i]);
  }
  free(streams.ids);
  free(streams.streams);
  dao_allocator_destroy(a);
  return rc;
}

void dao_usage_replay(FILE *out) {
  fputs("usage: dao replay TRACE [--place sim|sim:N|cpu|cuda:N] [--capacity SIZE]\n"
        "                  [--strategy S] [--config C] [--allocator ID] [--json]\n"
        "\n"
        "Runs the allocations and frees of TRACE (docs/trace-format.md) in file order\n"
        "through a new allocator (strategy S with config C; the place's default when\n"
        "not given) on the place (default sim:0), and reports whether every allocation\n"
        "succeeded, the peak of allocated and reserved memory, fragmentation, the\n"
        "system calls, the time taken and, on a SIM device, the simulated driver time.\n"
        "Sizes are the bytes asked for (`req`), so the chosen strategy rounds them.\n"
        "\n"
        "  --capacity SIZE  capacity of the SIM device (\"24GiB\"); default: the one\n"
        "                   recorded with the trace, else 64 x its max load\n"
        "  --allocator ID   replay only this allocator of the trace (default: all,\n"
        "                   as if they shared one device)\n"
        "  --json           one JSON object on stdout\n"
        "\n"
        "Exit status: 0 it fits, 3 an allocation failed for lack of memory, 1 another\n"
        "library failure, 2 a bad command line or trace file.\n",
        out);
}

static void print_text(const char *path, const dao_trace *t, const dao_replay_options *o,
                       const char *place_text, const dao_replay_result *r) {
  char b1[32], b2[32], b3[32];
  const char *strategy = o->strategy != NULL ? o->strategy : "default";
  double frag = r->stats.peak_reserved_bytes != 0 ? 1.0 - (double)r->stats.peak_allocated_bytes /
                                                              (double)r->stats.peak_reserved_bytes
                                                  : 0.0;
  dao_tool_format_bytes((double)(r->max_load), b1, sizeof b1);
  printf("trace:          %s (%zu records, max load %s)\n", path, t->count, b1);
  if (r->capacity != 0) dao_tool_format_bytes((double)(r->capacity), b2, sizeof b2);
  printf("replayed on:    %s, %s strategy%s%s%s\n", place_text, strategy,
         o->config != NULL ? " (" : "", o->config != NULL ? o->config : "",
         o->config != NULL ? ")" : "");
  if (o->sim) printf("capacity:       %s\n", b2);
  if (r->fits) {
    printf("fits:           yes (%llu allocations, %llu frees)\n", (unsigned long long)r->allocs,
           (unsigned long long)r->frees);
  } else {
    dao_tool_format_bytes((double)(r->failed_size), b3, sizeof b3);
    printf("fits:           no: allocation of %s on line %u failed after %llu allocations\n"
           "                (%s)\n",
           b3, r->failed_line, (unsigned long long)r->allocs, r->message);
  }
  dao_tool_format_bytes((double)(r->stats.peak_allocated_bytes), b1, sizeof b1);
  dao_tool_format_bytes((double)(r->stats.peak_reserved_bytes), b2, sizeof b2);
  printf("peak allocated: %s\n", b1);
  printf("peak reserved:  %s (%.3fx the max load)\n", b2,
         r->max_load != 0 ? (double)r->stats.peak_reserved_bytes / (double)r->max_load : 0.0);
  printf("fragmentation:  %.1f%% of the peak reserved memory never allocated at once\n",
         100.0 * frag);
  printf("system calls:   %llu allocations, %llu frees\n",
         (unsigned long long)r->stats.system_alloc_count,
         (unsigned long long)r->stats.system_free_count);
  printf("time:           %.3f s (%.0f ns per operation)\n", r->seconds,
         r->allocs + r->frees != 0 ? r->seconds * 1e9 / (double)(r->allocs + r->frees) : 0.0);
  if (o->sim)
    printf("driver (sim):   %llu calls, %.3f ms simulated\n", (unsigned long long)r->sim_calls,
           (double)r->sim_ns / 1e6);
}

static void print_json(const char *path, const dao_replay_options *o, const char *place_text,
                       const dao_replay_result *r) {
  printf("{\"trace\":");
  dao_tool_json_string(stdout, path);
  printf(",\"place\":");
  dao_tool_json_string(stdout, place_text);
  printf(",\"strategy\":");
  if (o->strategy != NULL) dao_tool_json_string(stdout, o->strategy);
  else printf("null");
  printf(",\"config\":");
  if (o->config != NULL) dao_tool_json_string(stdout, o->config);
  else printf("null");
  printf(",\"capacity\":%llu,\"fits\":%s", (unsigned long long)r->capacity,
         r->fits ? "true" : "false");
  if (!r->fits) {
    printf(",\"failed_line\":%u,\"failed_size\":%llu,\"message\":", r->failed_line,
           (unsigned long long)r->failed_size);
    dao_tool_json_string(stdout, r->message);
  }
  printf(",\"allocs\":%llu,\"frees\":%llu,\"uses\":%llu,\"max_load\":%llu,"
         "\"peak_allocated\":%llu,\"peak_reserved\":%llu,\"fragmentation\":%.6f,"
         "\"system_allocs\":%llu,\"system_frees\":%llu,\"seconds\":%.6f",
         (unsigned long long)r->allocs, (unsigned long long)r->frees, (unsigned long long)r->uses,
         (unsigned long long)r->max_load, (unsigned long long)r->stats.peak_allocated_bytes,
         (unsigned long long)r->stats.peak_reserved_bytes,
         r->stats.peak_reserved_bytes != 0
             ? 1.0 - (double)r->stats.peak_allocated_bytes / (double)r->stats.peak_reserved_bytes
             : 0.0,
         (unsigned long long)r->stats.system_alloc_count,
         (unsigned long long)r->stats.system_free_count, r->seconds);
  if (o->sim)
    printf(",\"sim_driver_calls\":%llu,\"sim_driver_ns\":%llu", (unsigned long long)r->sim_calls,
           (unsigned long long)r->sim_ns);
  printf("}\n");
}

int dao_main_replay(int argc, char **argv) {
  const char *path = NULL, *place_text = "sim:0";
  dao_replay_options o;
  dao_replay_result r;
  dao_trace t;
  int json = 0, i, rc;
  memset(&o, 0, sizeof o);
  for (i = 0; i < argc; ++i) {
    const char *arg = argv[i];
    if (dao_tool_is_help(arg)) {
      dao_usage_replay(stdout);
      return 0;
    } else if (strcmp(arg, "--json") == 0) {
      json = 1;
    } else if (strcmp(arg, "--place") == 0 || strcmp(arg, "--capacity") == 0 ||
               strcmp(arg, "--strategy") == 0 || strcmp(arg, "--config") == 0 ||
               strcmp(arg, "--allocator") == 0) {
      const char *value;
      if (i + 1 >= argc)
        return dao_tool_bad_usage("replay: missing value after", arg, "dao replay --help");
      value = argv[++i];
      if (strcmp(arg, "--place") == 0) place_text = value;
      else if (strcmp(arg, "--strategy") == 0) o.strategy = value;
      else if (strcmp(arg, "--config") == 0) o.config = value;
      else if (strcmp(arg, "--capacity") == 0) {
        if (dao_history_parse_size(value, &o.capacity) != 0 || o.capacity == 0)
          return dao_tool_bad_usage("replay: --capacity: not a size (e.g. 16GiB)", value,
                                    "dao replay --help");
      } else {
        char *end = NULL;
        unsigned long id = strtoul(value, &end, 10);
        if (end == value || *end != '\0' || id == 0 || id > UINT32_MAX)
          return dao_tool_bad_usage("replay: --allocator: not an allocator id", value,
                                    "dao replay --help");
        o.allocator = (uint32_t)id;
      }
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return dao_tool_bad_usage("replay: unknown option", arg, "dao replay --help");
    } else if (path == NULL) {
      path = arg;
    } else {
      return dao_tool_bad_usage("replay: unexpected argument", arg, "dao replay --help");
    }
  }
  if (path == NULL)
    return dao_tool_bad_usage("replay: no trace file given; usage", "dao replay TRACE",
                              "dao replay --help");
  if (dao_history_parse_place(place_text, &o.place, &o.sim) != 0)
    return dao_tool_bad_usage("replay: --place: not a place (sim, sim:N, cpu, cuda:N)", place_text,
                              "dao replay --help");
  if (o.capacity != 0 && !o.sim)
    return dao_tool_bad_usage("replay: --capacity applies to SIM places only (elsewhere use "
                              "--config max_pool=SIZE); place",
                              place_text, "dao replay --help");
  rc = dao_history_load_trace(path, &t, json);
  if (rc != 0) return rc;
  rc = dao_replay_run(&t, &o, &r);
  if (rc != 0 && r.setup_failed) {
    fprintf(stderr, "dao: replay: %s\n", r.message);
    dao_trace_free(&t);
    /* a config or strategy the library refuses is bad input */
    return r.status == DAO_ERR_INVALID_ARGUMENT ? DAO_TOOL_EXIT_USAGE : DAO_TOOL_EXIT_FAILURE;
  }
  if (json) print_json(path, &o, place_text, &r);
  else print_text(path, &t, &o, place_text, &r);
  dao_trace_free(&t);
  if (rc != 0) {
    fprintf(stderr, "dao: replay: %s\n", r.message);
    return DAO_TOOL_EXIT_FAILURE;
  }
  return r.fits ? 0 : EXIT_DOES_NOT_FIT;
}
