/* ops-nn.c — shape inference and reference evaluation of the compute ops
 * MatMul, Gemm and Einsum, and of the losses NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (ONNX semantics up to opset 17). Convolutions and
 * pooling live in ops-conv.c.
 *
 * This is the exact reference the generated kernels are checked against:
 * floats accumulate in double, integers in 64-bit wrap-around arithmetic,
 * and the loops stay plain (no blocking, no BLAS).
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "einsum.h"
#include "ops-nn-private.h"

/* --- shared helpers --------------------------------------------------------- */

double *
pl_nn_load_f64 (const PlTensor *t)
{
  double *v = g_new (double, MAX (t->numel, 1));

  if (t->dtype == PL_DTYPE_F32)
    for (int64_t i = 0; i < t->numel; i++)
      v[i] = ((const float *) t->data)[i];
  else if (t->dtype == PL_DTYPE_F64)
    memcpy (v, t->data, t->numel * sizeof (double));
  else
    for (int64_t i = 0; i < t->numel; i++)
      v[i] = pl_tensor_get_f64 (t, i);
  return v;
}

void
pl_nn_store_f64 (PlTensor *t, const double *v)
{
  if (t->dtype == PL_DTYPE_F32)
    for (int64_t i = 0; i < t->numel; i++)
      ((float *) t->data)[i] = (float) v[i];
  else if (t->dtype == PL_DTYPE_F64)
    memcpy (t->data, v, t->numel * sizeof (double));
  else
    for (int64_t i = 0; i < t->numel; i++)
      pl_tensor_set_f64 (t, i, v[i]);
}

bool
pl_nn_shape_error (GError **error, const PlShape *a, const PlShape *b, const char *format, ...)
{
  g_autofree char *sa = pl_shape_to_string (a);
  g_autofree char *sb = pl_shape_to_string (b);
  g_autofree char *what = NULL;
  va_list args;

  va_start (args, format);
  what = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s: %s and %s", what, sa, sb);
  return false;
}

static int64_t *
load_i64 (const PlTensor *t)
{
  int64_t *v = g_new (int64_t, MAX (t->numel, 1));

  for (int64_t i = 0; i < t->numel; i++)
    v[i] = pl_tensor_get_i64 (t, i);
  return v;
}

static void
store_i64 (PlTensor *t, const int64_t *v)
{
  for (int64_t i = 0; i < t->numel; i++)
    pl_tensor_set_i64 (t, i, v[i]);
}

/* Fails unless inputs i and j have the same dtype. */
static bool
require_same_dtype (const PlNode *node, int i, int j, GError **error)
{
  PlValue *a = pl_input (node, i), *b = pl_input (node, j);

  if (a->dtype != b->dtype)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "inputs %d and %d have different dtypes (%s and %s)",
                   i, j, pl_dtype_name (a->dtype), pl_dtype_name (b->dtype));
      return false;
    }
  return true;
}

static const PlDType float_types[] = {
  PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F32, PL_DTYPE_F64, PL_DTYPE_UNDEFINED
};
static const PlDType matmul_types[] = {
  PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F32, PL_DTYPE_F64,
  PL_DTYPE_I32, PL_DTYPE_I64, PL_DTYPE_U32, PL_DTYPE_U64, PL_DTYPE_UNDEFINED
};
static const PlDType numeric_types[] = {
  PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F32, PL_DTYPE_F64,
  PL_DTYPE_I64, PL_DTYPE_I32, PL_DTYPE_I16, PL_DTYPE_I8,
  PL_DTYPE_U64, PL_DTYPE_U32, PL_DTYPE_U16, PL_DTYPE_U8, PL_DTYPE_UNDEFINED
};
static const PlDType index_types[] = { PL_DTYPE_I32, PL_DTYPE_I64, PL_DTYPE_UNDEFINED };

/* --- the matrix-product kernel ----------------------------------------------- */

/* c[M,N] = A'B' with A'(m,k) = a[m*sam + k*sak] and B'(k,n) = b[k*sbk + n*sbn]:
 * strides express MatMul's batches and Gemm's transposes alike. Row by row,
 * k outer, so the common sbn == 1 case streams through B. */
static void
gemm_f64 (const double *a, int64_t sam, int64_t sak, const double *b, int64_t sbk, int64_t sbn,
          double *c, int64_t M, int64_t K, int64_t N)
{
  for (int64_t m = 0; m < M; m++)
    {
      double *crow = c + m * N;

      for (int64_t n = 0; n < N; n++)
        crow[n] = 0;
      for (int64_t k = 0; k < K; k++)
        {
          const double av = a[m * sam + k * sak];
          const double *brow = b + k * sbk;

          if (sbn == 1)
            for (int64_t n = 0; n < N; n++)
              crow[n] += av * brow[n];
          else
            for (int64_t n = 0; n < N; n++)
              crow[n] += av * brow[n * sbn];
        }
    }
}

/* The same in wrap-around 64-bit integers (signed overflow would be UB). */
static void
gemm_i64 (const int64_t *a, int64_t sam, int64_t sak, const int64_t *b, int64_t sbk, int64_t sbn,
          int64_t *c, int64_t M, int64_t K, int64_t N)
{
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++)
      {
        uint64_t acc = 0;

        for (int64_t k = 0; k < K; k++)
          acc += (uint64_t) a[m * sam + k * sak] * (uint64_t) b[k * sbk + n * sbn];
        c[m * N + n] = (int64_t) acc;
      }
}

/* --- MatMul ------------------------------------------------------------------- */

/* numpy matmul: a 1-D A is a row [1, K] and a 1-D B a column [K, 1], their
 * unit dim dropped from the result; leading dims broadcast as batches. */
bool
pl_nn_matmul_shape (const PlShape *a, const PlShape *b, PlShape *out, GError **error)
{
  PlShape ba = { 0 }, bb = { 0 };
  PlDim ka, kb;

  if (a->rank == PL_RANK_UNKNOWN || b->rank == PL_RANK_UNKNOWN)
    {
      *out = pl_shape_unknown ();
      return true;
    }
  if (a->rank == 0 || b->rank == 0)
    return pl_nn_shape_error (error, a, b, "MatMul does not take scalars");

  ka = a->dims[a->rank - 1];
  kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  if (pl_dim_is_static (ka) && pl_dim_is_static (kb) && ka.size != kb.size)
    return pl_nn_shape_error (error, a, b, "MatMul inner dimensions differ (%" G_GINT64_FORMAT
                              " vs %" G_GINT64_FORMAT ")", ka.size, kb.size);

  ba.rank = MAX (a->rank - 2, 0);
  memcpy (ba.dims, a->dims, ba.rank * sizeof (PlDim));
  bb.rank = MAX (b->rank - 2, 0);
  memcpy (bb.dims, b->dims, bb.rank * sizeof (PlDim));
  if (!pl_shape_broadcast (&ba, &bb, out, NULL))
    return pl_nn_shape_error (error, a, b, "MatMul batch dimensions do not broadcast");
  if (a->rank > 1)
    out->dims[out->rank++] = a->dims[a->rank - 2];
  if (b->rank > 1)
    out->dims[out->rank++] = b->dims[b->rank - 1];
  return true;
}

static bool
matmul_infer (PlNode *node, GError **error)
{
  PlShape out;

  if (!pl_require_dtype (node, 0, matmul_types, error) || !require_same_dtype (node, 0, 1, error))
    return false;
  if (!pl_nn_matmul_shape (&pl_input (node, 0)->shape, &pl_input (node, 1)->shape, &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

static bool
matmul_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *a = inputs[0], *b = inputs[1];
  PlShape sa = pl_tensor_shape (a), sb = pl_tensor_shape (b), so;
  int64_t out_dims[PL_MAX_RANK], bdims[PL_MAX_RANK], astr[PL_MAX_RANK], bstr[PL_MAX_RANK];
  int brank;
  int64_t M, K, N, nbatch = 1;
  PlTensor *y;

  if (!pl_nn_matmul_shape (&sa, &sb, &so, error))
    return false;
  pl_shape_get_dims (&so, out_dims);
  M = a->rank > 1 ? a->dims[a->rank - 2] : 1;
  K = a->dims[a->rank - 1];
  N = b->rank > 1 ? b->dims[b->rank - 1] : 1;

  /* Batch strides count whole matrices of each operand. */
  brank = so.rank - (a->rank > 1) - (b->rank > 1);
  memcpy (bdims, out_dims, brank * sizeof (int64_t));
  pl_broadcast_strides (MAX (a->rank - 2, 0), a->dims, brank, bdims, astr);
  pl_broadcast_strides (MAX (b->rank - 2, 0), b->dims, brank, bdims, bstr);
  for (int i = 0; i < brank; i++)
    nbatch *= bdims[i];

  y = pl_out_new (a->dtype, so.rank, out_dims, error);
  if (!y)
    return false;
  outputs[0] = y;

  if (pl_dtype_is_int (a->dtype))
    {
      g_autofree int64_t *av = load_i64 (a), *bv = load_i64 (b);
      g_autofree int64_t *cv = g_new (int64_t, MAX (y->numel, 1));

      for (int64_t i = 0; i < nbatch; i++)
        gemm_i64 (av + pl_offset_of (i, brank, bdims, astr) * M * K, K, 1,
                  bv + pl_offset_of (i, brank, bdims, bstr) * K * N, N, 1,
                  cv + i * M * N, M, K, N);
      store_i64 (y, cv);
    }
  else
    {
      g_autofree double *av = pl_nn_load_f64 (a), *bv = pl_nn_load_f64 (b);
      g_autofree double *cv = g_new (double, MAX (y->numel, 1));

      for (int64_t i = 0; i < nbatch; i++)
        gemm_f64 (av + pl_offset_of (i, brank, bdims, astr) * M * K, K, 1,
                  bv + pl_offset_of (i, brank, bdims, bstr) * K * N, N, 1,
                  cv + i * M * N, M, K, N);
      pl_nn_store_f64 (y, cv);
    }
  return true;
}

bool
pl_nn_matmul_eval_f64 (const PlTensor *a, const PlTensor *b, PlTensor **y, GError **error)
{
  PlTensor *in[2] = { (PlTensor *) a, (PlTensor *) b };
  return matmul_eval (NULL, in, y, error);
}

/* --- Gemm ------------------------------------------------------------------------ */

/* Y[M,N] = alpha * A' B' + beta * C, A' = transA ? A^T : A, C broadcast to [M,N]. */
static bool
gemm_shape (const PlNode *node, const PlShape *a, const PlShape *b, const PlShape *c,
            PlShape *out, GError **error)
{
  bool ta = pl_node_attr_int (node, "transA", 0) != 0;
  bool tb = pl_node_attr_int (node, "transB", 0) != 0;
  PlDim ka, kb;

  if (a->rank != PL_RANK_UNKNOWN && a->rank != 2)
    return pl_nn_shape_error (error, a, b, "Gemm needs 2-D A and B");
  if (b->rank != PL_RANK_UNKNOWN && b->rank != 2)
    return pl_nn_shape_error (error, a, b, "Gemm needs 2-D A and B");

  out->rank = 2;
  out->dims[0] = a->rank == 2 ? a->dims[ta ? 1 : 0] : pl_dim_unknown ();
  out->dims[1] = b->rank == 2 ? b->dims[tb ? 0 : 1] : pl_dim_unknown ();
  if (a->rank == 2 && b->rank == 2)
    {
      ka = a->dims[ta ? 0 : 1];
      kb = b->dims[tb ? 1 : 0];
      if (pl_dim_is_static (ka) && pl_dim_is_static (kb) && ka.size != kb.size)
        return pl_nn_shape_error (error, a, b, "Gemm inner dimensions differ (%" G_GINT64_FORMAT
                                  " vs %" G_GINT64_FORMAT ", transA=%d, transB=%d)",
                                  ka.size, kb.size, ta, tb);
    }
  if (c && c->rank != PL_RANK_UNKNOWN)
    {
      if (c->rank > 2)
        return pl_nn_shape_error (error, c, out, "Gemm's C does not broadcast to the result");
      for (int i = 0; i < c->rank; i++)
        {
          PlDim cd = c->dims[c->rank - 1 - i], od = out->dims[1 - i];

          if (pl_dim_is_static (cd) && cd.size != 1)
            {
              if (pl_dim_is_static (od) && od.size != cd.size)
                return pl_nn_shape_error (error, c, out, "Gemm's C does not broadcast to the result");
              if (!pl_dim_is_static (od))
                out->dims[1 - i] = cd;
            }
        }
    }
  return true;
}

static bool
gemm_infer (PlNode *node, GError **error)
{
  PlValue *c = pl_input (node, 2);
  PlShape out;

  if (!pl_require_dtype (node, 0, matmul_types, error) || !require_same_dtype (node, 0, 1, error))
    return false;
  if (c && !require_same_dtype (node, 0, 2, error))
    return false;
  if (!gemm_shape (node, &pl_input (node, 0)->shape, &pl_input (node, 1)->shape,
                   c ? &c->shape : NULL, &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

static bool
gemm_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *a = inputs[0], *b = inputs[1];
  /* inputs holds n_inputs slots: an omitted trailing input is not there. */
  const PlTensor *c = node->n_inputs > 2 ? inputs[2] : NULL;
  PlShape sa = pl_tensor_shape (a), sb = pl_tensor_shape (b), sc = pl_shape_unknown (), so;
  bool ta = pl_node_attr_int (node, "transA", 0) != 0;
  bool tb = pl_node_attr_int (node, "transB", 0) != 0;
  double alpha = pl_node_attr_float (node, "alpha", 1.0f);
  double beta = pl_node_attr_float (node, "beta", 1.0f);
  int64_t dims[2], cstr[2] = { 0, 0 }, M, K, N;
  /* A'(m,k) and B'(k,n) strides in the row-major A and B. */
  int64_t sam, sak, sbk, sbn;
  PlTensor *y;

  if (c)
    sc = pl_tensor_shape (c);
  if (!gemm_shape (node, &sa, &sb, c ? &sc : NULL, &so, error))
    return false;
  pl_shape_get_dims (&so, dims);
  M = dims[0];
  N = dims[1];
  K = a->dims[ta ? 0 : 1];
  sam = ta ? 1 : a->dims[1];
  sak = ta ? a->dims[1] : 1;
  sbk = tb ? 1 : b->dims[1];
  sbn = tb ? b->dims[1] : 1;
  if (c)
    pl_broadcast_strides (c->rank, c->dims, 2, dims, cstr);

  y = pl_out_new (a->dtype, 2, dims, error);
  if (!y)
    return false;
  outputs[0] = y;

  if (pl_dtype_is_int (a->dtype))
    {
      g_autofree int64_t *av = load_i64 (a), *bv = load_i64 (b);
      g_autofree int64_t *cv = c ? load_i64 (c) : NULL;
      g_autofree int64_t *yv = g_new (int64_t, MAX (y->numel, 1));
      bool unit = alpha == 1.0 && beta == 1.0;

      gemm_i64 (av, sam, sak, bv, sbk, sbn, yv, M, K, N);
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
          {
            int64_t cval = cv ? cv[m * cstr[0] + n * cstr[1]] : 0;
            int64_t *yp = yv + m * N + n;

            /* Integer Gemm stays exact unless alpha or beta scale it. */
            *yp = unit ? (int64_t) ((uint64_t) *yp + (uint64_t) cval)
                       : (int64_t) (alpha * (double) *yp + beta * (double) cval);
          }
      store_i64 (y, yv);
    }
  else
    {
      g_autofree double *av = pl_nn_load_f64 (a), *bv = pl_nn_load_f64 (b);
      g_autofree double *cv = c ? pl_nn_load_f64 (c) : NULL;
      g_autofree double *yv = g_new (double, MAX (y->numel, 1));

      gemm_f64 (av, sam, sak, bv, sbk, sbn, yv, M, K, N);
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
          yv[m * N + n] = alpha * yv[m * N + n] + (cv ? beta * cv[m * cstr[0] + n * cstr[1]] : 0.0);
      pl_nn_store_f64 (y, yv);
    }
  return true;
}

/* --- Einsum ------------------------------------------------------------------------
 *
 * The equation names each axis of each operand with a letter; "..." stands
 * for the broadcast leading axes (labels: einsum.h). An operand repeating a
 * letter reads a diagonal (its strides for that label add up); labels
 * missing from the output are summed over.
 */

#define EINSUM_LETTERS  PL_EINSUM_LETTERS
#define EINSUM_LABELS   PL_EINSUM_LABELS
#define EINSUM_MAX_IN   PL_EINSUM_MAX_IN
#define EINSUM_NONE     (-1)

typedef PlEinsumPlan EinsumPlan;

/* One term as written: letter ids, and where "..." sits (-1: nowhere). */
typedef struct {
  gint8 ids[PL_MAX_RANK];
  int   n;
  int   ellipsis_at;
} EinsumTerm;

static bool
einsum_syntax_error (GError **error, const char *eq, const char *why)
{
  g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "invalid Einsum equation '%s': %s", eq, why);
  return false;
}

/* Parses the term in [p, end). */
static bool
einsum_parse_term (const char *eq, const char *p, const char *end, EinsumTerm *t, GError **error)
{
  t->n = 0;
  t->ellipsis_at = EINSUM_NONE;
  for (; p < end; p++)
    {
      if (g_ascii_isspace (*p))
        continue;
      if (*p == '.')
        {
          if (end - p < 3 || p[1] != '.' || p[2] != '.' || t->ellipsis_at != EINSUM_NONE)
            return einsum_syntax_error (error, eq, "'.' must come as one '...' per term");
          t->ellipsis_at = t->n;
          p += 2;
          continue;
        }
      if (!g_ascii_isalpha (*p))
        return einsum_syntax_error (error, eq, "subscripts must be letters");
      if (t->n == PL_MAX_RANK)
        return einsum_syntax_error (error, eq, "too many subscripts in a term");
      t->ids[t->n++] = g_ascii_isupper (*p) ? *p - 'A' : 26 + (*p - 'a');
    }
  return true;
}

/* Expands a term for an operand of the given rank into per-axis label ids. */
static bool
einsum_expand (const char *eq, const EinsumTerm *t, int rank, int n_ellipsis, gint8 *ids, GError **error)
{
  int e = rank - t->n, k = 0;

  if (t->ellipsis_at == EINSUM_NONE ? e != 0 : e < 0)
    {
      g_autofree char *why = g_strdup_printf ("a term has %d subscripts for an operand of rank %d", t->n, rank);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "Einsum equation '%s': %s", eq, why);
      return false;
    }
  for (int i = 0; i <= t->n; i++)
    {
      if (i == t->ellipsis_at)
        for (int j = 0; j < e; j++)
          ids[k++] = EINSUM_LETTERS + (n_ellipsis - e) + j;
      if (i < t->n)
        ids[k++] = t->ids[i];
    }
  return true;
}

/* Parses the equation for operands of the given ranks (all known). */
bool
pl_einsum_plan (const char *eq, int n_inputs, const int *ranks, EinsumPlan *plan, GError **error)
{
  const char *arrow = strstr (eq, "->"), *lhs_end = arrow ? arrow : eq + strlen (eq);
  EinsumTerm terms[EINSUM_MAX_IN], out_term;
  int count[EINSUM_LABELS] = { 0 };
  const char *p = eq;
  int n = 0;

  if (n_inputs > EINSUM_MAX_IN)
    return einsum_syntax_error (error, eq, "more than 16 operands");
  for (;;)
    {
      const char *comma = memchr (p, ',', lhs_end - p), *term_end = comma ? comma : lhs_end;

      if (n == n_inputs)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                       "Einsum equation '%s' has more terms than the %d inputs", eq, n_inputs);
          return false;
        }
      if (!einsum_parse_term (eq, p, term_end, &terms[n++], error))
        return false;
      if (!comma)
        break;
      p = comma + 1;
    }
  if (n != n_inputs)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "Einsum equation '%s' has %d terms for %d inputs",
                   eq, n, n_inputs);
      return false;
    }

  plan->n_inputs = n_inputs;
  plan->n_ellipsis = 0;
  for (int i = 0; i < n_inputs; i++)
    if (terms[i].ellipsis_at != EINSUM_NONE)
      plan->n_ellipsis = MAX (plan->n_ellipsis, ranks[i] - terms[i].n);
  for (int i = 0; i < n_inputs; i++)
    {
      plan->rank[i] = ranks[i];
      if (!einsum_expand (eq, &terms[i], ranks[i], plan->n_ellipsis, plan->ids[i], error))
        return false;
      for (int j = 0; j < ranks[i]; j++)
        count[plan->ids[i][j]]++;
    }

  if (arrow)
    {
      bool seen[EINSUM_LABELS] = { false };

      if (!einsum_parse_term (eq, arrow + 2, eq + strlen (eq), &out_term, error))
        return false;
      if (out_term.ellipsis_at == EINSUM_NONE && plan->n_ellipsis > 0)
        return einsum_syntax_error (error, eq, "the output needs '...' for the broadcast dimensions");
      if (out_term.n + (out_term.ellipsis_at != EINSUM_NONE ? plan->n_ellipsis : 0) > PL_MAX_RANK)
        return einsum_syntax_error (error, eq, "the output has too many dimensions");
      einsum_expand (eq, &out_term, out_term.n + (out_term.ellipsis_at != EINSUM_NONE ? plan->n_ellipsis : 0),
                     plan->n_ellipsis, plan->out_ids, NULL);
      plan->out_rank = out_term.n + (out_term.ellipsis_at != EINSUM_NONE ? plan->n_ellipsis : 0);
      for (int j = 0; j < plan->out_rank; j++)
        {
          int id = plan->out_ids[j];

          if (seen[id])
            return einsum_syntax_error (error, eq, "an output subscript repeats");
          if (id < EINSUM_LETTERS && count[id] == 0)
            return einsum_syntax_error (error, eq, "an output subscript appears in no input");
          seen[id] = true;
        }
    }
  else
    {
      /* Implicit output: the ellipsis axes, then each letter used exactly once. */
      plan->out_rank = 0;
      for (int j = 0; j < plan->n_ellipsis; j++)
        plan->out_ids[plan->out_rank++] = EINSUM_LETTERS + j;
      for (int id = 0; id < EINSUM_LETTERS; id++)
        if (count[id] == 1)
          {
            if (plan->out_rank == PL_MAX_RANK)
              return einsum_syntax_error (error, eq, "the output has too many dimensions");
            plan->out_ids[plan->out_rank++] = id;
          }
    }
  return true;
}

/* Each label's size from the operands' dims: equal, or 1 broadcasting. */
static bool
einsum_label_dims (const char *eq, const EinsumPlan *plan, const PlShape *shapes, PlDim *dims,
                   GError **error)
{
  bool set[EINSUM_LABELS] = { false };

  for (int i = 0; i < plan->n_inputs; i++)
    for (int j = 0; j < plan->rank[i]; j++)
      {
        int id = plan->ids[i][j];
        PlDim d = shapes[i].dims[j], cur = set[id] ? dims[id] : d;

        if (!set[id])
          {
            dims[id] = d;
            set[id] = true;
          }
        else if (pl_dim_is_static (cur) && pl_dim_is_static (d))
          {
            if (cur.size == 1)
              dims[id] = d;
            else if (d.size != 1 && d.size != cur.size)
              {
                char name[4] = "...";

                if (id < EINSUM_LETTERS)
                  {
                    name[0] = id < 26 ? 'A' + id : 'a' + (id - 26);
                    name[1] = '\0';
                  }
                g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                             "Einsum equation '%s': subscript '%s' has sizes %" G_GINT64_FORMAT
                             " and %" G_GINT64_FORMAT " (input %d)", eq, name, cur.size, d.size, i);
                return false;
              }
          }
        else if ((pl_dim_is_static (cur) && cur.size == 1)
                 || (!pl_dim_is_static (cur) && pl_dim_is_static (d) && d.size != 1))
          dims[id] = d;  /* a 1 broadcasts to anything; a static size beats a symbol */
      }
  return true;
}

static bool
einsum_infer (PlNode *node, GError **error)
{
  const char *eq = pl_node_attr_string (node, "equation", NULL);
  int ranks[EINSUM_MAX_IN];
  PlShape shapes[EINSUM_MAX_IN], out = pl_shape_unknown ();
  PlDim dims[EINSUM_LABELS];
  EinsumPlan plan;
  bool known = true;

  if (!eq)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "Einsum needs an 'equation' attribute");
      return false;
    }
  if (!pl_require_dtype (node, 0, numeric_types, error))
    return false;
  for (int i = 0; i < node->n_inputs && i < EINSUM_MAX_IN; i++)
    {
      if (!pl_input (node, i))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "Einsum input %d is missing", i);
          return false;
        }
      if (!require_same_dtype (node, 0, i, error))
        return false;
      shapes[i] = pl_input (node, i)->shape;
      ranks[i] = shapes[i].rank;
      known = known && ranks[i] != PL_RANK_UNKNOWN;
    }
  if (known)
    {
      if (!pl_einsum_plan (eq, node->n_inputs, ranks, &plan, error)
          || !einsum_label_dims (eq, &plan, shapes, dims, error))
        return false;
      out.rank = plan.out_rank;
      for (int j = 0; j < plan.out_rank; j++)
        out.dims[j] = dims[plan.out_ids[j]];
    }
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

static bool
einsum_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const char *eq = pl_node_attr_string (node, "equation", "");
  const int n_in = node->n_inputs;
  int ranks[EINSUM_MAX_IN], n_sum = 0;
  PlShape shapes[EINSUM_MAX_IN];
  PlDim ldims[EINSUM_LABELS];
  int64_t size[EINSUM_LABELS], lstride[EINSUM_MAX_IN][EINSUM_LABELS] = { { 0 } };
  int64_t out_dims[PL_MAX_RANK], sum_size = 1;
  gint8 sum_ids[EINSUM_LABELS];
  bool used[EINSUM_LABELS] = { false }, in_out[EINSUM_LABELS] = { false };
  bool is_int = pl_dtype_is_int (inputs[0]->dtype);
  g_autofree double **fv = g_new0 (double *, n_in);
  g_autofree int64_t **iv = g_new0 (int64_t *, n_in);
  EinsumPlan plan;
  PlTensor *y;

  for (int i = 0; i < n_in && i < EINSUM_MAX_IN; i++)
    {
      shapes[i] = pl_tensor_shape (inputs[i]);
      ranks[i] = inputs[i]->rank;
    }
  if (!pl_einsum_plan (eq, n_in, ranks, &plan, error)
      || !einsum_label_dims (eq, &plan, shapes, ldims, error))
    return false;

  /* Label sizes, and each operand's stride per label (0 where it broadcasts). */
  for (int i = 0; i < n_in; i++)
    for (int j = 0; j < ranks[i]; j++)
      {
        size[plan.ids[i][j]] = ldims[plan.ids[i][j]].size;
        used[plan.ids[i][j]] = true;
      }
  for (int i = 0; i < n_in; i++)
    {
      int64_t strides[PL_MAX_RANK];

      pl_strides (ranks[i], inputs[i]->dims, strides);
      for (int j = 0; j < ranks[i]; j++)
        if (inputs[i]->dims[j] != 1 || size[plan.ids[i][j]] == 1)
          lstride[i][plan.ids[i][j]] += strides[j];
    }
  for (int j = 0; j < plan.out_rank; j++)
    {
      out_dims[j] = size[plan.out_ids[j]];
      in_out[plan.out_ids[j]] = true;
    }
  for (int id = 0; id < EINSUM_LABELS; id++)
    if (used[id] && !in_out[id])
      {
        sum_ids[n_sum++] = id;
        sum_size *= size[id];
      }

  y = pl_out_new (inputs[0]->dtype, plan.out_rank, out_dims, error);
  if (!y)
    return false;
  outputs[0] = y;

  for (int i = 0; i < n_in; i++)
    {
      if (is_int)
        iv[i] = load_i64 (inputs[i]);
      else
        fv[i] = pl_nn_load_f64 (inputs[i]);
    }
  {
    g_autofree double *yf = g_new0 (double, MAX (y->numel, 1));
    g_autofree int64_t *yi = g_new0 (int64_t, MAX (y->numel, 1));

    for (int64_t o = 0; o < y->numel; o++)
      {
        int64_t off[EINSUM_MAX_IN] = { 0 }, digit[EINSUM_LABELS] = { 0 }, rest = o;
        double acc = 0;
        uint64_t iacc = 0;

        /* Operand offsets of this output element, from its digits. */
        for (int j = plan.out_rank - 1; j >= 0; j--)
          {
            int64_t dj = rest % out_dims[j];

            rest /= out_dims[j];
            for (int i = 0; i < n_in; i++)
              off[i] += dj * lstride[i][plan.out_ids[j]];
          }
        for (int64_t s = 0; s < sum_size; s++)
          {
            if (is_int)
              {
                uint64_t prod = 1;

                for (int i = 0; i < n_in; i++)
                  prod *= (uint64_t) iv[i][off[i]];
                iacc += prod;
              }
            else
              {
                double prod = 1;

                for (int i = 0; i < n_in; i++)
                  prod *= fv[i][off[i]];
                acc += prod;
              }
            /* Odometer step over the summed labels, last fastest. */
            for (int j = n_sum - 1; j >= 0; j--)
              {
                int id = sum_ids[j];

                for (int i = 0; i < n_in; i++)
                  off[i] += lstride[i][id];
                if (++digit[j] < size[id])
                  break;
                for (int i = 0; i < n_in; i++)
                  off[i] -= lstride[i][id] * size[id];
                digit[j] = 0;
              }
          }
        yf[o] = acc;
        yi[o] = (int64_t) iacc;
      }
    if (is_int)
      store_i64 (y, yi);
    else
      pl_nn_store_f64 (y, yf);
  }
  for (int i = 0; i < n_in; i++)
    {
      g_free (fv[i]);
      g_free (iv[i]);
    }
  return true;
}

/* --- losses ------------------------------------------------------------------------
 *
 * NegativeLogLikelihoodLoss reads input [N, C, d1..dk] (log-probabilities),
 * target [N, d1..dk] (class indices) and optional weight [C]:
 *   loss[n, d] = -input[n, target[n, d], d] * weight[target[n, d]],
 * 0 (with weight 0) where target == ignore_index. "mean" divides the sum by
 * the sum of the weights used. SoftmaxCrossEntropyLoss is the same on
 * log_softmax(scores, axis=1), which it can also return.
 */

typedef enum { REDUCE_NONE, REDUCE_SUM, REDUCE_MEAN } LossReduction;

static bool
loss_reduction (const PlNode *node, LossReduction *r, GError **error)
{
  const char *s = pl_node_attr_string (node, "reduction", "mean");

  if (g_str_equal (s, "none"))
    *r = REDUCE_NONE;
  else if (g_str_equal (s, "sum"))
    *r = REDUCE_SUM;
  else if (g_str_equal (s, "mean"))
    *r = REDUCE_MEAN;
  else
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                   "reduction '%s' is not one of none, sum, mean", s);
      return false;
    }
  return true;
}

/* Checks input/target/weight shapes; *out is the loss's shape. */
static bool
loss_shape (const PlNode *node, const PlShape *x, const PlShape *target, const PlShape *weight,
            PlShape *out, GError **error)
{
  LossReduction r;

  if (!loss_reduction (node, &r, error))
    return false;
  if (x->rank != PL_RANK_UNKNOWN && x->rank < 2)
    return pl_nn_shape_error (error, x, target, "the input must be [N, C, d1, ...]");
  if (x->rank != PL_RANK_UNKNOWN && target->rank != PL_RANK_UNKNOWN)
    {
      if (target->rank != x->rank - 1)
        return pl_nn_shape_error (error, x, target, "input [N, C, d1, ...] and target [N, d1, ...] do not match");
      for (int i = 0; i < target->rank; i++)
        {
          PlDim a = x->dims[i == 0 ? 0 : i + 1], b = target->dims[i];

          if (pl_dim_is_static (a) && pl_dim_is_static (b) && a.size != b.size)
            return pl_nn_shape_error (error, x, target, "input [N, C, d1, ...] and target [N, d1, ...] do not match");
        }
    }
  if (weight && weight->rank != PL_RANK_UNKNOWN && x->rank != PL_RANK_UNKNOWN)
    {
      if (weight->rank != 1 || (pl_dim_is_static (weight->dims[0]) && pl_dim_is_static (x->dims[1])
                                && weight->dims[0].size != x->dims[1].size))
        return pl_nn_shape_error (error, x, weight, "the weight must be [C] for an input [N, C, ...]");
    }

  if (r != REDUCE_NONE)
    *out = pl_shape_scalar ();
  else if (target->rank != PL_RANK_UNKNOWN)
    {
      *out = *target;
      /* Prefer the input's dim where the target's is not static. */
      for (int i = 0; x->rank != PL_RANK_UNKNOWN && i < out->rank; i++)
        if (!pl_dim_is_static (out->dims[i]))
          out->dims[i] = x->dims[i == 0 ? 0 : i + 1];
    }
  else if (x->rank != PL_RANK_UNKNOWN)
    {
      out->rank = x->rank - 1;
      out->dims[0] = x->dims[0];
      for (int i = 1; i < out->rank; i++)
        out->dims[i] = x->dims[i + 1];
    }
  else
    *out = pl_shape_unknown ();
  return true;
}

static bool
loss_infer (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *t = pl_input (node, 1), *w = pl_input (node, 2);
  PlShape out;

  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, index_types, error))
    return false;
  if (w && !require_same_dtype (node, 0, 2, error))
    return false;
  if (!loss_shape (node, &x->shape, &t->shape, w ? &w->shape : NULL, &out, error))
    return false;
  pl_set_output (node, 0, x->dtype, &out);
  if (node->op == PL_OP_SoftmaxCrossEntropyLoss)
    pl_set_output (node, 1, x->dtype, &x->shape);
  return true;
}

/* The loss of log-probabilities logp [N, C, D] against targets [N, D] into
 * loss (N*D values for "none", else one). */
static bool
nll_compute (const PlNode *node, const double *logp, int64_t N, int64_t C, int64_t D,
             const int64_t *target, const double *weight, double *loss, GError **error)
{
  const PlAttr *ii = pl_node_attr (node, "ignore_index");
  int64_t ignore = pl_node_attr_int (node, "ignore_index", 0);
  double total = 0, wsum = 0;
  LossReduction r;

  if (!loss_reduction (node, &r, error))
    return false;
  for (int64_t n = 0; n < N; n++)
    for (int64_t d = 0; d < D; d++)
      {
        int64_t t = target[n * D + d];
        double l = 0, w = 0;

        if (!ii || t != ignore)
          {
            if (t < 0 || t >= C)
              {
                g_set_error (error, PL_ERROR, PL_ERROR_EXEC,
                             "target %" G_GINT64_FORMAT " is out of range [0, %" G_GINT64_FORMAT ")", t, C);
                return false;
              }
            w = weight ? weight[t] : 1.0;
            l = -logp[(n * C + t) * D + d] * w;
          }
        if (r == REDUCE_NONE)
          loss[n * D + d] = l;
        total += l;
        wsum += w;
      }
  if (r == REDUCE_SUM)
    loss[0] = total;
  else if (r == REDUCE_MEAN)
    loss[0] = total / wsum;
  return true;
}

static bool
loss_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *t = inputs[1];
  /* inputs holds n_inputs slots: an omitted trailing input is not there. */
  const PlTensor *w = node->n_inputs > 2 ? inputs[2] : NULL;
  PlShape sx = pl_tensor_shape (x), st = pl_tensor_shape (t), sw = pl_shape_unknown (), so;
  int64_t dims[PL_MAX_RANK], N, C, D = 1;
  g_autofree double *xv = NULL, *wv = NULL, *lv = NULL;
  g_autofree int64_t *tv = NULL;

  if (w)
    sw = pl_tensor_shape (w);
  if (!loss_shape (node, &sx, &st, w ? &sw : NULL, &so, error))
    return false;
  N = x->dims[0];
  C = x->dims[1];
  for (int i = 2; i < x->rank; i++)
    D *= x->dims[i];

  xv = pl_nn_load_f64 (x);
  tv = load_i64 (t);
  wv = w ? pl_nn_load_f64 (w) : NULL;
  if (node->op == PL_OP_SoftmaxCrossEntropyLoss)
    {
      /* log_softmax over C, stable: x - max - log(sum(exp(x - max))). */
      for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++)
          {
            double *p = xv + n * C * D + d, mx = -INFINITY, sum = 0;

            for (int64_t c = 0; c < C; c++)
              mx = MAX (mx, p[c * D]);
            for (int64_t c = 0; c < C; c++)
              sum += exp (p[c * D] - mx);
            for (int64_t c = 0; c < C; c++)
              p[c * D] = p[c * D] - mx - log (sum);
          }
    }

  /* Compute first, allocate after: a bad target fails without leftovers. */
  lv = g_new0 (double, MAX (N * D, 1));
  if (!nll_compute (node, xv, N, C, D, tv, wv, lv, error))
    return false;
  pl_shape_get_dims (&so, dims);
  outputs[0] = pl_out_new (x->dtype, so.rank, dims, error);
  if (!outputs[0])
    return false;
  pl_nn_store_f64 (outputs[0], lv);
  if (node->op == PL_OP_SoftmaxCrossEntropyLoss && node->n_outputs > 1 && node->outputs[1])
    {
      outputs[1] = pl_out_new (x->dtype, x->rank, x->dims, error);
      if (!outputs[1])
        {
          g_clear_pointer (&outputs[0], pl_tensor_unref);
          return false;
        }
      pl_nn_store_f64 (outputs[1], xv);
    }
  return true;
}

/* --- registration ----------------------------------------------------------------- */

void
pl_ops_register_nn (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_MatMul, 2, 2, 1, 1, matmul_infer, matmul_eval },
    { PL_OP_Gemm, 2, 3, 1, 1, gemm_infer, gemm_eval },
    { PL_OP_Einsum, 1, -1, 1, 1, einsum_infer, einsum_eval },
    { PL_OP_NegativeLogLikelihoodLoss, 2, 3, 1, 1, loss_infer, loss_eval },
    { PL_OP_SoftmaxCrossEntropyLoss, 2, 3, 1, 2, loss_infer, loss_eval },
  };

  pl_ops_register (entries, G_N_ELEMENTS (entries));
  pl_ops_register_conv ();
}
