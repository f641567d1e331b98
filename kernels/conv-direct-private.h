/* conv-direct-private.h — what the direct convolution's sources share:
 * conv-direct.c (the kernel's choice, blocks and generic C kernels),
 * conv-direct-nhwc.c (NHWC's own kernels), conv-direct-chwn.c (CHWN's
 * pointwise kernel) and conv-direct-cuda.c. */
#pragma once

#include "conv-direct.h"

#include <glib.h>
#include <stdint.h>

static inline int64_t cg (const PlConvDesc *c) { return c->c_in / c->group; }
static inline int64_t kg (const PlConvDesc *c) { return c->c_out / c->group; }

/* "#define NAME v" */
void pl_cd_define    (GString *out, const char *name, int64_t v);
/* #undef's every D_ macro that out defines from start, so the next kernel
 * of the translation unit starts clean. */
void pl_cd_undef_all (GString *out, gsize start);

/* The kernel's signature, its tile clamped to the output, and the tiles
 * along each dim (nx, ny, nz). */
#define KERNEL_HEAD \
  "D_ATTR void\n" \
  "D_NAME (const D_T *restrict x, const D_T *restrict wp, D_T *restrict y, int64_t tx, int64_t ty, int64_t tz)\n" \
  "{\n" \
  "  tx = tx < 1 ? 1 : tx > D_OW ? D_OW : tx;\n" \
  "  ty = ty < 1 ? 1 : ty > D_OH ? D_OH : ty;\n" \
  "  tz = tz < 1 ? 1 : tz > D_KG ? D_KG : tz;\n" \
  "  const int64_t nx = (D_OW + tx - 1) / tx, ny = (D_OH + ty - 1) / ty, nz = (D_KG + tz - 1) / tz;\n"

/* NHWC's own kernels (conv-direct-nhwc.c). */
extern const char pl_cd_nhwc_depthwise[];
extern const char pl_cd_nhwc_pointwise[];
void pl_cd_emit_nhwc_grouped (GString *out, const PlConvDesc *c, int64_t vl, int64_t p);

/* CHWN's (conv-direct-chwn.c). */
extern const char pl_cd_chwn_pointwise[];
