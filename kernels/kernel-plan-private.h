/* kernel-plan-private.h — the lowering context shared by kernel-plan.c (the
 * planner: domain, passes, coalescing, library plans) and plan-ops.c (what
 * each op computes at a multi-index). Internal to kernels/. */
#pragma once

#include "kernel-plan.h"

G_BEGIN_DECLS

typedef struct {
  PlKernelPlan *plan;
  PlLoopPlan   *loop;
  PlIdxArena   *arena;                   /* over the domain's coordinates */
  int           rank;                    /* the domain D */
  int64_t       dims[PL_MAX_RANK];
  bool          reduced[PL_MAX_RANK];    /* reduced axes of D (rows kernels) */
  bool          rows;                    /* the kernel has reductions */
  const PlIdx  *coords[PL_MAX_RANK];     /* D's coordinates */
  GHashTable   *members;                 /* PlNode* in the set */
  GHashTable   *slots;                   /* PlValue* -> input slot + 1 */
  GHashTable   *memo;                    /* "value@index" and instruction keys -> instr + 1 */
  GHashTable   *node_reductions;         /* "node:k" -> REDUCED instr + 1 */
  const PlNode *lib_node;                /* GEMM/CONV: the library op (its output is the raw result) */
  PlValue      *lib_value;
  char         *why;                     /* set on the first failure: why the set is not one kernel */
} PlLower;

/* --- instruction builders (kernel-plan.c); -1 after a failure ------------------ */
int  pl_lower_fail     (PlLower *L, const char *fmt, ...) G_GNUC_PRINTF (2, 3);
int  pl_lower_load     (PlLower *L, PlValue *v, const PlIdx *offset);
int  pl_lower_slot     (PlLower *L, PlValue *v);   /* v's input slot (made on first use) */
int  pl_lower_load_slot (PlLower *L, int slot, PlDType dtype, const PlIdx *offset);   /* offset NULL: -1 */
/* Where v's element at logical multi-index idx lies in memory: v's layout
 * (layout.h) orders the dims. Every load and store of a value goes through
 * it; NULL (after failing) when v has no static shape or a layout its rank
 * cannot carry. _in: as if v were stored in `layout` (the raw library result). */
const PlIdx *pl_lower_offset    (PlLower *L, const PlValue *v, const PlIdx *const *idx);
const PlIdx *pl_lower_offset_in (PlLower *L, PlLayout layout, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_const    (PlLower *L, PlDType dtype, double v);
int  pl_lower_unary    (PlLower *L, PlScalarOp op, int a);
int  pl_lower_check    (PlLower *L, int bad, int value, const char *message);
int  pl_lower_mod      (PlLower *L, int a, int b, bool truncated);
int  pl_lower_binary   (PlLower *L, PlScalarOp op, int a, int b);
/* a / b, never turned into a multiply by b's reciprocal (PL_DIV_EXACT) */
int  pl_lower_div_exact (PlLower *L, int a, int b);
int  pl_lower_select   (PlLower *L, int cond, int a, int b);
int  pl_lower_cast     (PlLower *L, int a, PlDType to);
int  pl_lower_reduce   (PlLower *L, PlReduceKind kind, int arg, PlDType dtype, bool select_last);
int  pl_lower_rindex   (PlLower *L);
int  pl_lower_index_value (PlLower *L, const PlIdx *index);
/* input[slot][base + at * stride], at an i64 instruction (a gather) */
int  pl_lower_gather_load (PlLower *L, int slot, PlDType dtype, const PlIdx *base, int at, int64_t stride);   /* index's value, i64 (PL_SLOT_INDEX) */
PlDType pl_lower_dtype (PlLower *L, int instr);

/* --- per-op lowering (plan-ops.c) ---------------------------------------------- */
/* The instruction computing value v at multi-index idx (v's rank entries). */
int  pl_lower_value    (PlLower *L, PlValue *v, const PlIdx *const *idx);
/* Whether node reduces rows of its input 0: the reduced axes (mask) of the
 * input, false for ops that are not row reductions or whose axes are not
 * known. */
bool pl_lower_row_axes (const PlNode *node, bool *mask);
/* Concat, Pad (constant mode) and Trilu: a select among places picked by
 * the coordinates (plan-select.c). */
int  pl_lower_concat   (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_pad      (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_trilu    (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_resize_sample (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_grid_sample (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_roi_align (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
/* The cubic kernel of coefficient a at distance t (a value of dtype): near, within 1; else 1 to 2. */
int  pl_lower_cubic_weight (PlLower *L, PlDType dtype, double a, int t, bool near);
int  pl_lower_gather   (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_gather_elements (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_gather_nd (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_onehot   (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
int  pl_lower_reverse_sequence (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx);
/* Whether v, which node reads at loaded offsets (a gather), is in memory in
 * the default layout (an input of the kernel); else the lowering fails,
 * naming it `what`. */
bool pl_lower_gathers_from (PlLower *L, const PlNode *node, const PlValue *v, const char *what);
/* k (an i64 value) where 0 <= k <= last; else 0, and the run fails with
 * message (%I: k's value), as the reference refuses such an index. */
int  pl_lower_checked_range (PlLower *L, int k, int64_t last, const char *message);
/* The multi-index into a tensor of in_rank/in_dims broadcast (numpy rules)
 * to out_rank at idx. */
void pl_lower_broadcast_index (PlLower *L, const PlIdx *const *idx, int out_rank, int in_rank,
                               const int64_t *in_dims, const PlIdx **out);

/* --- for the generators and the runtime (kernel-plan.c) ------------------------- */
/* A LOOP plan that only moves elements (one store of one load: a
 * LayoutTransform, a relayout) and stores contiguously along its innermost
 * loop dim while loading contiguously along loop dim j: returns j (the
 * generators then tile it as a transpose), else -1. */
int           pl_plan_transpose_dim   (const PlKernelPlan *p);
/* A LOOP plan copying value v from layout `from` to layout `to` (input slot
 * 0 and output slot 0 both name v; the runtime binds the buffers): how the
 * runtime feeds a kernel that reads only the default layout (a GEMM operand)
 * from a value stored in another one. ops "LayoutTransform". */
PlKernelPlan *pl_kernel_plan_relayout (const char *name, PlValue *v, PlLayout from, PlLayout to, GError **error);

/* --- shared by kernel-plan.c, kernel-plan-loop.c and kernel-plan-library.c ----- */
static inline PlInstr *
pl_lower_instr (PlLower *L, int i)
{
  return &g_array_index (L->loop->instrs, PlInstr, i);
}
/* kernel-plan.c */
void pl_lower_init (PlLower *L, PlKernelPlan *plan, PlNode *const *nodes, int n);
void pl_lower_clear (PlLower *L);
void pl_lower_set_domain (PlLower *L, int rank, const int64_t *dims);
bool pl_lower_outputs (PlLower *L, PlValue *const *outputs, int n_out);
bool pl_lower_value_dims (const PlValue *v, int64_t *dims);
bool pl_lower_dims_equal (int ra, const int64_t *a, int rb, const int64_t *b);
PlKernelPlan *pl_plan_new (PlPlanKind kind, const char *name, PlNode *const *nodes, int n);
int64_t pl_plan_loop_flops (const PlLoopPlan *lp);
void pl_plan_loop_free (PlLoopPlan *l);
/* kernel-plan-loop.c: the shape of a loop plan (levels, passes, scratch; split and coalesced dims) */
void pl_lower_coalesce (PlLower *L, const int *order);
bool pl_lower_analyze (PlLower *L);
void pl_lower_loop_order (PlLower *L, int *order);
void pl_lower_split_dims (PlLower *L);
/* kernel-plan-library.c: GEMM and Conv plans with their epilogues */
PlKernelPlan *pl_plan_library (const char *name, PlNode *lib, PlNode *const *nodes, int n, PlValue *const *outputs, int n_out, GError **error);

G_END_DECLS
