/* SPDX-License-Identifier: MIT */
/* common.c -- helpers shared by the bench/tclpkg programs. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

void gvt_args(int argc, char **argv, int *quick, int *runs) {
  *quick = 0;
  *runs = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) *quick = 1;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) *runs = atoi(argv[++i]);
  }
  if (*runs < 1) *runs = 1;
}

void gvt_use_package(void) {
  setenv("TCLLIBPATH", GVT_PKG_DIR, 0);
}

int gvt_display(void) {
  int p[2], pid;
  char buf[32] = {0}, disp[40];
  ssize_t n;
  if (getenv("DISPLAY") != NULL) return 0;
  if (pipe(p) != 0) return -1;
  if ((pid = fork()) == 0) {
    char fd[16];
    int nul = open("/dev/null", O_WRONLY);
    snprintf(fd, sizeof fd, "%d", p[1]);
    close(p[0]);
    if (nul >= 0) dup2(nul, 2); /* Xvfb reports displays it skipped */
    execlp("Xvfb", "Xvfb", "-displayfd", fd, "-screen", "0", "1024x768x24", "-nolisten",
           "tcp", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  n = read(p[0], buf, sizeof buf - 1);
  close(p[0]);
  if (n <= 0) {
    if (pid > 0) waitpid(pid, NULL, 0);
    return -1;
  }
  buf[strcspn(buf, "\n")] = 0;
  snprintf(disp, sizeof disp, ":%s", buf);
  setenv("DISPLAY", disp, 1);
  return pid;
}

void gvt_display_end(int xpid) {
  if (xpid <= 0) return;
  kill(xpid, SIGTERM);
  waitpid(xpid, NULL, 0);
  unsetenv("DISPLAY");
}

void gvt_pass_through(const char *cmd) {
  char line[512];
  FILE *f = popen(cmd, "r");
  if (f == NULL) return;
  while (fgets(line, sizeof line, f)) fputs(line, stdout);
  pclose(f);
  fflush(stdout);
}
