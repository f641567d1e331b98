/* builtin-passes.c — registers the built-in passes, in the order a default
 * pipeline applies them. Each pass lives in its own file. */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "layout-private.h"

static gpointer
init_once (gpointer data)
{
  pl_ops_init ();
  pl_pass_register_builtin (pl_pass_simplify_new ());
  pl_pass_register_builtin (pl_pass_decompose_new ());
  pl_pass_register_builtin (pl_pass_reshape_sink_new ());
  pl_pass_register_builtin (pl_pass_fuse_library_new ());
  pl_pass_register_builtin (pl_pass_fuse_loops_new ());
  /* layout plans convolutions and must run before fuse-library; it is listed
   * after the fusion passes so the default pipeline (and the fuzzer) never
   * starts a calibration run: there it finds the convs fused and changes
   * nothing. Pipelines that want it name it first: "layout,fuse-library,...". */
  pl_pass_register_builtin (pl_pass_layout_new ());
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
