/* SPDX-License-Identifier: MIT */
/* common.h -- helpers shared by the bench/tclpkg programs. */
#ifndef GVT_BENCH_COMMON_H
#define GVT_BENCH_COMMON_H

/* Parse --quick and --runs N. */
void gvt_args(int argc, char **argv, int *quick, int *runs);
/* Point TCLLIBPATH at the package's build directory (unless set). */
void gvt_use_package(void);
/* Without $DISPLAY start a private Xvfb and set DISPLAY; returns its pid,
 * 0 when DISPLAY was already set, -1 when no display can be had. */
int gvt_display(void);
void gvt_display_end(int xpid);
/* Run a shell command line and copy its stdout to ours. */
void gvt_pass_through(const char *cmd);

#endif
