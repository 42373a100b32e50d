/* SPDX-License-Identifier: MIT */
/* Builds against an installed gvloop: evaluates a Tcl script on the bridge
 * (Tcl only, so that no display is needed). */
#include <tkbridge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  gvl_t *g = gvl_create(NULL);
  evl_config_t ec = {0};
  tkb_config_t tc = {0};
  tkb_t *tk = NULL;
  char *res = NULL;
  if (g == NULL || tkb_evl_config(&ec)) return 1;
  evl_t *l = evl_start(g, &ec);
  tc.no_tk = 1;
  if (l == NULL || tkb_start(l, &tc, &tk) || tkb_eval(tk, "expr {6 * 7}", &res) ||
      strcmp(res, "42") != 0)
    return 1;
  free(res);
  if (tkb_destroy(tk) || evl_destroy(l) || gvl_destroy(g)) return 1;
  puts("tkbridge consumer ok");
  return 0;
}
