/*
 * dao: the libdao command-line program.
 *
 *   dao info [--json]   what this machine offers: every place kind, its
 *                       devices and memory, and the allocator that dao_alloc()
 *                       would use there
 *   dao convert ...     import other tools' memory histories (dao_convert.c)
 *   dao view ...        a memory history or snapshot as one HTML page (dao_view.c)
 *   dao replay ...      run a trace through any strategy and config (dao_replay.c)
 *   dao plan ...        the smallest capacity a trace runs on (dao_plan.c)
 *   dao --help | --version | help [command]
 *
 * Written in C99 against the public API only, so it is also an example of it.
 * Exit status: 0 on success, 1 when a library call failed (the status and
 * dao_last_error() go to stderr), 2 for a bad command line.
 */
#include <dao.h>

#include "dao_history.h"
#include "dao_tool.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

static const char *program = "dao";
static int failures = 0; /* library calls that failed during this run */

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

/* "DAO_ERR_INVALID_ARGUMENT" for a status, from the library's one list. */
static const char *status_name(dao_status s) {
  switch ((int)s) {
#define DAO_TOOL_STATUS_CASE_(name, value, text) \
  case value: return #name;
    DAO_STATUS_LIST(DAO_TOOL_STATUS_CASE_)
#undef DAO_TOOL_STATUS_CASE_
    default: return "unknown status";
  }
}

static char *copy_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *out = (char *)malloc(n);
  if (out == NULL) {
    fprintf(stderr, "%s: out of host memory\n", program);
    exit(EXIT_FAILURE);
  }
  memcpy(out, s, n);
  return out;
}

/* Reports a failed library call on stderr and returns a copy of its message
   (for the JSON output); the caller frees it. */
static char *report_failure(dao_status s, const char *call) {
  const char *message = dao_last_error();
  ++failures;
  fprintf(stderr, "%s: %s: %s (%s): %s\n", program, call, status_name(s), dao_status_string(s),
          message);
  return copy_string(message);
}

/* The variable among `DAO_<base>_<KIND>` and `DAO_<base>` that the library
   reads for `kind` (the first one set and not empty), or NULL. */
static const char *env_source(const char *base, dao_place_kind kind, char *buf, size_t buf_size) {
  const char *name = dao_place_kind_name(kind);
  const char *value;
  size_t i, n;
  snprintf(buf, buf_size, "%s_%s", base, name);
  n = strlen(buf);
  for (i = 0; i < n; ++i) buf[i] = (char)toupper((unsigned char)buf[i]);
  value = getenv(buf);
  if (value != NULL && value[0] != '\0') return buf;
  value = getenv(base);
  if (value != NULL && value[0] != '\0') {
    snprintf(buf, buf_size, "%s", base);
    return buf;
  }
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* dao info                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct device_info {
  int ok;
  size_t free_bytes;
  size_t total_bytes;
  char *error;     /* message when !ok */
  char *effective; /* effective config of the default strategy here, or NULL */
  char *effective_error;
} device_info;

typedef struct kind_info {
  dao_place_kind kind;
  const char *name;
  const char *backend;
  int count_ok;
  int count;
  char *count_error;
  const char *strategy;
  const char *config;
  char strategy_source[64];
  char config_source[64];
  char *config_error;
  const char *profile; /* SIM only: the cost profile in effect, or NULL */
  char profile_source[64];
  device_info *devices;
} kind_info;

/* Effective config of `strategy` with `config` on `place`: created on a
   temporary allocator, which reserves nothing unless the config asks for an
   initial pool, and destroyed again. */
static void effective_config(dao_place place, const char *strategy, const char *config,
                             device_info *d) {
  dao_allocator *a = NULL;
  const char *effective = NULL;
  char call[96];
  dao_status s;
  snprintf(call, sizeof call, "dao_allocator_create(%s:%d, \"%s\")",
           dao_place_kind_name(place.kind), place.device, strategy);
  s = dao_allocator_create(place, strategy, config, &a);
  if (s != DAO_OK) {
    d->effective_error = report_failure(s, call);
    return;
  }
  s = dao_allocator_info(a, NULL, NULL, &effective);
  if (s != DAO_OK) {
    d->effective_error = report_failure(s, "dao_allocator_info");
  } else {
    d->effective = copy_string(effective);
  }
  s = dao_allocator_destroy(a);
  if (s != DAO_OK) report_failure(s, "dao_allocator_destroy");
}

static void gather_kind(dao_place_kind kind, kind_info *k) {
  char call[96];
  dao_status s;
  int i;
  char var[64];
  const char *source;
  int effective_failed = 0;

  memset(k, 0, sizeof *k);
  k->kind = kind;
  k->name = dao_place_kind_name(kind);

  snprintf(call, sizeof call, "dao_place_device_count(%s)", k->name);
  s = dao_place_device_count(kind, &k->count);
  if (s == DAO_OK) {
    k->count_ok = 1;
  } else {
    k->count = 0;
    k->count_error = report_failure(s, call);
  }
  k->backend = dao_place_backend_description(kind);

  snprintf(call, sizeof call, "dao_place_default_config(%s)", k->name);
  s = dao_place_default_config(kind, &k->strategy, &k->config);
  if (s != DAO_OK) {
    k->config_error = report_failure(s, call);
    k->strategy = NULL;
    k->config = NULL;
  } else {
    source = env_source("DAO_ALLOCATOR", kind, var, sizeof var);
    snprintf(k->strategy_source, sizeof k->strategy_source, "%s",
             source != NULL ? source : "built-in default");
    source = env_source("DAO_ALLOC_CONF", kind, var, sizeof var);
    snprintf(k->config_source, sizeof k->config_source, "%s",
             source != NULL ? source : "built-in default");
  }

  /* The SIM cost profile. Asked only when the count was: both fix the SIM
     configuration, and a malformed environment is reported once, above. */
  if (kind == DAO_PLACE_SIM && k->count_ok) {
    s = dao_sim_get_profile(&k->profile);
    if (s != DAO_OK) {
      free(report_failure(s, "dao_sim_get_profile"));
      k->profile = NULL;
    } else {
      source = getenv("DAO_SIM_COSTS");
      snprintf(k->profile_source, sizeof k->profile_source, "%s",
               source != NULL && source[0] != '\0' ? "DAO_SIM_COSTS" : "built-in default");
    }
  }

  if (k->count <= 0) return;
  k->devices = (device_info *)calloc((size_t)k->count, sizeof(device_info));
  if (k->devices == NULL) {
    fprintf(stderr, "%s: out of host memory\n", program);
    exit(EXIT_FAILURE);
  }
  for (i = 0; i < k->count; ++i) {
    dao_place place;
    device_info *d = &k->devices[i];
    place.kind = kind;
    place.device = i;
    snprintf(call, sizeof call, "dao_place_memory_info(%s:%d)", k->name, i);
    s = dao_place_memory_info(place, &d->free_bytes, &d->total_bytes);
    if (s == DAO_OK) {
      d->ok = 1;
    } else {
      d->error = report_failure(s, call);
    }
    /* A failure here means a malformed environment: report it once. */
    if (k->strategy != NULL && !effective_failed) {
      effective_config(place, k->strategy, k->config, d);
      effective_failed = d->effective == NULL;
    }
  }
}

static void free_kind(kind_info *k) {
  int i;
  for (i = 0; k->devices != NULL && i < k->count; ++i) {
    free(k->devices[i].error);
    free(k->devices[i].effective);
    free(k->devices[i].effective_error);
  }
  free(k->devices);
  free(k->count_error);
  free(k->config_error);
}

static void print_kind_text(const kind_info *k) {
  int i;
  int uniform = 1; /* every device has the same effective config */
  char total[32], avail[32], label[32];

  if (k->count_ok) {
    printf("%s: %d device%s\n", k->name, k->count, k->count == 1 ? "" : "s");
  } else {
    printf("%s: device count unknown (see the error above)\n", k->name);
  }
  printf("  backend:   %s\n", k->backend);
  if (k->strategy != NULL) {
    printf("  default:   strategy %s (%s), config %s", k->strategy, k->strategy_source,
           k->config[0] != '\0' ? k->config : "(defaults)");
    if (k->config[0] != '\0') printf(" (%s)", k->config_source);
    putchar('\n');
  } else {
    printf("  default:   unknown (see the error above)\n");
  }
  if (k->kind == DAO_PLACE_SIM) {
    if (k->profile != NULL) printf("  profile:   %s (%s)\n", k->profile, k->profile_source);
    else printf("  profile:   unknown (see the error above)\n");
  }
  if (k->count <= 0) return;

  /* The effective config, once for the kind unless it differs between
     devices (chunk_size depends on a device's capacity). */
  for (i = 1; i < k->count; ++i) {
    const char *a = k->devices[0].effective, *b = k->devices[i].effective;
    if (a == NULL || b == NULL || strcmp(a, b) != 0) uniform = 0;
  }
  if (k->devices[0].effective == NULL) {
    printf("  effective: cannot create the default allocator: %s\n",
           k->devices[0].effective_error != NULL ? k->devices[0].effective_error
                                                 : "see the error above");
  } else if (uniform) {
    printf("  effective: %s\n", k->devices[0].effective);
  }
  for (i = 0; i < k->count; ++i) {
    const device_info *d = &k->devices[i];
    snprintf(label, sizeof label, "%s:%d", k->name, i);
    if (d->ok) {
      dao_tool_format_bytes((double)d->total_bytes, total, sizeof total);
      dao_tool_format_bytes((double)d->free_bytes, avail, sizeof avail);
      printf("  %-10s %s total, %s free", label, total, avail);
    } else {
      printf("  %-10s memory unknown: %s", label, d->error);
    }
    if (!uniform && d->effective != NULL) printf("; effective %s", d->effective);
    putchar('\n');
  }
}

static void print_kind_json(const kind_info *k) {
  int i;
  printf("    {\"kind\": ");
  dao_tool_json_string(stdout, k->name);
  printf(", \"id\": %d, \"device_count\": ", (int)k->kind);
  if (k->count_ok) {
    printf("%d", k->count);
  } else {
    printf("null, \"error\": ");
    dao_tool_json_string(stdout, k->count_error);
  }
  printf(",\n     \"backend\": ");
  dao_tool_json_string(stdout, k->backend);
  printf(",\n     \"default_strategy\": ");
  if (k->strategy != NULL) dao_tool_json_string(stdout, k->strategy);
  else printf("null");
  printf(", \"default_config\": ");
  if (k->config != NULL) dao_tool_json_string(stdout, k->config);
  else printf("null");
  if (k->kind == DAO_PLACE_SIM) {
    printf(", \"cost_profile\": ");
    if (k->profile != NULL) dao_tool_json_string(stdout, k->profile);
    else printf("null");
  }
  printf(",\n     \"devices\": [");
  for (i = 0; i < k->count; ++i) {
    const device_info *d = &k->devices[i];
    printf("%s\n       {\"device\": %d", i == 0 ? "" : ",", i);
    if (d->ok) {
      printf(", \"total_bytes\": %lu, \"free_bytes\": %lu", (unsigned long)d->total_bytes,
             (unsigned long)d->free_bytes);
    } else {
      printf(", \"error\": ");
      dao_tool_json_string(stdout, d->error);
    }
    printf(", \"effective_config\": ");
    if (d->effective != NULL) {
      dao_tool_json_string(stdout, d->effective);
    } else {
      printf("null");
      if (d->effective_error != NULL) {
        printf(", \"effective_config_error\": ");
        dao_tool_json_string(stdout, d->effective_error);
      }
    }
    printf("}");
  }
  printf("%s]}", k->count > 0 ? "\n     " : "");
}

static int command_info(int json) {
  kind_info kinds[DAO_PLACE_KIND_COUNT];
  int k;
  unsigned lib = dao_version_number();

  for (k = 0; k < DAO_PLACE_KIND_COUNT; ++k) gather_kind((dao_place_kind)k, &kinds[k]);

  if (json) {
    printf("{\n  \"version\": ");
    dao_tool_json_string(stdout, dao_version_string());
    printf(",\n  \"version_number\": %u,\n  \"header_version\": ", lib);
    dao_tool_json_string(stdout, DAO_VERSION_STRING);
    printf(",\n  \"kinds\": [\n");
    for (k = 0; k < DAO_PLACE_KIND_COUNT; ++k) {
      print_kind_json(&kinds[k]);
      printf("%s\n", k + 1 < DAO_PLACE_KIND_COUNT ? "," : "");
    }
    printf("  ]\n}\n");
  } else {
    printf("libdao %s (built with headers %s)\n", dao_version_string(), DAO_VERSION_STRING);
    if (lib != (unsigned)DAO_VERSION_NUMBER) {
      printf("warning: the library (%u) and the headers (%u) differ in version\n", lib,
             (unsigned)DAO_VERSION_NUMBER);
    }
    for (k = 0; k < DAO_PLACE_KIND_COUNT; ++k) {
      putchar('\n');
      print_kind_text(&kinds[k]);
    }
  }
  for (k = 0; k < DAO_PLACE_KIND_COUNT; ++k) free_kind(&kinds[k]);
  if (fflush(stdout) != 0) {
    fprintf(stderr, "%s: cannot write the output\n", program);
    return EXIT_FAILURE;
  }
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* ------------------------------------------------------------------------ */
/* Command line                                                             */
/* ------------------------------------------------------------------------ */

static void usage(FILE *out) {
  fprintf(out,
          "Usage: %s <command> [options]\n"
          "       %s --help | --version\n"
          "\n"
          "libdao %s: memory for heterogeneous machines.\n"
          "\n"
          "Commands:\n"
          "  info [--json]   Show the library version and every place kind: its\n"
          "                  devices, their total and free memory, the backend that\n"
          "                  serves it, and the allocator strategy and config that\n"
          "                  dao_alloc() uses there.\n"
          "  convert INPUT -o TRACE\n"
          "                  Convert a lifetime CSV, a PyTorch memory snapshot\n"
          "                  (pickle) or an ops JSONL trace into a libdao trace.\n"
          "  view TRACE|SNAPSHOT.json [-o memory.html]\n"
          "                  Write one self-contained HTML page: memory over time,\n"
          "                  segments and blocks at any moment, the largest\n"
          "                  allocations at the peak.\n"
          "  replay TRACE    Run a trace through any strategy and config: whether it\n"
          "                  fits, peaks, fragmentation, system calls and time.\n"
          "  plan TRACE      The smallest device capacity a trace runs on, for the\n"
          "                  default and each strategy and config listed.\n"
          "  help [command]  Show this help, or the help of a command.\n"
          "\n"
          "Options:\n"
          "  -h, --help      Show this help and exit.\n"
          "  -V, --version   Show the version and exit.\n"
          "\n"
          "Environment (see docs/environment.md):\n"
          "  DAO_SIM_DEVICES            simulated devices, e.g. 2x512MiB or 1GiB,256MiB\n"
          "  DAO_SIM_COSTS              cost profile of the simulated devices: none (no\n"
          "                             driver costs, the default) or h200 (an H200's\n"
          "                             granularity and simulated driver time)\n"
          "  DAO_ALLOCATOR[_<KIND>]     default strategy: buddy, caching or system\n"
          "                             (built in: buddy for CPU, caching elsewhere)\n"
          "  DAO_ALLOC_CONF[_<KIND>]    default config, e.g. DAO_ALLOC_CONF_SIM=max_pool=1GiB\n"
          "  DAO_NO_CACHING=1           caching allocators give every free back at once\n"
          "  DAO_CUDA_LIBRARY           CUDA driver library to load (libcuda.so.1)\n"
          "  (KIND: CPU, CUDA, CUDA_PINNED, CUDA_MANAGED or SIM)\n"
          "\n"
          "Exit status: 0 on success, 1 when a library call failed, 2 for a bad\n"
          "command line.\n",
          program, program, dao_version_string());
}

static void usage_info(FILE *out) {
  fprintf(out,
          "Usage: %s info [--json]\n"
          "\n"
          "Show the libdao version and, for every place kind (cpu, cuda,\n"
          "cuda_pinned, cuda_managed, sim): the device count, the backend and why it\n"
          "has no devices when it has none, each device's total and free memory, and\n"
          "the strategy and config of the kind's default allocator, both as set and\n"
          "in effect; for sim, also the cost profile in effect (DAO_SIM_COSTS).\n"
          "\n"
          "Options:\n"
          "  --json       Print the same as one JSON object.\n"
          "  -h, --help   Show this help and exit.\n",
          program);
}

static int main_info(int argc, char **argv) {
  int json = 0;
  int i;
  for (i = 0; i < argc; ++i) {
    if (dao_tool_is_help(argv[i])) {
      usage_info(stdout);
      return EXIT_SUCCESS;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (argv[i][0] == '-') {
      return dao_tool_bad_usage("info: unknown option", argv[i], "dao info --help");
    } else {
      return dao_tool_bad_usage("info: unexpected argument", argv[i], "dao info --help");
    }
  }
  return command_info(json);
}

int main(int argc, char **argv) {
  const char *command;
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  command = argv[1];
  if (dao_tool_is_help(command)) {
    usage(stdout);
    return EXIT_SUCCESS;
  }
  if (strcmp(command, "-V") == 0 || strcmp(command, "--version") == 0) {
    if (argc > 2) return dao_tool_bad_usage("unexpected argument", argv[2], "dao --help");
    printf("dao %s (libdao %s)\n", DAO_VERSION_STRING, dao_version_string());
    return EXIT_SUCCESS;
  }
  if (strcmp(command, "help") == 0) {
    if (argc == 2) {
      usage(stdout);
      return EXIT_SUCCESS;
    }
    if (argc == 3 && strcmp(argv[2], "info") == 0) {
      usage_info(stdout);
      return EXIT_SUCCESS;
    }
    if (argc == 3 && strcmp(argv[2], "convert") == 0) {
      dao_usage_convert(stdout);
      return EXIT_SUCCESS;
    }
    if (argc == 3 && strcmp(argv[2], "view") == 0) {
      dao_usage_view(stdout);
      return EXIT_SUCCESS;
    }
    if (argc == 3 && strcmp(argv[2], "replay") == 0) {
      dao_usage_replay(stdout);
      return EXIT_SUCCESS;
    }
    if (argc == 3 && strcmp(argv[2], "plan") == 0) {
      dao_usage_plan(stdout);
      return EXIT_SUCCESS;
    }
    if (argc == 3 && strcmp(argv[2], "help") == 0) {
      usage(stdout);
      return EXIT_SUCCESS;
    }
    return dao_tool_bad_usage("help: unknown command", argv[2], "dao --help");
  }
  if (strcmp(command, "info") == 0) return main_info(argc - 2, argv + 2);
  if (strcmp(command, "convert") == 0) return dao_command_convert(argc - 2, argv + 2);
  if (strcmp(command, "view") == 0) return dao_command_view(argc - 2, argv + 2);
  if (strcmp(command, "replay") == 0) return dao_main_replay(argc - 2, argv + 2);
  if (strcmp(command, "plan") == 0) return dao_main_plan(argc - 2, argv + 2);
  if (command[0] == '-') return dao_tool_bad_usage("unknown option", command, "dao --help");
  return dao_tool_bad_usage("unknown command", command, "dao --help");
}
