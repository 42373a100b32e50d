/* SPDX-License-Identifier: MIT */
/* An extension loaded by plugin_host.c: its gvloop calls resolve in the
 * host, which linked the static libraries. */
#include <gvl.h>
#include <stdio.h>
#include <tkbridge.h>

const char *plugin_versions(void);

const char *plugin_versions(void) {
  static char buf[96];
  gvl_t *g = gvl_create(NULL);
  if (!g || gvl_destroy(g)) return "gvl_create failed";
  snprintf(buf, sizeof buf, "gvl %s, evloop %s, tkbridge %s", gvl_version_string(),
           evl_version_string(), tkb_version_string());
  return buf;
}
