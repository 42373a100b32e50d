/* SPDX-License-Identifier: MIT */
/*
 * gvl.h, "No spinning on one CPU": a CPU quota is not looked at.  A GVL
 * created while its process's cgroup allows it half a CPU's time, or one
 * CPU's, on a machine with two or more, spins as it would without the
 * quota.  Each case makes a cgroup below the process's own, sets its
 * quota, moves the process in, creates the GVL with a spin of an hour and
 * moves the process back out (the GVL decides at creation; the rest of the
 * case runs unthrottled):
 *
 *   half      quota 50 ms per 100 ms
 *   one       quota 100 ms per 100 ms
 *
 * "Spins": a boosted waiter whose holder does not answer is still
 * runnable (state R) 50 ms after it asked; one that does not spin sleeps
 * (state S) within microseconds.  Needs two CPUs and a cgroup CPU
 * controller this process may write (root; cgroup v1, or v2 where cpu can
 * be enabled below the process's cgroup): else exit 77 (ctest: skipped).
 */
#include "tgvl.h"

#include <sys/stat.h>
#include <sys/syscall.h>

static gvl_t *g;
static char home[512];       /* the process's cgroup, where it goes back to */
static char made[600];       /* the cgroup made; "" if none */
static int v2;

static int write_file(const char *dir, const char *name, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok ? 0 : -1;
}

static void skip(const char *why) {
  printf("skipped: %s\n", why);  /* a skip, not a pass */
  exit(77);
}

/* The process's cgroup directory in the CPU controller's hierarchy. */
static void find_home(void) {
  static const char *v1_mounts[] = {"/sys/fs/cgroup/cpu,cpuacct",
                                    "/sys/fs/cgroup/cpu"};
  char line[512], path[512] = "", *p;
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f) skip("no /proc/self/cgroup");
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (!(p = strchr(line, ':')) || !(p = strchr(p + 1, ':'))) continue;
    *p = '\0';
    const char *ctl = strchr(line, ':') + 1;
    if (!strcmp(ctl, "cpu") || !strncmp(ctl, "cpu,", 4) ||
        strstr(ctl, ",cpu,") || (strlen(ctl) > 4 &&
                                 !strcmp(ctl + strlen(ctl) - 4, ",cpu"))) {
      for (size_t i = 0; i < 2; i++) {
        struct stat st;
        char q[600];
        snprintf(q, sizeof q, "%s/cpu.cfs_quota_us", v1_mounts[i]);
        if (stat(q, &st) == 0) {
          fclose(f);
          if (snprintf(home, sizeof home, "%s%s", v1_mounts[i],
                       strcmp(p + 1, "/") ? p + 1 : "") >= (int)sizeof home)
            skip("cgroup path too long");
          return;
        }
      }
    } else if (!*ctl) {
      snprintf(path, sizeof path, "%s", p + 1);
    }
  }
  fclose(f);
  char ctl[256] = "";
  f = fopen("/sys/fs/cgroup/cgroup.controllers", "r");
  if (!f || !fgets(ctl, sizeof ctl, f) || !strstr(ctl, "cpu") || !*path)
    skip("no cgroup CPU controller found");
  fclose(f);
  if (snprintf(home, sizeof home, "/sys/fs/cgroup%s",
               strcmp(path, "/") ? path : "") >= (int)sizeof home)
    skip("cgroup path too long");
  v2 = 1;
}

static void remove_made(void) {
  if (made[0]) rmdir(made);
}

/* Makes home/gvloop-quota-PID, sets its quota (ms per 100 ms) and moves
 * the process into it. */
static void enter(int quota_ms) {
  char pid[32], q[64];
  snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  snprintf(made, sizeof made, "%s/gvloop-quota-%d", home, (int)getpid());
  if (mkdir(made, 0755) != 0) skip("cannot make a cgroup (not root?)");
  atexit(remove_made);
  if (v2) {
    if (write_file(home, "cgroup.subtree_control", "+cpu\n") != 0)
      skip("cannot enable the cgroup v2 cpu controller here");
    snprintf(q, sizeof q, "%d 100000\n", quota_ms * 1000);
    CHECK(write_file(made, "cpu.max", q) == 0);
  } else {
    CHECK(write_file(made, "cpu.cfs_period_us", "100000\n") == 0);
    snprintf(q, sizeof q, "%d\n", quota_ms * 1000);
    CHECK(write_file(made, "cpu.cfs_quota_us", q) == 0);
  }
  CHECK(write_file(made, "cgroup.procs", pid) == 0);
}

/* Moves the process back home and removes the cgroup, now empty: a case
 * that fails later leaves nothing behind. */
static void leave(void) {
  char pid[32];
  snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  CHECK(write_file(home, "cgroup.procs", pid) == 0);
  CHECK(rmdir(made) == 0);
  made[0] = '\0';
}

static atomic_int waiter_tid;

static void *waiter(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));   /* asks, then waits */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void run(int quota_ms) {
  cpu_set_t all;
  CHECK_OK(pthread_getaffinity_np(pthread_self(), sizeof all, &all));
  if (CPU_COUNT(&all) < 2) skip("needs two CPUs");
  find_home();
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  c.spin_ns = TGVL_HOUR_NS;
  enter(quota_ms);
  g = gvl_create(&c);
  leave();
  CHECK(g);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me);
  CHECK_OK(gvl_acquire(me));     /* held with no safe point meanwhile */
  pthread_t w;
  tgvl_spawn(&w, waiter, NULL);
  while (!atomic_load(&waiter_tid)) tgvl_sleep_us(100);
  while (tgvl_tstats(me).preempt_reqs < 1) tgvl_sleep_us(100);  /* it asked */
  tgvl_sleep_us(50000);
  CHECK(tgvl_thread_state(atomic_load(&waiter_tid)) == 'R');
  CHECK_OK(gvl_check_ints(me));  /* hands over to it */
  CHECK_OK(gvl_release(me));
  tgvl_join(w);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

int main(int argc, char **argv) {
  tgvl_watchdog(60);
  if (argc != 2) return 2;
  if (!strcmp(argv[1], "half")) run(50);
  else if (!strcmp(argv[1], "one")) run(100);
  else return 2;
  printf("ok %s\n", argv[1]);
  return 0;
}
