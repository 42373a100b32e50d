/* SPDX-License-Identifier: MIT */
/* A timer, a posted callback, thread-pool work and a file read on an
 * evloop, dispatched with a boost.
 * cc ex.c $(pkg-config --cflags --libs evloop) */
#define _POSIX_C_SOURCE 200809L  /* nanosleep under -std=c11 */
#include <errno.h>
#include <evloop.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, us % 1000000 * 1000};
  nanosleep(&ts, NULL);
}

static atomic_int ticks, done;

static void on_tick(evl_t *l, void *arg, int status) {   /* holds the GVL */
  (void)l, (void)arg;
  if (status == 0) atomic_fetch_add(&ticks, 1);
  else if (status != ECANCELED) fprintf(stderr, "timer: %s\n", evl_strerror(status));
}

static void on_post(evl_t *l, void *arg, int status) {
  (void)arg;
  if (status == 0) printf("posted callback, GVL held: %d\n",
                          gvl_thread_holds(evl_gvl_thread(l)));
  atomic_fetch_add(&done, 1);
}

static void crunch(void *arg) { *(long *)arg = 6 * 7; }  /* pool thread, no GVL */

static void on_crunched(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) printf("work: %ld\n", *(long *)arg);
  atomic_fetch_add(&done, 1);
}

static void on_file(evl_t *l, void *arg, int status, char *data, size_t len) {
  (void)l, (void)arg;
  if (status == 0) printf("read %zu bytes\n", len);
  else printf("read: %s (%s)\n", evl_strerror(status), evl_err_name(status));
  free(data);
  atomic_fetch_add(&done, 1);
}

int main(void) {
  gvl_t *g = gvl_create(NULL);
  evl_config_t cfg = {.prio = EVL_PRIO_BOOST};
  evl_t *l = g ? evl_start(g, &cfg) : NULL;
  evl_stats_t st;
  evl_id_t id;
  long answer = 0;
  int rc;
  if (l == NULL) return 1;
  evl_timer(l, 10, 10, 0, on_tick, NULL, &id);
  evl_post(l, on_post, NULL, NULL);
  evl_work(l, crunch, 0, on_crunched, &answer, NULL);
  evl_read_file(l, "/etc/hostname", 0, 1 << 20, on_file, NULL, NULL);
  for (int i = 0; i < 5000 && atomic_load(&done) < 3; i++) sleep_us(1000);
  sleep_us(50000);
  if ((rc = evl_cancel(l, id)) != 0)
    fprintf(stderr, "evl_cancel: %s\n", evl_strerror(rc));
  evl_stop(l);                            /* every registration gets its last call */
  rc = evl_post(l, on_post, NULL, NULL);  /* refused: EVL_ESTOPPED */
  evl_stats(l, &st);
  printf("%d ticks, %llu callbacks; evl_post after evl_stop: %s\n", atomic_load(&ticks),
         (unsigned long long)st.dispatched, evl_err_name(rc));
  evl_destroy(l);
  return gvl_destroy(g);
}
