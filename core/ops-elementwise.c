/* ops-elementwise.c — shape inference and reference evaluation of the
 * elementwise ops with several inputs: the binary and variadic ops with
 * numpy broadcasting (Add .. Xor, PRelu), Where, and BatchNormalization; the
 * dtype checks every elementwise op shares; and the section's registration.
 * The one-input ops live in ops-unary.c.
 *
 * Every binary and variadic op is a left fold: out = f(..f(f(x0, x1), x2)..),
 * evaluated per output element over broadcast inputs. Integer operands fold
 * in int64 (exact, wrapping like the C types, u64 compared and divided
 * unsigned), anything with a float operand in double.
 */
#define G_LOG_DOMAIN "passlab"
#include "ops-elementwise.h"

#include <math.h>
#include <string.h>

/* --- shared checks ---------------------------------------------------------- */

int
pl_ew_opset (const PlNode *node)
{
  return node->graph && node->graph->opset > 0 ? node->graph->opset : 17;
}

bool
pl_ew_require (const PlNode *node, int i, GError **error)
{
  if (pl_input (node, i))
    return true;
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input %d is required", i);
  return false;
}

static unsigned
dtype_class (PlDType d)
{
  if (pl_dtype_is_float (d))
    return PL_TY_FLOAT;
  if (d == PL_DTYPE_BOOL)
    return PL_TY_BOOL;
  return pl_dtype_is_signed (d) ? PL_TY_SINT : PL_TY_UINT;
}

bool
pl_ew_check_dtype (const PlNode *node, int i, unsigned types, GError **error)
{
  PlValue *v = pl_input (node, i);
  if (!v || v->dtype == PL_DTYPE_UNDEFINED || (dtype_class (v->dtype) & types))
    return true;
  static const char *const names[] = { "float", "signed int", "unsigned int", "bool" };
  g_autoptr (GString) want = g_string_new (NULL);
  for (int k = 0; k < 4; k++)
    if (types & (1u << k))
      g_string_append_printf (want, "%s%s", want->len ? ", " : "", names[k]);
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input %d has dtype %s; expects %s", i,
               pl_dtype_name (v->dtype), want->str);
  return false;
}

bool
pl_ew_same_dtype (const PlNode *node, int i, int j, GError **error)
{
  PlValue *a = pl_input (node, i), *b = pl_input (node, j);
  if (!a || !b || a->dtype == PL_DTYPE_UNDEFINED || b->dtype == PL_DTYPE_UNDEFINED
      || a->dtype == b->dtype)
    return true;
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
               "inputs %d and %d must have the same dtype, got %s and %s", i, j,
               pl_dtype_name (a->dtype), pl_dtype_name (b->dtype));
  return false;
}

/* --- broadcasting ----------------------------------------------------------- */

/* Before opset 7, binary ops broadcast B onto A only with broadcast=1, and
 * `axis` placed B's dims at A's dim `axis` rather than at the end. Returns how
 * many trailing 1-dims make B numpy-broadcastable (0 for modern graphs). */
static bool
legacy_pad (const PlNode *node, int rank_a, int rank_b, int *pad, GError **error)
{
  *pad = 0;
  if (pl_ew_opset (node) >= 7 || pl_node_attr_int (node, "broadcast", 0) == 0
      || !pl_node_attr (node, "axis") || rank_a < 0 || rank_b < 0)
    return true;
  int axis;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), rank_a, &axis, error))
    return false;
  *pad = rank_a - axis - rank_b;
  if (*pad < 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                   "legacy broadcast: B of rank %d does not fit A of rank %d at axis %d",
                   rank_b, rank_a, axis);
      return false;
    }
  return true;
}

/* Broadcasts the shapes of inputs 0..n-1 (all present) into *out. */
static bool
infer_broadcast (const PlNode *node, int n, PlShape *out, GError **error)
{
  *out = pl_shape_scalar ();
  for (int i = 0; i < n; i++)
    {
      PlShape s = pl_input (node, i)->shape, tmp;
      int pad = 0;
      if (i == 1 && !legacy_pad (node, out->rank, s.rank, &pad, error))
        return false;
      for (int k = 0; k < pad && s.rank < PL_MAX_RANK; k++)
        s.dims[s.rank++] = pl_dim_static (1);
      if (!pl_shape_broadcast (out, &s, &tmp, error))
        return false;
      *out = tmp;
    }
  return true;
}

/* Where element `linear` of the broadcast output lives in one input. */
typedef enum { AT_SAME, AT_SCALAR, AT_STRIDED } AtMode;

typedef struct {
  AtMode  mode;
  int     rank;                  /* the output's */
  int64_t dims[PL_MAX_RANK];     /* the output's */
  int64_t strides[PL_MAX_RANK];  /* the input's, 0 along broadcast dims */
  int     in_rank;               /* the input's, after legacy padding */
  int64_t in_dims[PL_MAX_RANK];
} BIndex;

static inline int64_t
bindex_at (const BIndex *b, int64_t linear)
{
  switch (b->mode)
    {
    case AT_SAME:
      return linear;
    case AT_SCALAR:
      return 0;
    default:
      return pl_offset_of (linear, b->rank, b->dims, b->strides);
    }
}

/* Broadcasts n tensors (after the legacy padding of the second): fills the
 * output dims and one BIndex per input. */
static bool
broadcast_tensors (const PlNode *node, PlTensor *const *ts, int n, int *rank, int64_t *dims,
                   BIndex *bi, GError **error)
{
  *rank = 0;
  for (int k = 0; k < n; k++)
    {
      int pad = 0, r;
      int64_t tmp[PL_MAX_RANK] = { 0 };
      if (k == 1 && !legacy_pad (node, ts[0]->rank, ts[1]->rank, &pad, error))
        return false;
      bi[k].in_rank = ts[k]->rank;
      memcpy (bi[k].in_dims, ts[k]->dims, sizeof (int64_t) * ts[k]->rank);
      for (int p = 0; p < pad && bi[k].in_rank < PL_MAX_RANK; p++)
        bi[k].in_dims[bi[k].in_rank++] = 1;
      if (!pl_broadcast_dims (*rank, dims, bi[k].in_rank, bi[k].in_dims, &r, tmp, error))
        return false;
      *rank = r;
      memcpy (dims, tmp, sizeof tmp);
    }
  int64_t numel = 1;
  for (int d = 0; d < *rank; d++)
    numel *= dims[d];
  for (int k = 0; k < n; k++)
    {
      bi[k].rank = *rank;
      memcpy (bi[k].dims, dims, sizeof bi[k].dims);
      if (ts[k]->numel == numel && bi[k].in_rank == *rank)
        bi[k].mode = AT_SAME;
      else if (ts[k]->numel == 1)
        bi[k].mode = AT_SCALAR;
      else
        {
          bi[k].mode = AT_STRIDED;
          pl_broadcast_strides (bi[k].in_rank, bi[k].in_dims, *rank, dims, bi[k].strides);
        }
    }
  return true;
}

/* --- the binary and variadic ops -------------------------------------------- */

typedef struct {
  int64_t fmod;        /* Mod: 1 truncates (C, np.fmod), 0 floors (np.mod) */
  bool    shift_left;  /* BitShift */
  bool    u64;         /* operands are u64: compare and divide unsigned */
  bool    div_zero;    /* set when an integer division by zero happened */
} BinCtx;

typedef double  (*BinF) (double a, double b, BinCtx *c);
typedef int64_t (*BinI) (int64_t a, int64_t b, BinCtx *c);

typedef struct {
  PlOp     op;
  gint8    min_inputs, max_inputs;
  unsigned types;    /* accepted dtypes of every input */
  unsigned types_b;  /* Pow: of the exponent, which may differ; 0: inputs share one dtype */
  bool     to_bool;  /* comparisons and logic ops */
  BinF     f;
  BinI     i;
} BinDef;

#define U64(x) ((uint64_t) (x))
#define BIN_F(name, expr) \
  static double bf_##name (double a, double b, BinCtx *c G_GNUC_UNUSED) { return (expr); }
#define BIN_I(name, expr) \
  static int64_t bi_##name (int64_t a, int64_t b, BinCtx *c G_GNUC_UNUSED) { return (expr); }

/* Integer + - * wrap through uint64 (no signed-overflow UB). */
BIN_F (add, a + b)
BIN_I (add, (int64_t) (U64 (a) + U64 (b)))
BIN_F (sub, a - b)
BIN_I (sub, (int64_t) (U64 (a) - U64 (b)))
BIN_F (mul, a * b)
BIN_I (mul, (int64_t) (U64 (a) * U64 (b)))
BIN_F (div, a / b)
BIN_F (pow, pow (a, b))
/* Max and Min propagate NaN, as numpy.maximum does. */
BIN_F (max, isnan (a) || isnan (b) ? a + b : a > b ? a : b)
BIN_I (max, (c->u64 ? U64 (a) > U64 (b) : a > b) ? a : b)
BIN_F (min, isnan (a) || isnan (b) ? a + b : a < b ? a : b)
BIN_I (min, (c->u64 ? U64 (a) < U64 (b) : a < b) ? a : b)
BIN_F (equal, a == b)
BIN_I (equal, a == b)
BIN_F (less, a < b)
BIN_I (less, c->u64 ? U64 (a) < U64 (b) : a < b)
BIN_F (less_equal, a <= b)
BIN_I (less_equal, c->u64 ? U64 (a) <= U64 (b) : a <= b)
BIN_F (greater, a > b)
BIN_I (greater, c->u64 ? U64 (a) > U64 (b) : a > b)
BIN_F (greater_equal, a >= b)
BIN_I (greater_equal, c->u64 ? U64 (a) >= U64 (b) : a >= b)
BIN_F (and, a != 0 && b != 0)
BIN_I (and, a != 0 && b != 0)
BIN_F (or, a != 0 || b != 0)
BIN_I (or, a != 0 || b != 0)
BIN_F (xor, (a != 0) != (b != 0))
BIN_I (xor, (a != 0) != (b != 0))
BIN_F (prelu, a < 0 ? b * a : a)
BIN_I (prelu, !c->u64 && a < 0 ? (int64_t) (U64 (a) * U64 (b)) : a)

/* Truncating division; INT64_MIN / -1 wraps. */
static int64_t
bi_div (int64_t a, int64_t b, BinCtx *c)
{
  if (b == 0)
    {
      c->div_zero = true;
      return 0;
    }
  if (c->u64)
    return (int64_t) (U64 (a) / U64 (b));
  return b == -1 ? (int64_t) (0 - U64 (a)) : a / b;
}

static double
bf_mod (double a, double b, BinCtx *c)
{
  double r = fmod (a, b);
  if (!c->fmod && r != 0 && (r < 0) != (b < 0))
    r += b;  /* numpy.mod: the result takes the divisor's sign */
  return r;
}

static int64_t
bi_mod (int64_t a, int64_t b, BinCtx *c)
{
  if (b == 0)
    {
      c->div_zero = true;
      return 0;
    }
  if (c->u64)
    return (int64_t) (U64 (a) % U64 (b));
  int64_t r = b == -1 ? 0 : a % b;
  if (!c->fmod && r != 0 && (r < 0) != (b < 0))
    r += b;
  return r;
}

/* Exact integer power by squaring (wrapping); negative exponents truncate
 * 1 / a^-b toward zero. */
static int64_t
bi_pow (int64_t a, int64_t b, BinCtx *c G_GNUC_UNUSED)
{
  if (b < 0)
    return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, base = U64 (a), e = U64 (b);
  for (; e; e >>= 1, base *= base)
    if (e & 1)
      r *= base;
  return (int64_t) r;
}

/* Shifts by the width or more give 0; the store truncates to the type. */
static int64_t
bi_bitshift (int64_t a, int64_t b, BinCtx *c)
{
  if (U64 (b) >= 64)
    return 0;
  return (int64_t) (c->shift_left ? U64 (a) << b : U64 (a) >> b);
}

static double
bf_bitshift (double a, double b, BinCtx *c)
{
  return (double) bi_bitshift ((int64_t) a, (int64_t) b, c);
}

static const BinDef bin_defs[] = {
  { PL_OP_Add, 2, 2, PL_TY_NUM, 0, false, bf_add, bi_add },
  { PL_OP_Sub, 2, 2, PL_TY_NUM, 0, false, bf_sub, bi_sub },
  { PL_OP_Mul, 2, 2, PL_TY_NUM, 0, false, bf_mul, bi_mul },
  { PL_OP_Div, 2, 2, PL_TY_NUM, 0, false, bf_div, bi_div },
  { PL_OP_Pow, 2, 2, PL_TY_SIGNED, PL_TY_NUM, false, bf_pow, bi_pow },
  { PL_OP_Mod, 2, 2, PL_TY_NUM, 0, false, bf_mod, bi_mod },
  { PL_OP_BitShift, 2, 2, PL_TY_UINT, 0, false, bf_bitshift, bi_bitshift },
  { PL_OP_Max, 1, -1, PL_TY_NUM, 0, false, bf_max, bi_max },
  { PL_OP_Min, 1, -1, PL_TY_NUM, 0, false, bf_min, bi_min },
  { PL_OP_Sum, 1, -1, PL_TY_FLOAT, 0, false, bf_add, bi_add },
  { PL_OP_Mean, 1, -1, PL_TY_FLOAT, 0, false, bf_add, bi_add },
  { PL_OP_Equal, 2, 2, PL_TY_ANY, 0, true, bf_equal, bi_equal },
  { PL_OP_Less, 2, 2, PL_TY_NUM, 0, true, bf_less, bi_less },
  { PL_OP_LessOrEqual, 2, 2, PL_TY_NUM, 0, true, bf_less_equal, bi_less_equal },
  { PL_OP_Greater, 2, 2, PL_TY_NUM, 0, true, bf_greater, bi_greater },
  { PL_OP_GreaterOrEqual, 2, 2, PL_TY_NUM, 0, true, bf_greater_equal, bi_greater_equal },
  { PL_OP_And, 2, 2, PL_TY_BOOL, 0, true, bf_and, bi_and },
  { PL_OP_Or, 2, 2, PL_TY_BOOL, 0, true, bf_or, bi_or },
  { PL_OP_Xor, 2, 2, PL_TY_BOOL, 0, true, bf_xor, bi_xor },
  { PL_OP_PRelu, 2, 2, PL_TY_NUM, 0, false, bf_prelu, bi_prelu },
};

static const BinDef *
bin_def (PlOp op)
{
  for (size_t k = 0; k < G_N_ELEMENTS (bin_defs); k++)
    if (bin_defs[k].op == op)
      return &bin_defs[k];
  g_assert_not_reached ();
  return NULL;
}

static bool
bin_ctx (const PlNode *node, BinCtx *c, GError **error)
{
  memset (c, 0, sizeof *c);
  c->fmod = pl_node_attr_int (node, "fmod", 0);
  if (node->op == PL_OP_BitShift)
    {
      const char *dir = pl_node_attr_string (node, "direction", "");
      c->shift_left = strcmp (dir, "LEFT") == 0;
      if (!c->shift_left && strcmp (dir, "RIGHT") != 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                       "direction must be 'LEFT' or 'RIGHT', got '%s'", dir);
          return false;
        }
    }
  return true;
}

static bool
infer_fold (PlNode *node, GError **error)
{
  const BinDef *def = bin_def (node->op);
  BinCtx c;
  PlShape shape;
  if (!bin_ctx (node, &c, error))
    return false;
  /* A mismatch against input 0 is the clearer message, so it comes first. */
  for (int i = 0; i < node->n_inputs; i++)
    if (!pl_ew_require (node, i, error)
        || (!def->types_b && !pl_ew_same_dtype (node, 0, i, error))
        || !pl_ew_check_dtype (node, i, i == 1 && def->types_b ? def->types_b : def->types, error))
      return false;
  if (!infer_broadcast (node, node->n_inputs, &shape, error))
    return false;
  /* PRelu's slope broadcasts one way: onto X, never growing it. */
  PlShape *x = &pl_input (node, 0)->shape;
  if (node->op == PL_OP_PRelu && pl_shape_is_static (&shape) && pl_shape_is_static (x)
      && !pl_shape_equal (&shape, x))
    {
      g_autofree char *sx = pl_shape_to_string (x);
      g_autofree char *ss = pl_shape_to_string (&pl_input (node, 1)->shape);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "slope %s does not broadcast to X %s", ss, sx);
      return false;
    }
  pl_set_output (node, 0, def->to_bool ? PL_DTYPE_BOOL : pl_input (node, 0)->dtype, &shape);
  return true;
}

static bool
eval_fold (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const BinDef *def = bin_def (node->op);
  int n = node->n_inputs, rank;
  int64_t dims[PL_MAX_RANK];
  g_autofree BIndex *bi = g_new (BIndex, n);
  BinCtx c;
  bool int_path = true;

  if (!bin_ctx (node, &c, error) || !broadcast_tensors (node, inputs, n, &rank, dims, bi, error))
    return false;
  for (int k = 0; k < n; k++)
    int_path = int_path && !pl_dtype_is_float (inputs[k]->dtype);
  c.u64 = inputs[0]->dtype == PL_DTYPE_U64;

  g_autoptr (PlTensor) y = pl_out_new (def->to_bool ? PL_DTYPE_BOOL : inputs[0]->dtype,
                                       rank, dims, error);
  if (!y)
    return false;
  for (int64_t i = 0; i < y->numel; i++)
    if (int_path)
      {
        int64_t v = pl_tensor_get_i64 (inputs[0], bindex_at (&bi[0], i));
        for (int k = 1; k < n; k++)
          v = def->i (v, pl_tensor_get_i64 (inputs[k], bindex_at (&bi[k], i)), &c);
        pl_tensor_set_i64 (y, i, v);
      }
    else
      {
        double v = pl_tensor_get_f64 (inputs[0], bindex_at (&bi[0], i));
        for (int k = 1; k < n; k++)
          v = def->f (v, pl_tensor_get_f64 (inputs[k], bindex_at (&bi[k], i)), &c);
        pl_tensor_set_f64 (y, i, node->op == PL_OP_Mean ? v / n : v);
      }
  if (c.div_zero)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "integer division by zero");
      return false;
    }
  outputs[0] = g_steal_pointer (&y);
  return true;
}

/* --- Where ------------------------------------------------------------------ */

static bool
infer_where (PlNode *node, GError **error)
{
  PlShape shape;
  for (int i = 0; i < 3; i++)
    if (!pl_ew_require (node, i, error))
      return false;
  if (!pl_ew_check_dtype (node, 0, PL_TY_BOOL, error) || !pl_ew_same_dtype (node, 1, 2, error)
      || !infer_broadcast (node, 3, &shape, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 1)->dtype, &shape);
  return true;
}

/* Copies elements bytewise, so every dtype (u64 included) is exact. */
static bool
eval_where (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  BIndex bi[3];
  int rank;
  int64_t dims[PL_MAX_RANK];
  const PlTensor *x = inputs[1], *y = inputs[2];
  if (x->dtype != y->dtype)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "Where: X is %s but Y is %s",
                   pl_dtype_name (x->dtype), pl_dtype_name (y->dtype));
      return false;
    }
  if (!broadcast_tensors (node, inputs, 3, &rank, dims, bi, error))
    return false;
  PlTensor *out = pl_out_new (x->dtype, rank, dims, error);
  if (!out)
    return false;
  size_t es = pl_dtype_size (x->dtype);
  for (int64_t i = 0; i < out->numel; i++)
    {
      bool pick_x = pl_tensor_get_i64 (inputs[0], bindex_at (&bi[0], i)) != 0;
      const PlTensor *src = pick_x ? x : y;
      int64_t off = bindex_at (&bi[pick_x ? 1 : 2], i);
      memcpy ((char *) out->data + i * es, (const char *) src->data + off * es, es);
    }
  outputs[0] = out;
  return true;
}

/* --- BatchNormalization ----------------------------------------------------- */

/* Inputs X [N, C, ...], scale, B, mean, var [C]. Since opset 15 scale/B and
 * mean/var may each have their own float type; before, all share X's. */
static bool
infer_batchnorm (PlNode *node, GError **error)
{
  static const char *const names[] = { "X", "scale", "B", "mean", "var" };
  for (int i = 0; i < 5; i++)
    if (!pl_ew_require (node, i, error) || !pl_ew_check_dtype (node, i, PL_TY_FLOAT, error))
      return false;
  if (pl_ew_opset (node) < 15)
    {
      for (int i = 1; i < 5; i++)
        if (!pl_ew_same_dtype (node, 0, i, error))
          return false;
    }
  else if (!pl_ew_same_dtype (node, 1, 2, error) || !pl_ew_same_dtype (node, 3, 4, error))
    return false;

  PlValue *x = pl_input (node, 0), *mean = pl_input (node, 3);
  if (x->shape.rank != PL_RANK_UNKNOWN && x->shape.rank < 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "X must have rank >= 2 (N, C, ...), got %d",
                   x->shape.rank);
      return false;
    }
  /* Per-channel parameters (spatial=1, the only mode since opset 9) must have C elements. */
  if (x->shape.rank >= 2 && pl_dim_is_static (x->shape.dims[1])
      && pl_node_attr_int (node, "spatial", 1) != 0)
    for (int i = 1; i < 5; i++)
      {
        PlShape *s = &pl_input (node, i)->shape;
        if (s->rank == 1 && pl_dim_is_static (s->dims[0])
            && s->dims[0].size != x->shape.dims[1].size)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                         "%s has %" G_GINT64_FORMAT " elements but X has C = %" G_GINT64_FORMAT,
                         names[i], s->dims[0].size, x->shape.dims[1].size);
            return false;
          }
      }
  pl_set_output (node, 0, x->dtype, &x->shape);
  for (int o = 1; o < 5; o++)  /* running (1, 2) and saved (3, 4) mean and var */
    pl_set_output (node, o, pl_input (node, o % 2 ? 3 : 4)->dtype, &mean->shape);
  return true;
}

/* Batch statistics per channel (population variance, as numpy's var). */
static void
batch_stats (const PlTensor *x, int64_t c_dim, int64_t inner, double *mean, double *var)
{
  int64_t count = x->numel / c_dim;
  for (int64_t i = 0; i < x->numel; i++)
    mean[(i / inner) % c_dim] += pl_tensor_get_f64 (x, i);
  for (int64_t c = 0; c < c_dim; c++)
    mean[c] /= count;
  for (int64_t i = 0; i < x->numel; i++)
    {
      double d = pl_tensor_get_f64 (x, i) - mean[(i / inner) % c_dim];
      var[(i / inner) % c_dim] += d * d;
    }
  for (int64_t c = 0; c < c_dim; c++)
    var[c] /= count;
}

/* A [C] output of dtype like: values v (or like's own values when v is NULL)
 * blended as like * momentum + v * (1 - momentum). */
static PlTensor *
channel_output (const PlTensor *like, const double *v, double momentum, GError **error)
{
  PlTensor *t = pl_out_new (like->dtype, like->rank, like->dims, error);
  if (t)
    for (int64_t c = 0; c < t->numel; c++)
      pl_tensor_set_f64 (t, c, v ? pl_tensor_get_f64 (like, c) * momentum + v[c] * (1 - momentum)
                                 : pl_tensor_get_f64 (like, c));
  return t;
}

/* Inference mode normalizes with the given mean and var. Training mode
 * (training_mode=1 since opset 14; extra outputs before) normalizes with the
 * batch's statistics and outputs the updated running mean and var. */
static bool
eval_batchnorm (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *scale = inputs[1], *bias = inputs[2];
  const PlTensor *mean = inputs[3], *var = inputs[4];
  double eps = pl_node_attr_float (node, "epsilon", 1e-5f);
  double momentum = pl_node_attr_float (node, "momentum", 0.9f);
  bool has_stats_out = node->n_outputs > 1 && node->outputs[1];
  bool training = pl_ew_opset (node) >= 14 ? pl_node_attr_int (node, "training_mode", 0) != 0
                                           : has_stats_out;
  if (x->rank < 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "BatchNormalization needs rank >= 2");
      return false;
    }
  int64_t c_dim = x->dims[1], inner = 1;
  for (int d = 2; d < x->rank; d++)
    inner *= x->dims[d];
  /* Parameters have C elements, or (spatial=0, opset < 9) one per feature. */
  int64_t per_feature = x->dims[0] ? x->numel / x->dims[0] : 0;
  bool spatial = scale->numel == c_dim;
  for (int i = 1; i < 5; i++)
    if (inputs[i]->numel != (spatial ? c_dim : per_feature) || (training && !spatial))
      {
        g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "BatchNormalization: input %d has %"
                     G_GINT64_FORMAT " elements, expected C = %" G_GINT64_FORMAT, i,
                     inputs[i]->numel, c_dim);
        return false;
      }

  g_autofree double *bm = g_new0 (double, c_dim);
  g_autofree double *bv = g_new0 (double, c_dim);
  if (training)
    batch_stats (x, c_dim, inner, bm, bv);

  g_autoptr (PlTensor) y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (!y)
    return false;
  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t p = spatial ? (i / inner) % c_dim : i % per_feature;
      double m = training ? bm[p] : pl_tensor_get_f64 (mean, p);
      double v = training ? bv[p] : pl_tensor_get_f64 (var, p);
      double xn = (pl_tensor_get_f64 (x, i) - m) / sqrt (v + eps);
      pl_tensor_set_f64 (y, i, pl_tensor_get_f64 (scale, p) * xn + pl_tensor_get_f64 (bias, p));
    }

  /* Outputs 1, 2: running mean and var; 3, 4 (opset < 14): the batch's. */
  for (int o = 1; o < node->n_outputs && o < 5; o++)
    if (node->outputs[o])
      {
        const PlTensor *like = o % 2 ? mean : var;
        const double *stats = o % 2 ? bm : bv;
        if (o >= 3)
          outputs[o] = channel_output (like, stats, 0.0, error);
        else
          outputs[o] = channel_output (like, training ? stats : NULL, momentum, error);
        if (!outputs[o])
          return false;
      }
  outputs[0] = g_steal_pointer (&y);
  return true;
}

/* --- registration ----------------------------------------------------------- */

void
pl_ops_register_elementwise (void)
{
  PlOpEntry entries[G_N_ELEMENTS (bin_defs) + 2];
  int n = 0;
  for (size_t k = 0; k < G_N_ELEMENTS (bin_defs); k++)
    entries[n++] = (PlOpEntry) { bin_defs[k].op, bin_defs[k].min_inputs, bin_defs[k].max_inputs,
                                 1, 1, infer_fold, eval_fold };
  entries[n++] = (PlOpEntry) { PL_OP_Where, 3, 3, 1, 1, infer_where, eval_where };
  entries[n++] = (PlOpEntry) { PL_OP_BatchNormalization, 5, 5, 1, 5, infer_batchnorm,
                               eval_batchnorm };
  pl_ops_register (entries, n);
  pl_ops_register_unary ();
}
