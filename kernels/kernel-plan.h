/* kernel-plan.h — a backend-neutral plan of one kernel: a fusion body or a
 * single op lowered to a small loop IR that codegen-c.c and codegen-cuda.c
 * print. The design is explained at the top of kernel-plan.c.
 *
 * A LOOP plan iterates over a domain of loop dims. The first n_kept dims are
 * the rows (for a pointwise kernel: every dim); the rest are reduced. Each
 * row runs n_passes passes over its reduced elements; a pass computes the
 * element values it needs as an SSA list of scalar instructions (loads with
 * symbolic index functions, constants, math), accumulates the reductions of
 * that pass and stores element outputs. Row values (reduction results and
 * what is computed from them) are computed once per row between passes.
 * Element values needed in several passes are materialized in a per-row
 * scratch buffer (CPU: heap row buffer; CUDA: shared or global memory).
 *
 * GEMM and CONV plans are one library call plus an optional epilogue (a
 * pointwise LOOP plan reading the library result). A ConvTranspose is a
 * CONV plan too (conv.transpose): a GEMM into a column matrix and a
 * generated col2im (conv-transpose.h). POOL plans are one
 * generated pooling kernel (pool.h), input slot 0 X and output slot 0 Y
 * (MaxPool's unused Indices get no slot); SCAN plans likewise one
 * generated CumSum kernel (scan.h; the constant axis gets no slot);
 * SCATTER plans read data, indices and updates (scatter.h); TOPK plans
 * read X and write the values and the indices (topk.h; K, a constant, gets
 * no slot). FALLBACK plans run the
 * op's reference implementation; ALIAS plans (Reshape, Squeeze, ...) launch
 * nothing: the output shares the input's buffer.
 * Internal to kernels/.
 */
#pragma once

#include "graph.h"
#include "index-expr.h"
#include "pool.h"
#include "scan.h"
#include "scatter.h"
#include "topk.h"

G_BEGIN_DECLS

/* The slot of a LOAD that reads no input but yields its index expression's
 * value: what selects a Concat's input. A load, so that the loop plan
 * renames, coalesces and levels it like every other index. */
#define PL_SLOT_INDEX (-1)

typedef enum {
  /* leaves */
  PL_SOP_LOAD,      /* input[slot][index]; slot PL_SLOT_INDEX: the index's value (i64); with an
                     * argument (a gather): input[slot][index + a[0] * imm_i], a[0] an i64 value */
  PL_SOP_CONST,     /* imm (floats) / imm_i (integers and bool) */
  PL_SOP_REDUCED,   /* the result of reduction `reduction` for this row */
  PL_SOP_RINDEX,    /* linear index of the element within its row (i64) */
  /* unary: a[0] */
  PL_SOP_NEG, PL_SOP_ABS, PL_SOP_EXP, PL_SOP_EXPM1, PL_SOP_LOG, PL_SOP_LOG1P, PL_SOP_SQRT,
  PL_SOP_RECIP, PL_SOP_TANH, PL_SOP_ERF, PL_SOP_SIN, PL_SOP_COS, PL_SOP_TAN, PL_SOP_ASIN,
  PL_SOP_ACOS, PL_SOP_ATAN, PL_SOP_SINH, PL_SOP_COSH, PL_SOP_ASINH, PL_SOP_ACOSH, PL_SOP_ATANH,
  PL_SOP_FLOOR, PL_SOP_CEIL, PL_SOP_ROUND, PL_SOP_SIGMOID, PL_SOP_SIGN,
  PL_SOP_NOT,       /* bool -> bool */
  PL_SOP_ISNAN,     /* float -> bool */
  PL_SOP_ISINF,     /* float -> bool; imm_i bit 0: detect negative, bit 1: positive */
  PL_SOP_CAST,      /* a[0] converted to dtype (to bool: != 0) */
  PL_SOP_CHECK,     /* a[0] (bool), which when true also sets the kernel's status word: an index out
                     * of range, a[1] (i64), or a division by zero, which the runtime then reports
                     * (pl_kernel_plan_checks); imm_i: the check's number, 1 + its entry in the loop's
                     * checks (the message, "%I" standing for a[1]) */
  /* binary: a[0], a[1] of one dtype */
  PL_SOP_ADD, PL_SOP_SUB, PL_SOP_MUL,
  PL_SOP_DIV,       /* floats by a row value may become a multiply by its reciprocal, unless imm_i
                     * is PL_DIV_EXACT (a quantization's rounding must see the true quotient) */
  PL_SOP_POW,
  PL_SOP_MOD,       /* imm_i 1: truncated (C fmod); 0: floored, the divisor's sign (numpy.mod); by 0: 0 */
  PL_SOP_MAX, PL_SOP_MIN,           /* NaN-propagating, as numpy.maximum */
  PL_SOP_EQ, PL_SOP_LT, PL_SOP_LE, PL_SOP_GT, PL_SOP_GE,   /* -> bool */
  PL_SOP_AND, PL_SOP_OR, PL_SOP_XOR,                      /* bool */
  /* ternary */
  PL_SOP_SELECT,    /* a[0] (bool) ? a[1] : a[2] */
  PL_SOP_COUNT
} PlScalarOp;

#define PL_DIV_EXACT 1

typedef enum {
  PL_LEVEL_CONST,   /* the same everywhere */
  PL_LEVEL_ROW,     /* depends on the row only */
  PL_LEVEL_ELEM,    /* depends on the element within the row */
} PlLevel;

typedef struct {
  PlScalarOp   op;
  PlDType      dtype;      /* of the result */
  int          a[3];
  int          n_args;
  double       imm;
  int64_t      imm_i;
  int          slot;       /* LOAD */
  const PlIdx *index;      /* LOAD: element offset */
  int          reduction;  /* REDUCED */
  /* set by the planner */
  PlLevel      level;
  int          phase;      /* first pass where it can be computed */
  guint32      passes;     /* passes that need it (bit mask) */
  int          scratch;    /* >= 0: materialized in this scratch row */
  bool         used;
} PlInstr;

typedef enum {
  PL_RED_SUM, PL_RED_PROD, PL_RED_MAX, PL_RED_MIN, PL_RED_ARGMAX, PL_RED_ARGMIN,
} PlReduceKind;

typedef struct {
  PlReduceKind kind;
  int          arg;          /* element instruction accumulated */
  PlDType      dtype;        /* accumulator and result (ARGMAX/ARGMIN: i64; arg keeps its own) */
  bool         select_last;  /* ARGMAX/ARGMIN ties */
  int          pass;
} PlReduction;

typedef struct {
  int          slot;     /* output slot */
  int          value;    /* instruction stored */
  const PlIdx *index;
  PlLevel      level;    /* ELEM: in pass `pass`; ROW: after the last pass */
  int          pass;
} PlStore;

typedef struct {
  int          rank;                 /* loop dims */
  int64_t      dims[PL_MAX_RANK];
  int          n_kept;               /* dims[0..n_kept) are rows, the rest reduced */
  int64_t      n_rows, row_len;
  int64_t      total;                /* n_rows * row_len */
  GArray      *instrs;               /* PlInstr, in dependency order */
  GArray      *reductions;           /* PlReduction */
  GArray      *stores;               /* PlStore */
  GPtrArray   *checks;               /* char *: each PL_SOP_CHECK's message, %I for its value */
  int          n_passes;
  int          n_scratch;            /* materialized element values per row */
  PlDType      scratch_dtype;        /* widest materialized type (scratch rows hold values as this) */
  PlIdxArena  *arena;
  /* thread mapping (stitch attributes of the fusion node; 0: choose) */
  int          block_size, rows_per_block, blocks_per_row;
} PlLoopPlan;

/* A LOAD whose offset adds a loaded value (Gather's): no affine address. */
#define PL_INSTR_IS_GATHER(x) ((x)->op == PL_SOP_LOAD && (x)->n_args == 1)

/* Instruction i and reduction r of a loop plan; whether a reduction kind
 * yields an index (argmax, argmin). */
static inline const PlInstr *
pl_loop_instr (const PlLoopPlan *lp, int i)
{
  return &g_array_index (lp->instrs, PlInstr, i);
}

static inline const PlReduction *
pl_loop_reduction (const PlLoopPlan *lp, int r)
{
  return &g_array_index (lp->reductions, PlReduction, r);
}

static inline bool
pl_reduce_is_arg (PlReduceKind k)
{
  return k == PL_RED_ARGMAX || k == PL_RED_ARGMIN;
}

typedef enum {
  PL_PLAN_LOOP,      /* one generated loop kernel */
  PL_PLAN_GEMM,      /* a (batched) GEMM + epilogue */
  PL_PLAN_CONV,      /* a convolution (im2col + GEMM on the CPU) + epilogue */
  PL_PLAN_POOL,      /* a generated pooling kernel (pool.h): X -> Y in their layout */
  PL_PLAN_SCAN,      /* a generated CumSum kernel (scan.h): X -> Y */
  PL_PLAN_SCATTER,   /* generated ScatterND / ScatterElements kernels (scatter.h) */
  PL_PLAN_TOPK,      /* a generated TopK kernel (topk.h): X -> values, indices */
  PL_PLAN_ALIAS,     /* the output is the input (Reshape, Squeeze, Identity, ...) */
  PL_PLAN_FALLBACK,  /* the op's reference implementation on host tensors */
} PlPlanKind;

typedef struct {
  PlDType  dtype;
  int64_t  M, N, K;
  bool     trans_a, trans_b;   /* op(A) is M x K, op(B) is K x N; row-major storage */
  double   alpha;
  int      batch_rank;          /* output batch dims */
  int64_t  batch_dims[PL_MAX_RANK];
  int64_t  a_strides[PL_MAX_RANK], b_strides[PL_MAX_RANK];   /* element strides per batch dim (0: broadcast) */
  int64_t  batch;               /* product of batch_dims */
  int      a_slot, b_slot;
} PlGemmDesc;

/* How a convolution is computed (the `impl` attribute of a Conv node, set
 * by the layout pass; absent: GEMM). */
typedef enum {
  PL_CONV_IMPL_GEMM,            /* im2col (or nothing, for 1x1) + BLAS GEMM, in the conv's layout */
  PL_CONV_IMPL_DIRECT,          /* generated direct convolution, tiled (conv-direct.h) */
} PlConvImpl;

/* A convolution's geometry. transpose: a ConvTranspose (conv-transpose.h),
 * whose X has c_in channels and spatial dims `in`, Y c_out and `out`; its
 * column matrix of one (image, group) is (C_out/g * prod kernel) x prod in,
 * pads holds the begins shape inference resolved (the ends are implied by
 * out), and X and Y are read and written in the default layout. */
typedef struct {
  PlDType  dtype;
  bool     transpose;           /* ConvTranspose */
  int      n;                   /* spatial dims */
  int64_t  batch, c_in, c_out, group;
  int64_t  in[PL_MAX_RANK], kernel[PL_MAX_RANK], out[PL_MAX_RANK];
  int64_t  strides[PL_MAX_RANK], dilations[PL_MAX_RANK], pads[2 * PL_MAX_RANK];
  int64_t  col_rows, col_cols;  /* im2col matrix of one (image, group): (C/g * prod kernel) x prod out
                                 * (transpose: the col2im matrix, see above) */
  int      x_slot, w_slot;
  /* physical layouts of X and Y (layout.h; non-default only for 2-d convs) */
  PlLayout x_layout, y_layout;
  PlConvImpl impl;              /* attribute impl="gemm"|"direct" */
  int64_t  tile[3];             /* DIRECT: output tile width x height x channels (attribute tile=[x,y,z]); 0: pebble rule */
} PlConvDesc;

typedef struct _PlKernelPlan PlKernelPlan;
struct _PlKernelPlan {
  PlPlanKind    kind;
  char         *name;        /* C identifier, unique in one executable */
  char         *ops;         /* "Sub+Pow+ReduceMean" */
  int           n_ops;
  GPtrArray    *inputs;      /* PlValue*: the value each input slot reads (the lowered graph's) */
  GPtrArray    *outputs;     /* PlValue*: the value each output slot writes */
  PlLoopPlan   *loop;        /* LOOP; GEMM/CONV: the epilogue or NULL */
  PlGemmDesc    gemm;        /* GEMM; a transposed CONV: one image's GEMM, cols_g = W_g^T X_g batched over groups */
  PlConvDesc    conv;
  PlPoolDesc    pool;        /* POOL */
  PlScanDesc    scan;        /* SCAN */
  PlScatterDesc scatter;     /* SCATTER */
  PlTopKDesc    topk;        /* TOPK */
  int           lib_slot;    /* GEMM/CONV with an epilogue: the input slot holding the library result */
  bool          in_place;    /* GEMM/CONV: the library writes output 0; the epilogue updates it in place */
  bool         *shared_in;   /* LOOP: per slot, whether it shares memory with an output slot (the */
  bool         *shared_out;  /*   runtime's in-place sharing: pl_kernel_plan_share); NULL: none */
  const PlNode *node;        /* FALLBACK / ALIAS: the op */
  int64_t       flops;
  char         *note;        /* why a fallback, the library call, ... */
};

/* Plans the kernel of one top-level node: a fusion node's body, or a single
 * op. A single op that cannot be generated becomes a FALLBACK plan (note
 * says why); a fusion body that is not one kernel fails with
 * PL_ERROR_UNSUPPORTED (the runtime then runs its body node by node). */
PlKernelPlan *pl_kernel_plan_for_node (const char *name, const PlNode *node, GError **error);
/* Plans nodes[n_nodes] (topological order) writing outputs[n_outputs]; values
 * no node of the set produces are inputs. hints (may be NULL) is the fusion
 * node whose stitch attributes set the thread mapping. */
PlKernelPlan *pl_kernel_plan_new      (const char *name, PlNode *const *nodes, int n_nodes,
                                       PlValue *const *outputs, int n_outputs, const PlNode *hints,
                                       GError **error);
/* Fills c from a Conv node with static shapes (slots left 0; layouts from
 * its X and Y values, impl and tile from its attributes). false with *why
 * (g_free) when the conv cannot be planned. */
bool          pl_conv_desc_from_node  (const PlNode *conv, PlConvDesc *c, char **why);
/* The same for a ConvTranspose node (c->transpose set). */
bool          pl_conv_transpose_desc_from_node (const PlNode *ct, PlConvDesc *c, char **why);
/* A FALLBACK plan for node (a fusion node runs its body in the interpreter). */
PlKernelPlan *pl_kernel_plan_fallback (const char *name, const PlNode *node, const char *why);
void          pl_kernel_plan_free     (PlKernelPlan *p);
/* In-place sharing (the runtime's memory plan, runtime.c): whether output
 * slot `out` of p may be stored over input slot `in` — a pointwise LOOP
 * (no reductions, one pass) that reads `in` only at the element offset
 * where it writes `out` (every load of it, every store to it), with the same
 * element size, so each element is read before it is overwritten, by the
 * same thread, in the same iteration. */
bool          pl_kernel_plan_overwrites (const PlKernelPlan *p, int in, int out);
/* Marks input slot `in` and output slot `out` as sharing memory: the code
 * generators then declare neither restrict. */
void          pl_kernel_plan_share    (PlKernelPlan *p, int in, int out);
/* Whether the generated code may declare slot k (an input, or an output
 * when `output`) restrict: no other slot shares its memory (the in-place
 * epilogue of a GEMM/CONV, pl_kernel_plan_share). */
bool          pl_kernel_plan_restrict (const PlKernelPlan *p, bool output, int k);
/* Whether p's loop checks indices (PL_SOP_CHECK): its code then takes a
 * status (PL_STATUS_WORDS int64s; cpu: args[n_in + n_out]; cuda: the
 * argument before the scratch) where the first index out of range that a
 * thread claims writes the check's number and the index (SCATTER plans
 * always check). pl_kernel_plan_check_message: check `id`'s message for
 * that value ("index 5 of Gather 'g' (axis 0 of size 5) is out of range"). */
#define PL_STATUS_WORDS 2
bool          pl_kernel_plan_checks   (const PlKernelPlan *p);
char         *pl_kernel_plan_check_message (const PlKernelPlan *p, int64_t id, int64_t value);
/* A readable dump of the loop IR (tests, --show-source). */
char         *pl_kernel_plan_dump     (const PlKernelPlan *p);

/* The C type name of a dtype in generated code ("float", "int64_t", ...);
 * NULL when code generation does not handle it (f16, bf16). */
const char   *pl_plan_ctype           (PlDType d);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlKernelPlan, pl_kernel_plan_free)

G_END_DECLS
