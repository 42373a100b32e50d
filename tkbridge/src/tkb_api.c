/* SPDX-License-Identifier: MIT */
/*
 * tkb_api.c -- the public calls that hand work to the loop thread.
 * Each validates its arguments, builds a tkb__call_t and submits it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tkb_int.h"

/* Submit c and wait; copy the result out when asked.  Drops the caller's
 * reference on c. */
static int run_sync(tkb__call_t *c, char **result) {
  c->sync = 1;
  int rc = tkb__call_submit(c);
  if (result != NULL) {
    /* A finished call's result is stable: the loop side wrote it before
     * signalling, and only this thread reads it now. */
    const char *src = rc != EINTR && rc != ECANCELED ? c->result : NULL;
    if (src == NULL && rc == 0) src = "";
    if (src != NULL && (*result = strdup(src)) == NULL) rc = ENOMEM;
  }
  tkb__call_unref(c);
  return rc;
}

int tkb_eval(tkb_t *tk, const char *script, char **result) {
  if (result) *result = NULL;
  if (tk == NULL || script == NULL) return EINVAL;
  tkb__call_t *c = tkb__call_new(tk, TKB_CALL_EVAL);
  if (c == NULL || (c->text = strdup(script)) == NULL) {
    tkb__call_unref(c);
    return ENOMEM;
  }
  return run_sync(c, result);
}

int tkb_eval_async(tkb_t *tk, const char *script, tkb_done_cb done, void *arg) {
  if (tk == NULL || script == NULL) return EINVAL;
  tkb__call_t *c = tkb__call_new(tk, TKB_CALL_EVAL);
  if (c == NULL || (c->text = strdup(script)) == NULL) {
    tkb__call_unref(c);
    return ENOMEM;
  }
  c->done = done;
  c->done_arg = arg;
  int rc = tkb__call_submit(c);
  tkb__call_unref(c);
  return rc;
}

/* tkb_run; own: one of the bridge's (tkb_stats), not counted in runs. */
int tkb__run(tkb_t *tk, tkb_fn fn, void *arg, int own) {
  tkb__call_t *c = tkb__call_new(tk, TKB_CALL_RUN);
  if (c == NULL) return ENOMEM;
  c->fn = fn;
  c->fn_arg = arg;
  c->own = own;
  return run_sync(c, NULL);
}

int tkb_run(tkb_t *tk, tkb_fn fn, void *arg) {
  if (tk == NULL || fn == NULL) return EINVAL;
  return tkb__run(tk, fn, arg, 0);
}

static int valid_name(const char *name) {
  return name != NULL && name[0] != '\0' && strlen(name) < 4096;
}

int tkb_command_create(tkb_t *tk, const char *name, tkb_cmd_cb cb, void *arg) {
  if (tk == NULL || !valid_name(name) || cb == NULL) return EINVAL;
  tkb__call_t *c = tkb__call_new(tk, TKB_CALL_CMD_CREATE);
  if (c == NULL || (c->text = strdup(name)) == NULL) {
    tkb__call_unref(c);
    return ENOMEM;
  }
  c->cmd = cb;
  c->cmd_arg = arg;
  return run_sync(c, NULL);
}

int tkb_command_delete(tkb_t *tk, const char *name) {
  if (tk == NULL || !valid_name(name)) return EINVAL;
  tkb__call_t *c = tkb__call_new(tk, TKB_CALL_CMD_DELETE);
  if (c == NULL || (c->text = strdup(name)) == NULL) {
    tkb__call_unref(c);
    return ENOMEM;
  }
  return run_sync(c, NULL);
}
