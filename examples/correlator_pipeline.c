/*
 * correlator_pipeline: a streaming pipeline with the shapes of a radio
 * telescope correlator, on a collection of recycle pools.
 *
 *   fill ──"visibilities"──▶ operate ×2 ──"grids"──▶ writer
 *                            (each takes a "flags" buffer too)
 *
 *  - The fill thread acquires a visibility buffer (complex float
 *    [64 channels][351 baselines of 27 antennas][4 polarisations], 702 KiB),
 *    fills it with a pattern derived from the integration number, and
 *    submits it. With one fill thread, the pool's sequence number of a
 *    buffer is its integration number.
 *  - Two operate threads take visibility buffers. Each acquires a flags
 *    buffer (uint8, same shape) and flags the samples whose amplitude
 *    exceeds a threshold (there is a strong RFI channel in every
 *    integration), then grids the unflagged XX and YY samples into a grid
 *    buffer (complex float [256][256]): each baseline lands on the (u,v) cell
 *    of its antenna positions scaled by the channel's frequency, and its
 *    complex conjugate on (-u,-v). The grid goes on to the writer; the
 *    visibility and flags buffers go back to their free lists.
 *  - The writer takes grids and checks each one against a recomputation from
 *    the integration number, and that every integration arrives exactly once.
 *
 * No buffer is copied and, once each pool has created its buffers, nothing
 * is allocated. Recycled buffers hold what their last user wrote: the
 * operate threads clear each grid before gridding into it.
 *
 * Shutdown goes stage by stage, upstream first, because a closed pool
 * refuses acquires: when the fill thread is done, "visibilities" is closed,
 * and the operate threads drain its queue and leave on DAO_ERR_CLOSED; then
 * "grids" is closed and the writer leaves the same way; then the whole
 * collection is closed and destroyed. Every wait has a timeout, and any
 * error closes the collection, so the program cannot hang.
 *
 *     DAO_SIM_DEVICES=2x64MiB ./correlator_pipeline [INTEGRATIONS] [--place cpu|sim]
 *
 * INTEGRATIONS defaults to 2000. The buffers live on SIM device 0 by
 * default, as a GPU pipeline would keep them in device memory (SIM memory
 * is host memory, so the threads can read and write it here). It exits with
 * status 0 only if every integration arrived once with the right content, 1
 * otherwise, 2 for bad arguments.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <dao.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The shapes. */
#define NCHAN 64
#define NANT 27
#define NBASE (NANT * (NANT - 1) / 2) /* 351 cross-correlations */
#define NPOL 4
#define NSAMPLES ((size_t)NCHAN * NBASE * NPOL)
#define GRID 256

/* Pool sizes: enough for every thread to hold one buffer with some queued. */
#define VIS_BUFFERS 8
#define FLAG_BUFFERS 4
#define GRID_BUFFERS 8

/* Samples with |v| > FLAG_AMPLITUDE are flagged. */
#define FLAG_AMPLITUDE 10.0f

/* Longest any thread waits for a buffer before it gives up, in seconds. */
#define WAIT_SECONDS 30.0

/* Integration numbers travel in the grid as a float: exact below 2^24. */
#define MAX_INTEGRATIONS 16000000ul

typedef struct cfloat {
  float re, im;
} cfloat;

/* A complex float must be 8 bytes (two floats, no padding). */
typedef char cfloat_is_8_bytes[sizeof(cfloat) == 8 ? 1 : -1];

/* ------------------------------------------------------------------------ */
/* The science: deterministic, shared by the pipeline and the writer's check */

static int base_u[NBASE], base_v[NBASE]; /* baseline b -> (u, v) in grid cells */

/* Antenna k stands at ((5k mod 27) - 13, (11k mod 27) - 13): distinct x for
   every antenna, so no baseline has u = 0 and none lands on cell (0, 0). */
static void setup_baselines(void) {
  int a1, a2, b = 0;
  for (a1 = 0; a1 < NANT; ++a1) {
    for (a2 = a1 + 1; a2 < NANT; ++a2) {
      base_u[b] = ((5 * a2) % NANT) - ((5 * a1) % NANT);
      base_v[b] = ((11 * a2) % NANT) - ((11 * a1) % NANT);
      ++b;
    }
  }
}

static uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/* The channel hit by interference in an integration. */
static size_t rfi_channel(uint32_t integration) { return (integration * 7u + 3u) % NCHAN; }

/* Sample (c, b, p) of an integration: small integers, so that sums in the
   grid are exact in float. The RFI channel has amplitude 50. */
static void fill_visibilities(uint32_t integration, cfloat *vis) {
  const size_t rfi = rfi_channel(integration);
  const uint32_t key = mix32(integration * 0x9e3779b9u + 1u);
  size_t i;
  for (i = 0; i < NSAMPLES; ++i) {
    if (i / ((size_t)NBASE * NPOL) == rfi) {
      vis[i].re = 40.0f;
      vis[i].im = -30.0f;
    } else {
      uint32_t h = mix32(key ^ (uint32_t)i);
      vis[i].re = (float)((int)(h & 15u) - 8);
      vis[i].im = (float)((int)((h >> 4) & 15u) - 8);
    }
  }
}

/* 1 where |v| > FLAG_AMPLITUDE. Returns the number of flagged samples. */
static size_t flag_visibilities(const cfloat *vis, uint8_t *flags) {
  const float limit = FLAG_AMPLITUDE * FLAG_AMPLITUDE;
  size_t i, flagged = 0;
  for (i = 0; i < NSAMPLES; ++i) {
    flags[i] = (uint8_t)(vis[i].re * vis[i].re + vis[i].im * vis[i].im > limit);
    flagged += flags[i];
  }
  return flagged;
}

/* Stokes I (XX + YY) of the unflagged samples onto the (u, v) grid, with the
   conjugate at (-u, -v). Cell (0, 0) is never gridded to: it carries the
   integration number, as the header of a real pipeline would. */
static void grid_visibilities(uint32_t integration, const cfloat *vis, const uint8_t *flags,
                              cfloat *grid) {
  size_t c, b;
  int p;
  memset(grid, 0, sizeof(cfloat) * GRID * GRID);
  for (c = 0; c < NCHAN; ++c) {
    for (b = 0; b < NBASE; ++b) {
      /* u scales with frequency: channel c observes at (64 + c) / 64 of the
         lowest. |u|, |v| <= 26 * 127 / 64 = 51 cells from the centre. */
      int u = base_u[b] * (NCHAN + (int)c) / NCHAN;
      int v = base_v[b] * (NCHAN + (int)c) / NCHAN;
      cfloat *cell = &grid[(GRID / 2 + v) * GRID + (GRID / 2 + u)];
      cfloat *mirror = &grid[(GRID / 2 - v) * GRID + (GRID / 2 - u)];
      for (p = 0; p < NPOL; p += NPOL - 1) { /* XX (0) and YY (3) */
        size_t i = (c * NBASE + b) * NPOL + (size_t)p;
        if (flags[i]) continue;
        cell->re += vis[i].re;
        cell->im += vis[i].im;
        mirror->re += vis[i].re;
        mirror->im -= vis[i].im;
      }
    }
  }
  grid[0].re = (float)integration;
  grid[0].im = 0.0f;
}

/* ------------------------------------------------------------------------ */
/* Errors: the first one is kept, and it closes the collection so that every
   thread wakes up and leaves.                                              */

static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static int errors = 0;
static char first_error[512];

static void fail(dao_collection *collection, const char *what, dao_status s, const char *why) {
  pthread_mutex_lock(&error_lock);
  if (errors++ == 0) {
    if (s != DAO_OK) {
      snprintf(first_error, sizeof first_error, "%s: %s: %s", what, dao_status_string(s), why);
    } else {
      snprintf(first_error, sizeof first_error, "%s: %s", what, why);
    }
  }
  pthread_mutex_unlock(&error_lock);
  dao_collection_close(collection);
}

static int error_count(void) {
  int n;
  pthread_mutex_lock(&error_lock);
  n = errors;
  pthread_mutex_unlock(&error_lock);
  return n;
}

/* A lookup that cannot fail in this program: the pools were just added. */
static dao_recycle_pool *pool_named(dao_collection *collection, const char *name) {
  dao_recycle_pool *pool = NULL;
  dao_status s = dao_collection_find(collection, name, &pool);
  if (s != DAO_OK) fail(collection, "dao_collection_find", s, dao_last_error());
  return pool;
}

/* The data of a buffer, after checking that it has the expected size. */
static void *data_of(dao_collection *collection, dao_buffer *buffer, size_t bytes) {
  void *data = NULL;
  size_t have = 0;
  dao_status s = dao_buffer_size(buffer, NULL, &have);
  if (s == DAO_OK) s = dao_buffer_data(buffer, &data);
  if (s != DAO_OK) {
    fail(collection, "dao_buffer_size/data", s, dao_last_error());
    return NULL;
  }
  if (have != bytes) {
    fail(collection, "dao_buffer_size", DAO_OK, "a buffer of the wrong size");
    return NULL;
  }
  return data;
}

static void release(dao_collection *collection, dao_buffer *buffer) {
  dao_status s;
  if (buffer == NULL) return;
  s = dao_buffer_release(buffer);
  if (s != DAO_OK) fail(collection, "dao_buffer_release", s, dao_last_error());
}

/* ------------------------------------------------------------------------ */
/* The threads                                                              */

typedef struct fill_job {
  dao_collection *collection;
  uint32_t integrations;
} fill_job;

static void *fill_main(void *arg) {
  fill_job *job = (fill_job *)arg;
  dao_recycle_pool *vis_pool = pool_named(job->collection, "visibilities");
  uint32_t n;
  for (n = 0; vis_pool != NULL && n < job->integrations; ++n) {
    dao_buffer *vis = NULL;
    cfloat *data;
    dao_status s = dao_recycle_acquire(vis_pool, WAIT_SECONDS, &vis);
    if (s == DAO_ERR_CLOSED) break; /* something failed downstream */
    if (s != DAO_OK) {
      fail(job->collection, "fill: dao_recycle_acquire(visibilities)", s, dao_last_error());
      break;
    }
    data = (cfloat *)data_of(job->collection, vis, NSAMPLES * sizeof(cfloat));
    if (data == NULL) {
      release(job->collection, vis);
      break;
    }
    fill_visibilities(n, data);
    /* Submit moves our reference into the queue: vis is not ours any more. */
    s = dao_recycle_submit(vis_pool, vis);
    if (s != DAO_OK) {
      fail(job->collection, "fill: dao_recycle_submit(visibilities)", s, dao_last_error());
      release(job->collection, vis);
      break;
    }
  }
  return NULL;
}

typedef struct operate_job {
  dao_collection *collection;
  size_t integrations; /* done by this thread */
  size_t flagged;      /* samples flagged by this thread */
} operate_job;

static void *operate_main(void *arg) {
  operate_job *job = (operate_job *)arg;
  dao_collection *collection = job->collection;
  dao_recycle_pool *vis_pool = pool_named(collection, "visibilities");
  dao_recycle_pool *flag_pool = pool_named(collection, "flags");
  dao_recycle_pool *grid_pool = pool_named(collection, "grids");
  if (vis_pool == NULL || flag_pool == NULL || grid_pool == NULL) return NULL;
  for (;;) {
    dao_buffer *vis = NULL, *flags = NULL, *grid = NULL;
    const cfloat *vis_data;
    uint8_t *flag_data;
    cfloat *grid_data;
    uint64_t sequence = 0;
    dao_status s = dao_recycle_take(vis_pool, WAIT_SECONDS, &vis);
    if (s == DAO_ERR_CLOSED) break; /* the fill thread is done and the queue is empty */
    if (s != DAO_OK) {
      fail(collection, "operate: dao_recycle_take(visibilities)", s, dao_last_error());
      break;
    }
    s = dao_buffer_sequence(vis, &sequence); /* = the integration number */
    if (s != DAO_OK) fail(collection, "dao_buffer_sequence", s, dao_last_error());
    if (s == DAO_OK) s = dao_recycle_acquire(flag_pool, WAIT_SECONDS, &flags);
    if (s == DAO_OK) s = dao_recycle_acquire(grid_pool, WAIT_SECONDS, &grid);
    if (s != DAO_OK) {
      if (s != DAO_ERR_CLOSED)
        fail(collection, "operate: dao_recycle_acquire", s, dao_last_error());
      release(collection, flags);
      release(collection, vis);
      break;
    }
    vis_data = (const cfloat *)data_of(collection, vis, NSAMPLES * sizeof(cfloat));
    flag_data = (uint8_t *)data_of(collection, flags, NSAMPLES);
    grid_data = (cfloat *)data_of(collection, grid, (size_t)GRID * GRID * sizeof(cfloat));
    if (vis_data == NULL || flag_data == NULL || grid_data == NULL) {
      release(collection, grid);
      release(collection, flags);
      release(collection, vis);
      break;
    }

    job->flagged += flag_visibilities(vis_data, flag_data);
    grid_visibilities((uint32_t)sequence, vis_data, flag_data, grid_data);
    ++job->integrations;

    /* The visibilities and flags are done with: back to their free lists,
       where the fill thread and the other operate thread pick them up. */
    release(collection, flags);
    release(collection, vis);
    s = dao_recycle_submit(grid_pool, grid);
    if (s != DAO_OK) {
      fail(collection, "operate: dao_recycle_submit(grids)", s, dao_last_error());
      release(collection, grid);
      break;
    }
  }
  return NULL;
}

typedef struct writer_job {
  dao_collection *collection;
  uint32_t integrations; /* expected */
  uint32_t arrived;      /* distinct integrations that arrived with the right grid */
  uint32_t duplicates, wrong;
} writer_job;

static void *writer_main(void *arg) {
  writer_job *job = (writer_job *)arg;
  dao_collection *collection = job->collection;
  dao_recycle_pool *grid_pool = pool_named(collection, "grids");
  uint8_t *seen = (uint8_t *)calloc(job->integrations, 1);
  cfloat *vis = (cfloat *)malloc(NSAMPLES * sizeof(cfloat));
  uint8_t *flags = (uint8_t *)malloc(NSAMPLES);
  cfloat *expected = (cfloat *)malloc((size_t)GRID * GRID * sizeof(cfloat));
  if (seen == NULL || vis == NULL || flags == NULL || expected == NULL) {
    fail(collection, "writer", DAO_OK, "out of host memory for the check");
    grid_pool = NULL;
  }
  while (grid_pool != NULL) {
    dao_buffer *grid = NULL;
    const cfloat *data;
    float tag;
    uint32_t n;
    dao_status s = dao_recycle_take(grid_pool, WAIT_SECONDS, &grid);
    if (s == DAO_ERR_CLOSED) break; /* the operate threads are done */
    if (s != DAO_OK) {
      fail(collection, "writer: dao_recycle_take(grids)", s, dao_last_error());
      break;
    }
    data = (const cfloat *)data_of(collection, grid, (size_t)GRID * GRID * sizeof(cfloat));
    if (data == NULL) {
      release(collection, grid);
      break;
    }
    tag = data[0].re;
    n = tag >= 0.0f && tag < (float)job->integrations ? (uint32_t)tag : UINT32_MAX;
    if (n == UINT32_MAX || (float)n != tag) {
      ++job->wrong;
      if (job->wrong == 1) printf("  writer: a grid with no valid integration number (%g)\n", tag);
    } else if (seen[n]) {
      ++job->duplicates;
      if (job->duplicates == 1)
        printf("  writer: integration %lu arrived twice\n", (unsigned long)n);
    } else {
      /* Recompute the whole chain for integration n and compare. */
      fill_visibilities(n, vis);
      flag_visibilities(vis, flags);
      grid_visibilities(n, vis, flags, expected);
      if (memcmp(expected, data, (size_t)GRID * GRID * sizeof(cfloat)) == 0) {
        seen[n] = 1;
        ++job->arrived;
      } else {
        ++job->wrong;
        if (job->wrong == 1)
          printf("  writer: the grid of integration %lu is wrong\n", (unsigned long)n);
      }
    }
    release(collection, grid);
  }
  free(expected);
  free(flags);
  free(vis);
  free(seen);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *human(double bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [INTEGRATIONS] [--place cpu|sim]\n"
          "\n"
          "Runs INTEGRATIONS (default 2000) correlator integrations through\n"
          "fill -> flag+grid (2 threads) -> writer on recycle pools, checks every\n"
          "grid at the end of the chain, and prints throughput and pool statistics.\n"
          "  --place cpu|sim  where the buffers live (default sim: SIM device 0)\n",
          prog);
}

static int add_pool(dao_collection *collection, const char *name, dao_place place,
                    size_t element_size, int ndim, const size_t *shape, size_t max_buffers) {
  dao_status s = dao_collection_add(collection, name, place, element_size, ndim, shape, max_buffers,
                                    0, NULL, NULL);
  if (s != DAO_OK) {
    printf("dao_collection_add(\"%s\"): %s: %s\n", name, dao_status_string(s), dao_last_error());
    return 0;
  }
  return 1;
}

static int print_pool_stats(dao_collection *collection, const char *name) {
  dao_recycle_pool *pool = NULL;
  dao_recycle_stats st;
  char peaks[64];
  dao_status s = dao_collection_find(collection, name, &pool);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (s == DAO_OK) s = dao_recycle_get_stats(pool, &st);
  if (s != DAO_OK) {
    printf("  %s: %s: %s\n", name, dao_status_string(s), dao_last_error());
    return 0;
  }
  snprintf(peaks, sizeof peaks, "%llu/%llu/%llu", (unsigned long long)st.peak_free,
           (unsigned long long)st.peak_queued, (unsigned long long)st.peak_held);
  printf("%-13s %7llu %16s %9llu %9llu %9llu %7llu (%8.1f) %7llu (%8.1f) %8llu\n", name,
         (unsigned long long)st.created, peaks, (unsigned long long)st.acquired,
         (unsigned long long)st.submitted, (unsigned long long)st.taken,
         (unsigned long long)st.acquire_waits, (double)st.acquire_wait_ns * 1e-6,
         (unsigned long long)st.take_waits, (double)st.take_wait_ns * 1e-6,
         (unsigned long long)st.timeouts);
  /* Every buffer must be home: nothing held, nothing queued. */
  return st.held == 0 && st.queued == 0 && st.free == st.created;
}

int main(int argc, char **argv) {
  const size_t vis_shape[3] = {NCHAN, NBASE, NPOL};
  const size_t grid_shape[2] = {GRID, GRID};
  unsigned long integrations = 2000;
  dao_place place = dao_place_sim(0);
  dao_collection *collection = NULL;
  fill_job filler;
  operate_job operators[2];
  writer_job writer;
  pthread_t fill_thread, operate_threads[2], writer_thread;
  size_t used_before = 0, used_during = 0, used_after = 0, flagged;
  double t0, seconds;
  char b1[32], b2[32], b3[32];
  int i, ok = 1, have_count = 0;
  dao_status s;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout, argv[0]);
      return 0;
    } else if (strcmp(argv[i], "--place") == 0 && i + 1 < argc) {
      ++i;
      if (strcmp(argv[i], "cpu") == 0) {
        place = dao_place_cpu();
      } else if (strcmp(argv[i], "sim") == 0) {
        place = dao_place_sim(0);
      } else {
        fprintf(stderr, "%s: --place takes cpu or sim, not '%s'\n", argv[0], argv[i]);
        return 2;
      }
    } else if (!have_count && argv[i][0] >= '0' && argv[i][0] <= '9') {
      char *end = NULL;
      integrations = strtoul(argv[i], &end, 10);
      if (*end != '\0' || integrations == 0 || integrations > MAX_INTEGRATIONS) {
        fprintf(stderr, "%s: INTEGRATIONS must be a number from 1 to %lu, not '%s'\n", argv[0],
                MAX_INTEGRATIONS, argv[i]);
        return 2;
      }
      have_count = 1;
    } else {
      fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[i]);
      usage(stderr, argv[0]);
      return 2;
    }
  }

  setup_baselines();
  printf("correlator_pipeline: libdao %s, %lu integrations, buffers on %s:%d\n",
         dao_version_string(), integrations, dao_place_kind_name(place.kind), place.device);
  printf("  visibilities  complex float [%d channels][%d baselines][%d pols], %s, up to %d\n",
         NCHAN, NBASE, NPOL, human((double)(NSAMPLES * sizeof(cfloat)), b1, sizeof b1),
         VIS_BUFFERS);
  printf("  flags         uint8 [%d][%d][%d], %s, up to %d\n", NCHAN, NBASE, NPOL,
         human((double)NSAMPLES, b1, sizeof b1), FLAG_BUFFERS);
  printf("  grids         complex float [%d][%d], %s, up to %d\n", GRID, GRID,
         human((double)(GRID * GRID * sizeof(cfloat)), b1, sizeof b1), GRID_BUFFERS);
  printf("  threads: 1 fill, 2 operate (flag + grid), 1 writer (checks every grid)\n");

  s = dao_used(place, &used_before);
  if (s != DAO_OK) {
    printf("dao_used(%s:%d): %s: %s\n", dao_place_kind_name(place.kind), place.device,
           dao_status_string(s), dao_last_error());
    return 1;
  }
  s = dao_collection_create(&collection);
  if (s != DAO_OK) {
    printf("dao_collection_create: %s: %s\n", dao_status_string(s), dao_last_error());
    return 1;
  }
  if (!add_pool(collection, "visibilities", place, sizeof(cfloat), 3, vis_shape, VIS_BUFFERS) ||
      !add_pool(collection, "flags", place, sizeof(uint8_t), 3, vis_shape, FLAG_BUFFERS) ||
      !add_pool(collection, "grids", place, sizeof(cfloat), 2, grid_shape, GRID_BUFFERS)) {
    dao_collection_destroy(collection);
    return 1;
  }

  filler.collection = collection;
  filler.integrations = (uint32_t)integrations;
  memset(operators, 0, sizeof operators);
  operators[0].collection = operators[1].collection = collection;
  memset(&writer, 0, sizeof writer);
  writer.collection = collection;
  writer.integrations = (uint32_t)integrations;

  t0 = now_seconds();
  if (pthread_create(&writer_thread, NULL, writer_main, &writer) != 0 ||
      pthread_create(&operate_threads[0], NULL, operate_main, &operators[0]) != 0 ||
      pthread_create(&operate_threads[1], NULL, operate_main, &operators[1]) != 0 ||
      pthread_create(&fill_thread, NULL, fill_main, &filler) != 0) {
    printf("pthread_create failed\n");
    return 1; /* cannot join what did not start; the OS takes the rest */
  }
  /* Stage by stage: a closed pool wakes its takers with DAO_ERR_CLOSED once
     its queue is empty, and refuses acquires, so close upstream first. */
  pthread_join(fill_thread, NULL);
  dao_recycle_close(pool_named(collection, "visibilities"));
  pthread_join(operate_threads[0], NULL);
  pthread_join(operate_threads[1], NULL);
  dao_recycle_close(pool_named(collection, "grids"));
  pthread_join(writer_thread, NULL);
  seconds = now_seconds() - t0;
  dao_collection_close(collection); /* "flags" too; closing twice is harmless */

  flagged = operators[0].flagged + operators[1].flagged;
  printf("\n%lu integrations in %.3f s: %.0f integrations/s, %.2f GB/s of visibilities\n",
         integrations, seconds, (double)integrations / seconds,
         (double)integrations * (double)(NSAMPLES * sizeof(cfloat)) / seconds * 1e-9);
  printf("operate threads: %lu and %lu integrations; %.2f %% of samples flagged "
         "(an RFI channel, and |v| > %.0f)\n",
         (unsigned long)operators[0].integrations, (unsigned long)operators[1].integrations,
         100.0 * (double)flagged / ((double)integrations * (double)NSAMPLES),
         (double)FLAG_AMPLITUDE);
  printf("writer: %lu of %lu integrations arrived exactly once with the right grid "
         "(%lu duplicates, %lu wrong)\n",
         (unsigned long)writer.arrived, integrations, (unsigned long)writer.duplicates,
         (unsigned long)writer.wrong);
  if (writer.arrived != integrations || writer.duplicates != 0 || writer.wrong != 0) ok = 0;

  printf("\npool statistics (dao_recycle_get_stats)\n");
  printf("%-13s %7s %16s %9s %9s %9s %18s %18s %8s\n", "pool", "created", "peak free/q/held",
         "acquired", "submitted", "taken", "acquire waits (ms)", "take waits (ms)", "timeouts");
  if (!print_pool_stats(collection, "visibilities")) ok = 0;
  if (!print_pool_stats(collection, "flags")) ok = 0;
  if (!print_pool_stats(collection, "grids")) ok = 0;
  printf("(peaks of the free list, the queue and the buffers held; waits: calls that had to\n"
         " wait, and in brackets the time they waited, summed over the threads)\n");

  dao_used(place, &used_during);
  s = dao_collection_destroy(collection);
  if (s != DAO_OK) {
    printf("dao_collection_destroy: %s: %s\n", dao_status_string(s), dao_last_error());
    ok = 0;
  }
  dao_used(place, &used_after);
  printf("\ndao_used(%s:%d): %s before, %s with the pools, %s after destroying the collection\n",
         dao_place_kind_name(place.kind), place.device, human((double)used_before, b1, sizeof b1),
         human((double)used_during, b2, sizeof b2), human((double)used_after, b3, sizeof b3));
  if (used_after != used_before) ok = 0;

  if (error_count() != 0) {
    printf("\n%d error%s; the first: %s\n", errors, errors == 1 ? "" : "s", first_error);
    ok = 0;
  }
  printf("%s\n", ok ? "OK: every integration arrived once, with the right content" : "FAILED");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
