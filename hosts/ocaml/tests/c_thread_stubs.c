/* SPDX-License-Identifier: MIT */
/* c_thread.ml's C side: a pthread that registers with OCaml, calls back,
 * unregisters, and checks that libgvl no longer knows it. */
#include <pthread.h>

#include <caml/callback.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/threads.h>

#include <gvl.h>

gvl_t *gvloop_caml_gvl(void);
value ct_run(value n, value f);

typedef struct {
  int n;
  value f;          /* a generational root */
  int ok;           /* rounds detached after unregister, attached during */
} ct_t;

static void *ct_thread(void *arg) {
  ct_t *c = arg;
  gvl_t *g = gvloop_caml_gvl();
  for (int i = 0; i < c->n; i++) {
    if (!caml_c_thread_register()) return NULL;
    caml_acquire_runtime_system();
    int attached = gvl_thread_self(g) != NULL;
    caml_callback(c->f, Val_unit);
    caml_release_runtime_system();
    caml_c_thread_unregister();
    if (attached && gvl_thread_self(g) == NULL) c->ok++;
  }
  return NULL;
}

value ct_run(value n, value f) {
  CAMLparam2(n, f);
  ct_t c = {Int_val(n), f, 0};
  pthread_t th;
  caml_register_generational_global_root(&c.f);
  caml_release_runtime_system();
  int rc = pthread_create(&th, NULL, ct_thread, &c);
  if (rc == 0) pthread_join(th, NULL);
  caml_acquire_runtime_system();
  caml_remove_generational_global_root(&c.f);
  CAMLreturn(Val_int(rc == 0 ? c.ok : -1));
}
