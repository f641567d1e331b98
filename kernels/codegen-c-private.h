/* codegen-c-private.h — what the C code generator's files share:
 * codegen-c.c (preludes, pointwise loops, transposes, im2col, the
 * dispatch), codegen-c-rows.c (row kernels: loops with reductions) and
 * codegen-c-peel.c (edge peeling of a pointwise loop).
 * The emitter, its line helpers, and the row kernels' entry.
 * Internal to kernels/. */
#pragma once

#include "codegen.h"
#include "kernel-plan-private.h"

#include <stdarg.h>

G_BEGIN_DECLS

/* Work below this many elements runs on one thread (a parallel region costs microseconds). */
#define PARALLEL_MIN 32768

typedef struct {
  GString            *o;
  const PlKernelPlan *p;
  const PlLoopPlan   *lp;
  int                 indent;
  bool                stream;   /* rows: stage contiguous row stores, write them out non-temporally */
  int                 prefetch_pass; /* rows: this pass prefetches the next row (PREFETCH_CHUNK); -1: none */
  const char         *acc_suffix;    /* rows: which of a split pass's partial accumulators the body adds to */
  bool                chunk;         /* rows: emitting the chunk loop (cb..ce) of the prefetching pass */
} Emit;

static inline void G_GNUC_PRINTF (2, 3)
line (Emit *e, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  pl_codegen_vline (e->o, e->indent, fmt, ap);
  va_end (ap);
}

static inline const char *
ctype_of_value (const PlValue *v)
{
  return pl_plan_ctype (v->dtype);
}

static inline void
emit_store (Emit *e, const PlStore *st)
{
  g_autofree char *ix = pl_idx_to_c (st->index, pl_codegen_coord_names ());
  line (e, "out%d[%s] = v%d;", st->slot, ix, st->value);
}

/* codegen-c-rows.c: the body of a LOOP plan with reductions */
void pl_cgc_emit_rows (Emit *e);

/* codegen-c-peel.c: edge peeling of a pointwise loop's innermost dim. mid:
 * the plan over the interior [lo, hi) of that dim, renumbered from 0, its
 * index functions rebuilt for that range; q > 1: the interior taken q
 * elements an iteration, phase[r] the plan for element q j + r. */
#define MAX_PHASES 4
typedef struct {
  PlLoopPlan *mid;
  int64_t     lo, hi;
  int         q;
  PlLoopPlan *phase[MAX_PHASES];
} PlCgcPeel;

/* Fills peel when peeling takes the clamps and mirrors off lp's innermost
 * coordinate; else false (peel empty). */
bool pl_cgc_peel_inner (const PlLoopPlan *lp, PlCgcPeel *peel);
void pl_cgc_peel_clear (PlCgcPeel *peel);

G_END_DECLS
