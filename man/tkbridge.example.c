/* Tk on the evloop's loop thread; a host command called from a button.
 * cc ex.c $(pkg-config --cflags --libs tkbridge) */
#include <errno.h>
#include <tkbridge.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(void) {
  gvl_t *g = gvl_create(NULL);
  evl_config_t ec = {.prio = EVL_PRIO_BOOST};
  tkb_config_t tc = {.prio = TKB_PRIO_BOOST};
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
  rc = tkb_eval(tk, "button .b -text Hi -command {hello world}; pack .b;"
                    " after 500 {.b invoke; destroy .}; tkwait window .", &res);
  if (rc == TKB_ETCL) fprintf(stderr, "Tcl error: %s\n", res);
  free(res);
  tkb_destroy(tk);
  evl_destroy(l);
  return gvl_destroy(g);
}
