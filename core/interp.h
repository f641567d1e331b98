/* interp.h — the reference interpreter: every registered op, plain C,
 * float64 accumulation. The oracle for conformance and for per-pass checks. */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

/* Called after each node ran (for timelines and tracing); may be NULL. */
typedef void (*PlInterpHook) (const PlNode *node, PlTensor *const *outputs, gpointer user_data);

typedef struct {
  PlInterpHook hook;
  gpointer     hook_data;
} PlInterpOptions;

/* Runs g on inputs (one per g->inputs entry, in order; their shapes may
 * differ from the declared ones only where those are symbolic or unknown).
 * Returns a g_malloc'd array of g->outputs->len new references, or NULL with
 * an error naming the failing node. Values are freed as soon as their last
 * use ran. */
PlTensor **pl_interp_run        (const PlGraph *g, PlTensor *const *inputs,
                                 const PlInterpOptions *options, GError **error);
void       pl_interp_free_outputs (PlTensor **outputs, int n);

/* Random inputs for g: floats uniform in [-1, 1), integers in [0, 4], bools
 * 0/1; symbolic or unknown dims take sym_size. NULL with an error if an
 * input has unknown rank. */
PlTensor **pl_random_inputs     (const PlGraph *g, guint32 seed, int64_t sym_size, GError **error);

G_END_DECLS
