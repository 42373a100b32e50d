/* A timer and a posted callback on an evloop, dispatched with a boost.
 * cc ex.c $(pkg-config --cflags --libs evloop) */
#include <errno.h>
#include <evloop.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int ticks;

static void on_tick(evl_t *l, void *arg, int status) {   /* holds the GVL */
  (void)l, (void)arg;
  if (status == 0) atomic_fetch_add(&ticks, 1);
  else if (status != ECANCELED) fprintf(stderr, "timer: %s\n", evl_strerror(status));
}

static void on_post(evl_t *l, void *arg, int status) {
  (void)arg;
  if (status == 0) printf("posted callback, GVL held: %d\n",
                          gvl_thread_holds(evl_gvl_thread(l)));
}

int main(void) {
  gvl_t *g = gvl_create(NULL);
  evl_config_t cfg = {.prio = EVL_PRIO_BOOST};
  evl_t *l = g ? evl_start(g, &cfg) : NULL;
  evl_id_t id;
  int rc;
  if (l == NULL) return 1;
  evl_timer(l, 10, 10, 0, on_tick, NULL, &id);
  evl_post(l, on_post, NULL, NULL);
  usleep(100000);
  if ((rc = evl_cancel(l, id)) != 0)
    fprintf(stderr, "evl_cancel: %s\n", evl_strerror(rc));
  evl_destroy(l);                         /* stops: every registration ends */
  rc = evl_post(l = NULL, on_post, NULL, NULL);   /* EINVAL: no loop */
  printf("%d ticks; evl_post(NULL): %s\n", atomic_load(&ticks), evl_err_name(rc));
  return gvl_destroy(g);
}
