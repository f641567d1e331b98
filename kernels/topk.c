/* topk.c — generated TopK kernels (see topk.h).
 *
 * Line `line` = o * inner + i walks x[(o * len + j) * inner + i] for j in
 * [0, len). The buffer bv/bi holds the best `cnt` so far, best first; an
 * element moves in past every buffered one it is strictly better than, so
 * an equal value stays behind those with smaller indices. The line body is
 * the same C for both backends but for that move (memmove on the cpu).
 */
#define G_LOG_DOMAIN "passlab"
#include "topk.h"

#include "codegen.h"
#include "kernel-plan.h"
#include "ops-util.h"

bool
pl_topk_desc_from_node (const PlNode *node, PlTopKDesc *d, char **why)
{
  memset (d, 0, sizeof *d);
  PlValue *x = node->n_inputs > 0 ? node->inputs[0] : NULL, *kv = node->n_inputs > 1 ? node->inputs[1] : NULL;
  int64_t xd[PL_MAX_RANK];
  if (!x || node->n_outputs < 2 || !node->outputs[0] || !node->outputs[1])
    return (*why = g_strdup ("TopK without its input or outputs")) == NULL;
  if (!pl_shape_get_dims (&x->shape, xd) || x->shape.rank < 1)
    return (*why = g_strdup ("TopK without a static shape")) == NULL;
  if (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64 && x->dtype != PL_DTYPE_I32 && x->dtype != PL_DTYPE_I64)
    return (*why = g_strdup_printf ("TopK of %s", pl_dtype_name (x->dtype))) == NULL;
  for (int i = 0; i < 2; i++)
    if (x->layout != PL_LAYOUT_NCHW || node->outputs[i]->layout != PL_LAYOUT_NCHW)
      return (*why = g_strdup ("TopK in another layout")) == NULL;
  int n = 0, axis;
  g_autofree int64_t *k = kv ? (kv->constant ? pl_tensor_to_ints (kv->constant, &n) : NULL) : NULL;
  d->k = kv ? (n == 1 ? k[0] : -1) : pl_node_attr_int (node, "k", -1);
  if (d->k < 1 || d->k > PL_TOPK_MAX_K)
    return (*why = g_strdup_printf ("TopK whose K is not a constant in [1, %d]", PL_TOPK_MAX_K)) == NULL;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", -1), x->shape.rank, &axis, NULL) || xd[axis] < d->k)
    return (*why = g_strdup ("TopK with a bad axis or K")) == NULL;
  d->dtype = x->dtype;
  pl_split_at_axis (x->shape.rank, xd, axis, &d->outer, &d->len, &d->inner);
  d->largest = pl_node_attr_int (node, "largest", 1) != 0;
  if (d->outer * d->inner == 0)
    return (*why = g_strdup ("TopK of an empty tensor")) == NULL;
  return true;
}

char *
pl_topk_describe (const PlTopKDesc *d)
{
  return g_strdup_printf ("top %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT "x[%" G_GINT64_FORMAT "]x%" G_GINT64_FORMAT
                          ", %s", d->k, d->outer, d->len, d->inner, d->largest ? "largest" : "smallest");
}

/* Whether a is strictly better than b (both of X's type). */
static char *
better (const PlTopKDesc *d, const char *a, const char *b)
{
  const char *cmp = d->largest ? ">" : "<";
  if (!pl_dtype_is_float (d->dtype))
    return g_strdup_printf ("(%s %s %s)", a, cmp, b);
  if (d->largest)   /* NaN is the largest */
    return g_strdup_printf ("((%s != %s && %s == %s) || (%s == %s && %s == %s && %s > %s))", a, a, b, b, a, a, b, b,
                            a, b);
  return g_strdup_printf ("((%s == %s && %s != %s) || (%s == %s && %s == %s && %s < %s))", a, a, b, b, a, a, b, b, a,
                          b);
}

/* The body of a line: a worse element than the last of a full buffer is
 * rejected at once; a better one finds its place by a binary search (the
 * buffer is sorted best first, so "v beats bv[m]" is false, then true) and
 * the worse ones move down a place (memmove on the cpu). Against a linear
 * scan and shift: the top 100 of 64 lines of 8400, 1.12-1.16 -> 1.03-1.07
 * ms; the top 5, 0.25-0.28 -> 0.19-0.21 ms. Testing 16 elements at a time
 * against the last kept one, to skip them together, made both slower. */
static void
emit_line (GString *o, const PlTopKDesc *d, bool cpu)
{
  const char *t = pl_plan_ctype (d->dtype);
  g_autofree char *beats_last = better (d, "v", "bv[cnt - 1]");
  g_autofree char *beats_mid = better (d, "v", "bv[m]");
  const int64_t k = d->k;
  g_string_append_printf (o, "    const int64_t o = line / %" G_GINT64_FORMAT ", i = line %% %" G_GINT64_FORMAT ";\n",
                          d->inner, d->inner);
  g_string_append_printf (o, "    %s bv[%" G_GINT64_FORMAT "];\n    int64_t bi[%" G_GINT64_FORMAT "], cnt = 0;\n", t, k,
                          k);
  g_string_append_printf (o, "    for (int64_t j = 0; j < %" G_GINT64_FORMAT "; j++)\n    {\n", d->len);
  g_string_append_printf (o, "      const %s v = x[(o * %" G_GINT64_FORMAT " + j) * %" G_GINT64_FORMAT " + i];\n", t,
                          d->len, d->inner);
  g_string_append_printf (o, "      if (cnt == %" G_GINT64_FORMAT " && !%s)\n        continue;\n", k, beats_last);
  g_string_append_printf (o, "      int64_t lo = 0, hi = cnt;\n"
                             "      while (lo < hi)\n      {\n"
                             "        const int64_t m = (lo + hi) / 2;\n"
                             "        if (%s)\n          hi = m;\n        else\n          lo = m + 1;\n      }\n",
                          beats_mid);
  g_string_append_printf (o, "      const int64_t last = cnt < %" G_GINT64_FORMAT " ? cnt : %" G_GINT64_FORMAT ";\n", k,
                          k - 1);
  if (cpu)
    g_string_append_printf (o, "      memmove (bv + lo + 1, bv + lo, sizeof (%s) * (last - lo));\n"
                               "      memmove (bi + lo + 1, bi + lo, sizeof (int64_t) * (last - lo));\n", t);
  else
    g_string_append (o, "      for (int64_t q = last; q > lo; q--)\n      {\n"
                        "        bv[q] = bv[q - 1];\n        bi[q] = bi[q - 1];\n      }\n");
  g_string_append_printf (o, "      bv[lo] = v;\n      bi[lo] = j;\n      cnt += cnt < %" G_GINT64_FORMAT ";\n    }\n",
                          k);
  g_string_append_printf (o, "    for (int64_t q = 0; q < %" G_GINT64_FORMAT "; q++)\n    {\n", k);
  g_string_append_printf (o, "      const int64_t at = (o * %" G_GINT64_FORMAT " + q) * %" G_GINT64_FORMAT " + i;\n", k,
                          d->inner);
  g_string_append (o, "      values[at] = bv[q];\n      indices[at] = bi[q];\n    }\n");
}

void
pl_topk_emit_c (GString *out, const PlTopKDesc *d, const char *name)
{
  const char *t = pl_plan_ctype (d->dtype);
  g_autofree char *what = pl_topk_describe (d);
  g_string_append_printf (out, "/* %s: %s (topk.c) */\nvoid %s (void *const *args)\n{\n", name, what, name);
  g_string_append_printf (out, "  const %s *restrict x = (const %s *) args[0];\n  %s *restrict values = (%s *) args[1];\n"
                               "  int64_t *restrict indices = (int64_t *) args[2];\n", t, t, t, t);
  g_string_append_printf (out, "  #pragma omp parallel for schedule(static)\n"
                               "  for (int64_t line = 0; line < %" G_GINT64_FORMAT "; line++)\n  {\n",
                          d->outer * d->inner);
  emit_line (out, d, true);
  g_string_append (out, "  }\n}\n\n");
}

void
pl_topk_emit_cuda (GString *out, const PlTopKDesc *d, const char *name, int n_sms, int *block, int64_t *grid)
{
  const char *t = pl_plan_ctype (d->dtype);
  const int64_t lines = d->outer * d->inner;
  g_autofree char *what = pl_topk_describe (d);
  g_string_append_printf (out, "/* %s: %s, a thread per line (topk.c) */\n"
                               "extern \"C\" __global__ void __launch_bounds__ (128)\n"
                               "%s (const %s *__restrict__ x, %s *__restrict__ values, int64_t *__restrict__ indices, "
                               "void *unused)\n{\n", name, what, name, t, t);
  pl_codegen_cuda_grid_stride (out, 1, "line", lines);
  g_string_append (out, "  {\n");
  emit_line (out, d, false);
  g_string_append (out, "  }\n}\n\n");
  *block = 128;
  *grid = pl_codegen_cuda_grid (lines, 128, n_sms, 32);
}
