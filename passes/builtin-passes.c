/* builtin-passes.c — registers the built-in passes, in the order a default
 * pipeline applies them. Each pass lives in its own file. */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"

static gpointer
init_once (gpointer data)
{
  pl_ops_init ();
  pl_pass_register_builtin (pl_pass_simplify_new ());
  pl_pass_register_builtin (pl_pass_decompose_new ());
  pl_pass_register_builtin (pl_pass_reshape_sink_new ());
  pl_pass_register_builtin (pl_pass_fuse_library_new ());
  pl_pass_register_builtin (pl_pass_fuse_loops_new ());
  pl_pass_register_builtin (pl_pass_stitch_new ());
  pl_pass_register_builtin (pl_pass_grad_new ());
  pl_pass_register_builtin (pl_pass_swap_new ());
  return NULL;
}

void
pl_passes_init (void)
{
  static GOnce once = G_ONCE_INIT;
  g_once (&once, init_once, NULL);
}
