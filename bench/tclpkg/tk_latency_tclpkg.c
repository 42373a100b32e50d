/* SPDX-License-Identifier: MIT */
/*
 * tk_latency_tclpkg -- tk_latency for the gvloop Tcl package: a Tcl event
 * to the start of the host callback it triggers, in a STOCK tclsh / wish
 * that loaded gvloop (Tcl's notifier drives libuv), while a hog thread
 * holds the GVL with a safe point every ~1 us of work.
 *
 *   tk_latency_tclpkg [--quick] [--runs N]
 *
 * Same triggers as bench/tkbridge/tk_latency (`after 0`, and `event
 * generate` of a bound virtual event under a display), so the rows sit in
 * the same tables as the libuv-notifier ones:
 *   tclpkg          host callback (gvloop::ping) takes the GVL boosted
 *   tclpkg-noboost  same at normal priority (waits for the hog's slice)
 *   tclpkg-nohog    boost, no hog: the floor of this integration
 * t0 and t1 are [clock microseconds] (1 us resolution).  Without $DISPLAY a
 * private Xvfb is started for the event rows.
 * Output: RESULT tk_latency[_event] <variant> p50_us|p99_us|max_us|samples <v>
 */
#include <stdio.h>

#include "common.h"

static void run(const char *shell, int n, int boost, int hogs, const char *mode,
                const char *variant) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s %s/latency.tcl %d %d %d %s %s </dev/null", shell,
           GVT_BENCH_DIR, n, boost, hogs, mode, variant);
  gvt_pass_through(cmd);
}

int main(int argc, char **argv) {
  int quick, runs, xpid;
  gvt_args(argc, argv, &quick, &runs);
  gvt_use_package();
  int n = quick ? 200 : 2000, nb = quick ? 50 : 200;
  printf("META tk_latency p50_us us low Tcl after 0 -> host callback start, 1 hog holding the GVL (target p99 <= 1000 with the boost)\n");
  printf("META tk_latency p99_us us low as p50_us, 99th percentile\n");
  printf("META tk_latency max_us us low as p50_us, worst\n");
  printf("META tk_latency samples count none events measured\n");
  printf("INFO tk_latency tclpkg-notifier tcl-notifier (stock tclsh/wish + package require gvloop)\n");
  fflush(stdout);
  xpid = gvt_display();
  for (int r = 0; r < runs; r++) {
    run(GVT_TCLSH, n, 1, 1, "after", "tclpkg");
    run(GVT_TCLSH, nb, 0, 1, "after", "tclpkg-noboost");
    run(GVT_TCLSH, n, 1, 0, "after", "tclpkg-nohog");
    if (xpid >= 0) {
      run(GVT_WISH, n, 1, 1, "event", "tclpkg");
      run(GVT_WISH, nb, 0, 1, "event", "tclpkg-noboost");
      run(GVT_WISH, n, 1, 0, "event", "tclpkg-nohog");
    }
    printf("DONE tk_latency_tclpkg all %d\n", r);
  }
  gvt_display_end(xpid);
  return 0;
}
