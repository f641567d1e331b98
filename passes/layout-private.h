/* layout-private.h — the `layout` pass's constructor (layout-pass.c), for
 * builtin-passes.c. Internal to passes/. */
#pragma once

#include "pass.h"

G_BEGIN_DECLS

PlPass *pl_pass_layout_new (void);  /* layout-pass.c */

G_END_DECLS
