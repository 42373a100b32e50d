/*
 * tkb_host.c -- the notifier for a host that runs Tcl's own main loop on an
 * attached loop thread (tkb_notifier_bind), without a bridge.
 */
#include <errno.h>
#include <string.h>

#include "tkb_int.h"

int tkb_notifier_bind(evl_t *l) {
  if (l == NULL) return EINVAL;
  if (!evl_in_loop_thread(l)) return EPERM;
  int rc = tkb__ntf_install();
  if (rc != 0) return rc;
  return tkb__ntf_bind(l, NULL, NULL);
}

int tkb_notifier_stats(tkb_stats_t *out) {
  if (out == NULL) return EINVAL;
  tkb__ntf_stats_t ns;
  tkb__ntf_stats(&ns);
  memset(out, 0, sizeof(*out));
  out->ntf_waits = ns.waits;
  out->ntf_blocking = ns.blocking;
  out->ntf_file_events = ns.file_events;
  out->ntf_alerts = ns.alerts;
  return 0;
}
