/* Two interpreter threads share the GVL; an urgent event cuts in.
 * cc ex.c $(pkg-config --cflags --libs gvl) */
#include <errno.h>
#include <gvl.h>
#include <pthread.h>
#include <stdio.h>

static gvl_t *gvl;

static void *interpreter(void *arg) {
  gvl_thread_t *self = gvl_thread_attach(gvl, GVL_PRIO_NORMAL);
  if (self == NULL) return NULL;
  gvl_acquire(self);
  for (long i = 0; i < 20000000; i++)
    if (gvl_check_ints(self) == EINTR) break;   /* safe point */
  gvl_release(self);
  gvl_thread_detach(self);
  return arg;
}

static void *on_event(void *arg) {              /* runs holding the GVL */
  puts("event handled");
  return arg;
}

int main(void) {
  pthread_t th[2];
  int rc;
  if ((gvl = gvl_create(NULL)) == NULL) return 1;
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, interpreter, NULL);
  /* A thread that is not attached enters host code with a boost. */
  gvl_call_with(gvl, GVL_PRIO_BOOST, on_event, NULL);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  if ((rc = gvl_destroy(gvl)) != 0)
    fprintf(stderr, "gvl_destroy: %s (%s)\n", gvl_strerror(rc), gvl_err_name(rc));
  printf("libgvl %s\n", gvl_version_string());
  return rc != 0;
}
