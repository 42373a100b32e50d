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

int main(int argc, char **argv) {
  static const tcase_t cases[] = {{"lazy", t_lazy}, {NULL, NULL}};
  return run_case(cases, argc, argv);
}
