/* A gate: a host function queued on a stream blocks there until the test
 * opens the gate, so that "work is pending" holds without depending on
 * timing. */
#ifndef DAO_TEST_GATE_H
#define DAO_TEST_GATE_H

#include <pthread.h>

typedef struct gate {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int entered;
  int open;
} gate;

static inline void gate_setup(gate *g) {
  pthread_mutex_init(&g->mutex, NULL);
  pthread_cond_init(&g->changed, NULL);
  g->entered = 0;
  g->open = 0;
}

/* Marks the gate entered and blocks until it is opened. */
static inline void gate_pass(gate *g) {
  pthread_mutex_lock(&g->mutex);
  g->entered = 1;
  pthread_cond_broadcast(&g->changed);
  while (!g->open) pthread_cond_wait(&g->changed, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
}

/* As a dao_host_fn: dao_launch_host_func(stream, gate_fn, &g). */
static inline void gate_fn(void *user_data) { gate_pass((gate *)user_data); }

static inline void gate_wait_entered(gate *g) {
  pthread_mutex_lock(&g->mutex);
  while (!g->entered) pthread_cond_wait(&g->changed, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
}

static inline void gate_open(gate *g) {
  pthread_mutex_lock(&g->mutex);
  g->open = 1;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->mutex);
}

static inline void gate_teardown(gate *g) {
  pthread_cond_destroy(&g->changed);
  pthread_mutex_destroy(&g->mutex);
}

#endif /* DAO_TEST_GATE_H */
