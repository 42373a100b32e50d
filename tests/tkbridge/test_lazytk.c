/* SPDX-License-Identifier: MIT */
/*
 * test_lazytk.c -- Tk is loaded when a bridge asks for it, not before.
 *
 * This program is linked to libtkbridge and Tcl only, as a host that wants
 * Tcl on its loop is: until a bridge starts Tk, neither libtk nor Xlib is
 * in the process; then Tk works as in wish, the bridge's -name included,
 * and a child interp gets it with `load {} Tk`.
 */
#include "tkb_test.h"

/* 1 when a library whose file name contains name is mapped. */
static int mapped(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  CHECK(f != NULL);
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}

static void t_lazy(void) {
  CHECK(!mapped("libtk8.6") && !mapped("libX11"));
  fx_t f;
  fx_start(&f, 1);
  fx_expect(f.tk, "expr {6 * 7}", "42");
  fx_expect(f.tk, "llength [info commands winfo]", "0");
  CHECK_RC(tkb_destroy(f.tk), 0);
  CHECK(!mapped("libtk8.6") && !mapped("libX11"));

  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.app_name = "lazyapp";
  CHECK_RC(tkb_start(f.l, &tc, &f.tk), 0);
  CHECK(mapped("libtk8.6") && mapped("libX11"));
  fx_expect(f.tk, "tk appname", "lazyapp");
  fx_expect(f.tk, "package vsatisfies [package present Tk] 8.6", "1");
  fx_expect(f.tk, "button .b -text hi; pack .b; update; winfo ismapped .b", "1");
  fx_expect(f.tk,
            "interp create c; load {} Tk c\n"
            "set r [c eval {label .l -text x; pack .l; update; winfo exists .l}]\n"
            "interp delete c; set r",
            "1");
  fx_stop(&f);
}

/* Tk bridges on two evloops at once (tkbridge.h), both started together
 * so that the two loads of Tk race: each has its own main window. */
typedef struct {
  fx_t f;
  const char *name;
} both_t;

static void *start_one(void *arg) {
  both_t *b = arg;
  b->f.g = gvl_create(NULL);
  CHECK(b->f.g != NULL);
  b->f.l = fx_loop(b->f.g);
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.app_name = b->name;
  CHECK_RC(tkb_start(b->f.l, &tc, &b->f.tk), 0);
  return NULL;
}

static void t_two_loops(void) {
  both_t b[2] = {{.name = "one"}, {.name = "two"}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, start_one, &b[i]) == 0);
  for (int i = 0; i < 2; i++) CHECK(pthread_join(th[i], NULL) == 0);
  for (int i = 0; i < 2; i++) {
    fx_expect(b[i].f.tk, "tk appname", b[i].name);
    fx_expect(b[i].f.tk, "button .b -text [tk appname]; pack .b; update; .b cget -text",
              b[i].name);
    fx_expect(b[i].f.tk, "winfo children .", ".b");
  }
  for (int i = 0; i < 2; i++) fx_stop(&b[i].f);
}

int main(int argc, char **argv) {
  static const tcase_t cases[] = {{"lazy", t_lazy}, {"two_loops", t_two_loops}, {NULL, NULL}};
  return run_case(cases, argc, argv);
}
