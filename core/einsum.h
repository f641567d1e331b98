/* einsum.h — an Einsum equation parsed against its operands' ranks: the
 * label of each operand axis and of each output axis (core/ops-nn.c, which
 * infers and evaluates Einsum with it; the decompose pass rewrites the
 * equation into Transpose, ReduceSum, Reshape and MatMul with it).
 *
 * Letters are label ids 0..51 in ASCII order (A-Z, then a-z: numpy's order
 * for the implicit output); the broadcast "..." axes get ids 52.., right-
 * aligned across operands. An operand repeating a letter reads a diagonal;
 * labels missing from the output are summed over.
 */
#pragma once

#include "shape.h"

G_BEGIN_DECLS

#define PL_EINSUM_LETTERS  52
#define PL_EINSUM_LABELS   (PL_EINSUM_LETTERS + PL_MAX_RANK)
#define PL_EINSUM_MAX_IN   16

typedef struct {
  int    n_inputs;
  int    rank[PL_EINSUM_MAX_IN];
  gint8  ids[PL_EINSUM_MAX_IN][PL_MAX_RANK];  /* label id of each operand axis */
  int    out_rank;
  gint8  out_ids[PL_MAX_RANK];
  int    n_ellipsis;                          /* broadcast ellipsis rank */
} PlEinsumPlan;

/* Parses eq for n_inputs operands of the given (known) ranks; false with
 * an error saying what is wrong with the equation. */
bool pl_einsum_plan (const char *eq, int n_inputs, const int *ranks, PlEinsumPlan *plan, GError **error);

G_END_DECLS
