/* SPDX-License-Identifier: MIT */
/* Tk on the evloop's loop thread; a host command called from a button.
 * cc ex.c $(pkg-config --cflags --libs tkbridge) */
#define _POSIX_C_SOURCE 200809L  /* nanosleep under -std=c11 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <tkbridge.h>
#include <time.h>

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, us % 1000000 * 1000};
  nanosleep(&ts, NULL);
}

static atomic_int async_done;

static int hello(tkb_t *tk, void *arg, int argc, const char *const *argv,
                 tkb_result_t *res) {       /* loop thread, GVL held */
  (void)tk, (void)arg;
  if (argc != 2) {
    tkb_result_set(res, "usage: hello name");
    return EINVAL;
  }
  printf("hello, %s\n", argv[1]);
  return 0;
}

static void on_done(tkb_t *tk, int status, const char *result, void *arg) {
  (void)tk, (void)arg;                      /* loop thread, GVL held */
  printf("async: %s -> %s\n", tkb_err_name(status), result);
  atomic_store(&async_done, 1);
}

int main(void) {
  gvl_t *g = gvl_create(NULL);
  evl_config_t ec = {.prio = EVL_PRIO_BOOST};
  tkb_config_t tc = {.prio = TKB_PRIO_BOOST};
  tkb_stats_t st;
  tkb_t *tk;
  char *res = NULL;
  int rc;
  if (g == NULL || tkb_evl_config(&ec) != 0) return 1;
  evl_t *l = evl_start(g, &ec);
  if (l == NULL || (rc = tkb_start(l, &tc, &tk)) != 0) {
    fprintf(stderr, "tkb_start: %s\n", l ? tkb_strerror(rc) : "evl_start failed");
    return 1;
  }
  tkb_command_create(tk, "hello", hello, NULL);
  tkb_eval_async(tk, "expr {6 * 7}", on_done, NULL);
  rc = tkb_eval(tk, "button .b -text Hi -command {hello world}; pack .b;"
                    " after 500 {.b invoke; destroy .}; tkwait window .", &res);
  if (rc == TKB_ETCL) fprintf(stderr, "Tcl error: %s\n", res);
  free(res);
  for (int i = 0; i < 5000 && !atomic_load(&async_done); i++) sleep_us(1000);
  rc = tkb_command_delete(tk, "nosuch");    /* TKB_ENOCMD */
  tkb_stats(tk, &st);
  printf("%llu host command calls; deleting nosuch: %s\n",
         (unsigned long long)st.cmd_calls, tkb_strerror(rc));
  tkb_destroy(tk);
  evl_destroy(l);
  return gvl_destroy(g);
}
