/* SPDX-License-Identifier: MIT */
/* A signal that comes while the first watch of it is starting is heard by
 * the watch: the moment evloop's handler is installed, the watch's slot is
 * in place.  Linked with -Wl,--wrap=sigaction against the static
 * libevloop: the wrapper raises the signal right after evloop installs its
 * handler, as another thread's kill() at that instant would.  (Before the
 * handler goes in, the old disposition hears it; here that is the host's
 * handler, which must see nothing.) */
#include <signal.h>
#include <unistd.h>

#include "evl_test.h"

int __real_sigaction(int sig, const struct sigaction *sa,
                     struct sigaction *old);
int __wrap_sigaction(int sig, const struct sigaction *sa,
                     struct sigaction *old);

static atomic_int armed, raised, host_calls, watch_calls, finals;

int __wrap_sigaction(int sig, const struct sigaction *sa,
                     struct sigaction *old) {
  int r = __real_sigaction(sig, sa, old);
  if (r == 0 && sig == SIGUSR2 && sa != NULL && atomic_load(&armed) &&
      atomic_exchange(&raised, 1) == 0)
    (void)raise(SIGUSR2);
  return r;
}

static void host_handler(int sig) {
  (void)sig;
  atomic_fetch_add(&host_calls, 1);
}

static void watch_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&watch_calls, 1);
  else atomic_fetch_add(&finals, 1);
}

int main(void) {
  gvl_t *g = t_gvl();
  evl_t *l = t_loop(g);
  evl_id_t id;
  CHECK(signal(SIGUSR2, host_handler) != SIG_ERR);
  atomic_store(&armed, 1);
  CHECK_EQ(evl_signal_watch(l, SIGUSR2, 0, watch_cb, NULL, &id), 0);
  t_wait_ge(&watch_calls, 1);
  CHECK_EQ(atomic_load(&raised), 1);
  CHECK_EQ(atomic_load(&host_calls), 0);
  CHECK_EQ(evl_cancel(l, id), 0);
  t_wait_ge(&finals, 1);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_sigstart ok");
  return 0;
}
