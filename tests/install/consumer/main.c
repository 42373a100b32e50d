/* SPDX-License-Identifier: MIT */
/* Builds against an installed gvloop and takes the GVL once. */
#include <gvl.h>
#include <stdio.h>

int main(void) {
  gvl_t *g = gvl_create(NULL);
  gvl_thread_t *t = g ? gvl_thread_attach(g, GVL_PRIO_NORMAL) : NULL;
  if (!t || gvl_acquire(t) || gvl_release(t) || gvl_thread_detach(t) ||
      gvl_destroy(g))
    return 1;
  puts("consumer ok");
  return 0;
}
