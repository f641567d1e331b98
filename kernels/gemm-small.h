/* gemm-small.h — a generated f32 GEMM for 2 to 32 rows (gemm-small.c),
 * which the cpu runtime calls for such a GEMM plan in place of BLAS.
 * Internal to kernels/. */
#pragma once

#include "kernel-plan.h"

G_BEGIN_DECLS

/* Whether g (one batch item: f32, A not transposed, 2 <= M <= 32, N and K
 * at least 16) takes the generated kernel. */
bool pl_gemm_small_applies (const PlGemmDesc *g);
/* C source of `void name (const float *a, const float *b, float *c)`:
 * C = alpha A op (B) for one batch item, row-major, c of leading dim N. */
void pl_gemm_small_emit_c  (GString *out, const PlGemmDesc *g, const char *name);

G_END_DECLS
