/* SPDX-License-Identifier: MIT */
/*
 * tk_idle -- CPU time and wake-ups of an idle Tk application over 10 s
 * (1 s with --quick): gvwish against stock wish and, when installed,
 * Python's tkinter, all on the same display in the same run.
 *
 *   tk_idle [--quick] [--runs N]
 *
 * Each app shows a button and does nothing.  Measured from 2 s after start
 * (1 s with --quick; startup excluded) to the end of the window, summed over
 * all its threads:
 * CPU time from /proc/PID/task/T/schedstat (ns), wake-ups as voluntary
 * context switches.  Without $DISPLAY a private Xvfb is started.
 * Output: RESULT tk_idle <gvloop|wish|tkinter> cpu_ms|cpu_pct|wakeups <v>
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef GVWISH_PATH
#define GVWISH_PATH "gvwish"
#endif
#ifndef TKB_BENCH_DIR
#define TKB_BENCH_DIR "."
#endif

typedef struct {
  unsigned long long cpu_ns;
  unsigned long long wakeups;
} usage_t;

static int read_task(int pid, const char *tid, usage_t *u) {
  char path[320], line[256];   /* tid is a d_name: up to 255 bytes */
  snprintf(path, sizeof path, "/proc/%d/task/%s/schedstat", pid, tid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  unsigned long long ns = 0;
  if (fscanf(f, "%llu", &ns) == 1) u->cpu_ns += ns;
  fclose(f);
  snprintf(path, sizeof path, "/proc/%d/task/%s/status", pid, tid);
  f = fopen(path, "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long long v;
    if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1) u->wakeups += v;
  }
  fclose(f);
  return 0;
}

static usage_t usage_of(int pid) {
  usage_t u = {0, 0};
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *d = opendir(path);
  if (d == NULL) return u;
  struct dirent *e;
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

static int spawn(char *const argv[]) {
  int pid = fork();
  if (pid == 0) {
    int nul = open("/dev/null", O_WRONLY);
    if (nul >= 0) dup2(nul, 1); /* keep our stdout to RESULT lines */
    execvp(argv[0], argv);
    _exit(127);
  }
  return pid;
}

/* Startup (fonts, first map) is not idle time; --quick waits less. */
static long startup_ms = 2000;

static void measure(const char *variant, char *const argv[], long window_ms) {
  int pid = spawn(argv);
  if (pid < 0) return;
  sleep_ms(startup_ms);
  int status;
  if (waitpid(pid, &status, WNOHANG) == pid) {
    fprintf(stderr, "tk_idle: %s exited early (not installed?)\n", variant);
    return;
  }
  usage_t a = usage_of(pid);
  sleep_ms(window_ms);
  usage_t b = usage_of(pid);
  kill(pid, SIGTERM);
  waitpid(pid, &status, 0);
  double cpu_ms = (b.cpu_ns - a.cpu_ns) / 1e6;
  printf("RESULT tk_idle %s cpu_ms %.3f\n", variant, cpu_ms);
  printf("RESULT tk_idle %s cpu_pct %.4f\n", variant, 100.0 * cpu_ms / (double)window_ms);
  printf("RESULT tk_idle %s wakeups %llu\n", variant, b.wakeups - a.wakeups);
  fflush(stdout);
}

/* Start Xvfb on a display it picks itself; returns its pid or -1. */
static int start_xvfb(void) {
  int p[2];
  if (pipe(p) != 0) return -1;
  int pid = fork();
  if (pid == 0) {
    char fd[16];
    snprintf(fd, sizeof fd, "%d", p[1]);
    close(p[0]);
    int nul = open("/dev/null", O_WRONLY);
    if (nul >= 0) dup2(nul, 2); /* Xvfb reports displays it skipped */
    execlp("Xvfb", "Xvfb", "-displayfd", fd, "-screen", "0", "1024x768x24", "-nolisten",
           "tcp", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char buf[32] = {0};
  ssize_t n = read(p[0], buf, sizeof buf - 1);
  close(p[0]);
  if (n <= 0) return -1;
  buf[strcspn(buf, "\n")] = 0;
  char disp[40];
  snprintf(disp, sizeof disp, ":%s", buf);
  setenv("DISPLAY", disp, 1);
  return pid;
}

int main(int argc, char **argv) {
  int quick = 0, runs = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
  }
  if (runs < 1) runs = 1;
  long window = quick ? 1000 : 10000;
  if (quick) startup_ms = 1000;
  int xpid = -1;
  if (getenv("DISPLAY") == NULL && (xpid = start_xvfb()) < 0) {
    fprintf(stderr, "tk_idle: no DISPLAY and no Xvfb: skipped\n");
    return 0;
  }
  printf("META tk_idle cpu_ms ms low CPU of an idle Tk app over the window (target: no more than stock wish)\n");
  printf("META tk_idle cpu_pct %% low cpu_ms as a share of the window (target <= 0.1)\n");
  printf("META tk_idle wakeups count low voluntary context switches over the window\n");
  char *gv[] = {GVWISH_PATH, TKB_BENCH_DIR "/idle.tcl", NULL};
  char *wish[] = {"wish", TKB_BENCH_DIR "/idle.tcl", NULL};
  char *py[] = {"python3", TKB_BENCH_DIR "/tkinter_idle.py", NULL};
  for (int r = 0; r < runs; r++) {
    measure("gvloop", gv, window);
    measure("wish", wish, window);
    measure("tkinter", py, window);
    printf("DONE tk_idle all %d\n", r);
  }
  if (xpid > 0) {
    kill(xpid, SIGTERM);
    waitpid(xpid, NULL, 0);
  }
  return 0;
}
