/* SPDX-License-Identifier: MIT */
/*
 * gvl_cpus_linux.c -- how many CPUs the calling thread's process can keep
 * busy at once, for the spin decision (gvl_misc.c, gvl_create).
 *
 * The least of: the CPUs online, those in the caller's affinity mask, and
 * the CPU bandwidth its cgroups allow, rounded up: a quota of 50 ms per
 * 100 ms period counts as one CPU, 150 ms as two.  A quota is read from
 * each cgroup from the process's own up to the hierarchy's root, as the
 * kernel enforces every one of them: cgroup v1's cpu.cfs_quota_us and
 * cpu.cfs_period_us where the cpu controller is mounted as v1, else v2's
 * cpu.max.  The files are found through /proc/self/cgroup and
 * /proc/self/mountinfo, so a container's own view (a cgroup namespace, or
 * the host's path mounted at its root) is read as the kernel shows it.
 * Anything unreadable counts as no quota: the answer is never below the
 * CPUs online and in the mask but through a quota read.
 */
#include "gvl_int.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether the comma-separated list s holds the word w ("cpu" is not
 * "cpuacct" or "cpuset"). */
static int has_word(const char *s, const char *w) {
  size_t n = strlen(w);
  for (const char *p = s; (p = strstr(p, w)); p += n)
    if ((p == s || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

/* The first number in dir/name into *v; 0 if unreadable or none ("max",
 * cgroup v2's no quota, does not parse). */
static int read_num(const char *dir, const char *name, long long *v) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  int ok = fscanf(f, "%lld", v) == 1;
  fclose(f);
  return ok;
}

/* The cgroup dir's CPU quota and period; 0 if it sets none. */
static int read_quota(const char *dir, int v2, long long *quota,
                      long long *period) {
  if (v2) {
    /* cpu.max: "max 100000" or "50000 100000" */
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    int n = fscanf(f, "%lld %lld", quota, period);
    fclose(f);
    return n == 2 && *quota > 0 && *period > 0;
  }
  return read_num(dir, "cpu.cfs_quota_us", quota) && *quota > 0 &&  /* -1 */
         read_num(dir, "cpu.cfs_period_us", period) && *period > 0;
}

/* The cgroup path of the process in the cpu controller's hierarchy, v1
 * (*v2 = 0) if the controller is mounted there, else v2's; 0 if none. */
static int own_cgroup(char *out, size_t size, int *v2) {
  FILE *f = fopen("/proc/self/cgroup", "re");
  char *line = NULL, *v2path = NULL;
  size_t cap = 0;
  int found = 0;
  if (!f) return 0;
  while (!found && getline(&line, &cap, f) > 0) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = '\0';
    if (c1[1] == '\0' && !v2path) {
      v2path = strdup(c2 + 1);                 /* "0::/path" */
    } else if (has_word(c1 + 1, "cpu") && strlen(c2 + 1) < size) {
      strcpy(out, c2 + 1);
      *v2 = 0;
      found = 1;
    }
  }
  if (!found && v2path && strlen(v2path) < size) {
    strcpy(out, v2path);
    *v2 = 1;
    found = 1;
  }
  free(v2path);
  free(line);
  fclose(f);
  return found;
}

/* The mount of the hierarchy: its root within the hierarchy and its mount
 * point; 0 if it is not mounted. */
static int hierarchy_mount(int v2, char *root, char *point, size_t size) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  char *line = NULL;
  size_t cap = 0;
  int found = 0;
  if (!f) return 0;
  while (!found && getline(&line, &cap, f) > 0) {
    /* id parent major:minor root point options [optional...] - type src super */
    char *fld[5], *save = NULL, *tok = strtok_r(line, " \n", &save);
    int i = 0;
    for (; tok && i < 5; tok = strtok_r(NULL, " \n", &save)) fld[i++] = tok;
    while (tok && strcmp(tok, "-") != 0) tok = strtok_r(NULL, " \n", &save);
    char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
    char *src = type ? strtok_r(NULL, " \n", &save) : NULL;
    char *super = src ? strtok_r(NULL, " \n", &save) : NULL;
    if (i < 5 || !super) continue;
    if (v2 ? strcmp(type, "cgroup2") != 0
           : strcmp(type, "cgroup") != 0 || !has_word(super, "cpu"))
      continue;
    if (strlen(fld[3]) < size && strlen(fld[4]) < size) {
      strcpy(root, fld[3]);
      strcpy(point, fld[4]);
      found = 1;
    }
  }
  free(line);
  fclose(f);
  return found;
}

/* The CPUs the quotas of the process's cgroups allow, rounded up; INT_MAX
 * if none is set or none can be read. */
static int quota_cpus(void) {
  char cg[PATH_MAX], root[PATH_MAX], point[PATH_MAX], dir[PATH_MAX];
  int v2, best = INT_MAX;
  if (!own_cgroup(cg, sizeof cg, &v2) ||
      !hierarchy_mount(v2, root, point, sizeof root))
    return INT_MAX;
  /* cg is a path in the hierarchy; the mount shows it from root down. */
  size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
  if (strncmp(cg, root, rl) != 0 || (cg[rl] != '/' && cg[rl] != '\0'))
    return INT_MAX;                         /* outside what is mounted */
  if (snprintf(dir, sizeof dir, "%s%s", point, cg + rl) >= (int)sizeof dir)
    return INT_MAX;
  size_t top = strlen(point);
  for (;;) {
    long long q, p;
    size_t len = strlen(dir);
    while (len > top && dir[len - 1] == '/') dir[--len] = '\0';
    if (read_quota(dir, v2, &q, &p)) {
      long long n = (q + p - 1) / p;
      if (n < best) best = n > INT_MAX ? INT_MAX : (int)n;
    }
    char *slash = strrchr(dir, '/');
    if (len <= top || !slash || (size_t)(slash - dir) < top) break;
    *slash = '\0';                          /* the parent */
  }
  return best;
}

int gvl__cpus(void) {
  cpu_set_t set;
  long onln = sysconf(_SC_NPROCESSORS_ONLN);
  int n = onln > 0 && onln < INT_MAX ? (int)onln : 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < n)
    n = CPU_COUNT(&set);
  int q = n > 1 ? quota_cpus() : INT_MAX;
  return q < n ? q : n;
}
