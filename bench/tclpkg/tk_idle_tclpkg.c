/* SPDX-License-Identifier: MIT */
/*
 * tk_idle_tclpkg -- CPU time and wake-ups of an idle Tk app over 10 s (1 s
 * with --quick): a stock wish that loaded gvloop (Tcl's notifier driving
 * libuv), against the same stock wish without it and gvwish (the libuv
 * notifier), all on the same display in the same run.
 *
 *   tk_idle_tclpkg [--quick] [--runs N]
 *
 * Measured from 2 s after start (1 s with --quick) to the end of the window,
 * summed over all threads of the process: CPU from
 * /proc/PID/task/T/schedstat, wake-ups as voluntary context switches.  Without $DISPLAY a private Xvfb is started.
 * Output: RESULT tk_idle <tclpkg|tclpkg-wish|tclpkg-gvwish> cpu_ms|cpu_pct|wakeups <v>
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

typedef struct {
  unsigned long long cpu_ns, wakeups;
} usage_t;

static void read_task(int pid, const char *tid, usage_t *u) {
  char path[320], line[256];
  unsigned long long v;
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/task/%s/schedstat", pid, tid);
  if ((f = fopen(path, "r")) == NULL) return;
  if (fscanf(f, "%llu", &v) == 1) u->cpu_ns += v;
  fclose(f);
  snprintf(path, sizeof path, "/proc/%d/task/%s/status", pid, tid);
  if ((f = fopen(path, "r")) == NULL) return;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1) u->wakeups += v;
  fclose(f);
}

static usage_t usage_of(int pid) {
  usage_t u = {0, 0};
  char path[64];
  struct dirent *e;
  DIR *d;
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  if ((d = opendir(path)) == NULL) return u;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') read_task(pid, e->d_name, &u);
  closedir(d);
  return u;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Startup (fonts, first map) is not idle time; --quick waits less. */
static long startup_ms = 2000;

static void measure(const char *variant, char *const argv[], long window_ms) {
  int pid = fork(), status;
  if (pid < 0) return;
  if (pid == 0) {
    int nul = open("/dev/null", O_WRONLY);
    if (nul >= 0) dup2(nul, 1);
    execvp(argv[0], argv);
    _exit(127);
  }
  sleep_ms(startup_ms);
  if (waitpid(pid, &status, WNOHANG) == pid) {
    fprintf(stderr, "tk_idle_tclpkg: %s exited early\n", variant);
    return;
  }
  usage_t a = usage_of(pid);
  sleep_ms(window_ms);
  usage_t b = usage_of(pid);
  kill(pid, SIGTERM);
  waitpid(pid, &status, 0);
  double cpu_ms = (double)(b.cpu_ns - a.cpu_ns) / 1e6;
  printf("RESULT tk_idle %s cpu_ms %.3f\n", variant, cpu_ms);
  printf("RESULT tk_idle %s cpu_pct %.4f\n", variant, 100.0 * cpu_ms / (double)window_ms);
  printf("RESULT tk_idle %s wakeups %llu\n", variant, b.wakeups - a.wakeups);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int quick, runs, xpid;
  gvt_args(argc, argv, &quick, &runs);
  gvt_use_package();
  long window = quick ? 1000 : 10000;
  if (quick) startup_ms = 1000;
  if ((xpid = gvt_display()) < 0) {
    fprintf(stderr, "tk_idle_tclpkg: no DISPLAY and no Xvfb: skipped\n");
    return 0;
  }
  printf("META tk_idle cpu_ms ms low CPU of an idle Tk app over the window (target: no more than stock wish)\n");
  printf("META tk_idle cpu_pct %% low cpu_ms as a share of the window (target <= 0.1)\n");
  printf("META tk_idle wakeups count low voluntary context switches over the window\n");
  char *pkg[] = {GVT_WISH, GVT_BENCH_DIR "/idle.tcl", NULL};
  char *plain[] = {GVT_WISH, GVT_BENCH_DIR "/idle.tcl", "plain", NULL};
  char *gvwish[] = {GVWISH_PATH, GVT_BENCH_DIR "/idle.tcl", "plain", NULL};
  for (int r = 0; r < runs; r++) {
    measure("tclpkg", pkg, window);
    measure("tclpkg-wish", plain, window);
    if (access(GVWISH_PATH, X_OK) == 0) measure("tclpkg-gvwish", gvwish, window);
    printf("DONE tk_idle_tclpkg all %d\n", r);
  }
  gvt_display_end(xpid);
  return 0;
}
