/* bench_tiered: the command line (--traces, --only, --quick, --help). */
#define _GNU_SOURCE /* clock_gettime, getline, S_ISDIR under -std=c99 */

#include "bench_tiered.h"

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [--traces DIR] [--only LIST] [--quick]\n"
          "       %s --stream [--device sim|cuda] [--scale N] [--weight-mib N]\n"
          "       %s --graph [--graph-tensors N] [--graph-kernels N]\n"
          "\n"
          "Replays tensor access traces (JSON lines: alloc / op / free) as kernels of a\n"
          "tiered pool on dao_place_sim(0) with the CPU as host tier, at device budgets of\n"
          "25 %%, 50 %% and 75 %% of each trace's peak live bytes, for the policies belady,\n"
          "lru and size_aware; prints bytes moved each way against a reference simulation\n"
          "of the furthest-next-use rule, the copy time hidden by prefetch with a link of\n"
          "%s, and the executor's overhead per kernel when everything fits.\n"
          "\n"
          "  --traces DIR  every *.jsonl in DIR/ops, or in DIR itself when it has no ops/;\n"
          "                default %s\n"
          "  --only LIST   only these traces, comma-separated: a file name without .jsonl\n"
          "                (mlp_adam_5steps) or its part before the first '_' (mlp)\n"
          "  --quick       only the smallest trace (ctest smoke test)\n"
          "  --stream      instead: cyclic weight streaming (16 weights, 3 passes, a budget\n"
          "                of 4) over the SIM model of the H200's link, pageable and pinned\n"
          "                host tiers, staged or not; prints the link statistics\n"
          "  --device D    sim (default: the SIM link model) or cuda (cuda:0, its own link;\n"
          "                the targets are then against the H200's measured rates)\n"
          "  --scale N     the H200 link's rates divided by N (default 8; sim only)\n"
          "  --config KV   appended to every --stream case's config (staging_chunk=1MiB)\n"
          "  --weight-mib N  MiB per streamed weight (default 16)\n"
          "  --graph       instead: the executor's cost per kernel with many live tensors\n"
          "  --graph-tensors N  live tensors (default 10000)\n"
          "  --graph-kernels N  kernels per round (default 100000)\n"
          "  --help        this text\n"
          "\n"
          "Exit status: 0 every run completed with the right results (targets never fail a\n"
          "run), 1 an error or a wrong result, 2 bad flags, 77 nothing to run (no traces,\n"
          "or this libdao has no tiered pools).\n",
          prog, prog, prog, LINK_BANDWIDTH, DAO_TRACES_DIR);
}

void parse_options(int argc, char **argv, options *o) {
  const char *prog = argv[0];
  memset(o, 0, sizeof *o);
  o->traces = DAO_TRACES_DIR;
  o->scale = 8;
  o->extra = "";
  o->weight_mib = 16;
  o->graph_tensors = 10000;
  o->graph_kernels = 100000;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout, prog);
      exit(0);
    }
    if (strcmp(arg, "--quick") == 0) {
      o->quick = 1;
      continue;
    }
    if (strcmp(arg, "--stream") == 0) {
      o->stream = 1;
      continue;
    }
    if (strcmp(arg, "--graph") == 0) {
      o->graph = 1;
      continue;
    }
    static const char *const valued[] = {"--traces",     "--only",          "--scale",
                                         "--weight-mib", "--graph-tensors", "--graph-kernels",
                                         "--device",     "--config"};
    const char *value = NULL;
    const char *flag =
        match_valued_flag(prog, argc, argv, &i, valued, sizeof valued / sizeof valued[0], &value);
    if (flag == NULL) bad_flag(prog, "unknown argument '%s'", arg);
    if (*value == '\0') bad_flag(prog, "%s needs a value", flag);
    if (strcmp(flag, "--config") == 0) {
      o->extra = value;
    } else if (strcmp(flag, "--device") == 0) {
      if (strcmp(value, "cuda") == 0) o->cuda = 1;
      else if (strcmp(value, "sim") != 0) bad_flag(prog, "--device must be sim or cuda");
    } else if (strcmp(flag, "--scale") == 0) {
      o->scale = parse_count(prog, flag, value, 1, 1000);
    } else if (strcmp(flag, "--weight-mib") == 0) {
      o->weight_mib = parse_count(prog, flag, value, 1, 4096);
    } else if (strcmp(flag, "--graph-tensors") == 0) {
      o->graph_tensors = parse_count(prog, flag, value, 1, 1000000);
    } else if (strcmp(flag, "--graph-kernels") == 0) {
      o->graph_kernels = parse_count(prog, flag, value, 1, 100000000);
    } else if (strcmp(flag, "--traces") == 0) {
      o->traces = value;
      o->traces_given = 1;
    } else {
      o->only = value;
    }
  }
}
