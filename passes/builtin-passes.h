/* builtin-passes.h — constructors of the built-in passes, one file each. */
#pragma once

#include "pass.h"

G_BEGIN_DECLS

PlPass *pl_pass_simplify_new      (void);  /* simplify.c */
PlPass *pl_pass_decompose_new     (void);  /* decompose.c */
PlPass *pl_pass_reshape_sink_new  (void);  /* reshape-sink.c */
PlPass *pl_pass_fuse_loops_new    (void);  /* fuse-loops.c */
PlPass *pl_pass_fuse_library_new  (void);  /* fuse-library.c */
PlPass *pl_pass_stitch_new        (void);  /* stitch.c */
PlPass *pl_pass_grad_new          (void);  /* grad.c */
PlPass *pl_pass_swap_new          (void);  /* swap.c */

/* Registration of a built-in (used by builtin-passes.c only). */
void    pl_pass_register_builtin  (PlPass *pass);

G_END_DECLS
