/* scan.c — generated CumSum kernels (see scan.h).
 *
 * Line (o, i) of X [outer, len, inner] is x[o*len*inner + l*inner + i] for
 * l in [0, len). Step s of the walk visits l = s (reverse: len - 1 - s);
 * an inclusive sum stores the running sum after adding x at l, an
 * exclusive one before.
 */
#define G_LOG_DOMAIN "passlab"
#include "scan.h"

#include "codegen.h"
#include "kernel-plan.h"
#include "ops-util.h"

/* Lines per chunk of the C kernel: a chunk's running sums (8 bytes each)
 * stay in L1. */
#define CHUNK 512

bool
pl_scan_desc_from_node (const PlNode *node, PlScanDesc *d, char **why)
{
  memset (d, 0, sizeof *d);
  PlValue *x = node->n_inputs > 0 ? node->inputs[0] : NULL, *a = node->n_inputs > 1 ? node->inputs[1] : NULL;
  PlValue *y = node->n_outputs > 0 ? node->outputs[0] : NULL;
  int64_t xd[PL_MAX_RANK];
  if (node->op != PL_OP_CumSum || !x || !a || !y)
    return (*why = g_strdup_printf ("%s is not a CumSum", node->op_type)) == NULL;
  if (!pl_shape_get_dims (&x->shape, xd) || x->shape.rank < 1)
    return (*why = g_strdup ("CumSum without a static shape")) == NULL;
  if (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64 && x->dtype != PL_DTYPE_I32 && x->dtype != PL_DTYPE_I64)
    return (*why = g_strdup_printf ("CumSum of %s", pl_dtype_name (x->dtype))) == NULL;
  if (x->layout != PL_LAYOUT_NCHW || y->layout != PL_LAYOUT_NCHW)
    return (*why = g_strdup ("CumSum in another layout")) == NULL;
  int n = 0, axis;
  g_autofree int64_t *v = a->constant ? pl_tensor_to_ints (a->constant, &n) : NULL;
  if (n != 1 || !pl_normalize_axis (v[0], x->shape.rank, &axis, NULL))
    return (*why = g_strdup ("CumSum whose axis is not a constant")) == NULL;
  d->dtype = x->dtype;
  pl_split_at_axis (x->shape.rank, xd, axis, &d->outer, &d->len, &d->inner);
  d->exclusive = pl_node_attr_int (node, "exclusive", 0) != 0;
  d->reverse = pl_node_attr_int (node, "reverse", 0) != 0;
  if (d->outer * d->len * d->inner == 0)
    return (*why = g_strdup ("CumSum of an empty tensor")) == NULL;
  return true;
}

char *
pl_scan_describe (const PlScanDesc *d)
{
  return g_strdup_printf ("cumsum %" G_GINT64_FORMAT "x[%" G_GINT64_FORMAT "]x%" G_GINT64_FORMAT "%s%s", d->outer,
                          d->len, d->inner, d->exclusive ? " exclusive" : "", d->reverse ? " reverse" : "");
}

/* The accumulator's type, and how one step adds v to it (integers wrap). */
static const char *
acc_type (const PlScanDesc *d)
{
  return pl_dtype_is_float (d->dtype) ? "double" : "int64_t";
}

static char *
add_expr (const PlScanDesc *d, const char *acc, const char *v)
{
  if (pl_dtype_is_float (d->dtype))
    return g_strdup_printf ("%s + (double) %s", acc, v);
  return g_strdup_printf ("(int64_t) ((uint64_t) %s + (uint64_t) %s)", acc, v);
}

/* One step of line i: y at l = the sum before or after adding x at l. */
static void
emit_step (GString *out, const PlScanDesc *d, const char *indent, const char *acc, const char *at)
{
  const char *t = pl_plan_ctype (d->dtype);
  g_autofree char *add = add_expr (d, acc, "x[at]");
  g_string_append_printf (out, "%sconst int64_t at = %s;\n", indent, at);
  if (d->exclusive)
    g_string_append_printf (out, "%sy[at] = (%s) %s;\n%s%s = %s;\n", indent, t, acc, indent, acc, add);
  else
    g_string_append_printf (out, "%s%s = %s;\n%sy[at] = (%s) %s;\n", indent, acc, add, indent, t, acc);
}

void
pl_scan_emit_c (GString *out, const PlScanDesc *d, const char *name)
{
  const char *t = pl_plan_ctype (d->dtype);
  const int64_t chunk = MIN (d->inner, CHUNK), n_chunks = (d->inner + chunk - 1) / chunk;
  g_autofree char *what = pl_scan_describe (d);
  g_string_append_printf (out, "/* %s: %s (scan.c) */\nvoid %s (void *const *args)\n{\n", name, what, name);
  g_string_append_printf (out, "  const %s *restrict x = (const %s *) args[0];\n  %s *restrict y = (%s *) args[1];\n", t,
                          t, t, t);
  g_string_append_printf (out, "  #pragma omp parallel for schedule(static)\n"
                               "  for (int64_t task = 0; task < %" G_GINT64_FORMAT "; task++)\n  {\n",
                          d->outer * n_chunks);
  g_string_append_printf (out, "    const int64_t o = task / %" G_GINT64_FORMAT ", i0 = task %% %" G_GINT64_FORMAT
                               " * %" G_GINT64_FORMAT ";\n", n_chunks, n_chunks, chunk);
  g_string_append_printf (out, "    const int64_t n = %" G_GINT64_FORMAT " - i0 < %" G_GINT64_FORMAT " ? %" G_GINT64_FORMAT
                               " - i0 : %" G_GINT64_FORMAT ";\n", d->inner, chunk, d->inner, chunk);
  g_string_append_printf (out, "    %s acc[%" G_GINT64_FORMAT "];\n    for (int64_t i = 0; i < n; i++)\n      acc[i] = 0;\n",
                          acc_type (d), chunk);
  g_string_append_printf (out, "    for (int64_t s = 0; s < %" G_GINT64_FORMAT "; s++)\n    {\n", d->len);
  if (d->reverse)
    g_string_append_printf (out, "      const int64_t l = %" G_GINT64_FORMAT " - 1 - s;\n", d->len);
  else
    g_string_append (out, "      const int64_t l = s;\n");
  g_string_append (out, "      #pragma omp simd\n      for (int64_t i = 0; i < n; i++)\n      {\n");
  g_autofree char *at = g_strdup_printf ("(o * %" G_GINT64_FORMAT " + l) * %" G_GINT64_FORMAT " + i0 + i", d->len,
                                         d->inner);
  emit_step (out, d, "        ", "acc[i]", at);
  g_string_append (out, "      }\n    }\n  }\n}\n\n");
}

void
pl_scan_emit_cuda (GString *out, const PlScanDesc *d, const char *name, int n_sms, int *block, int64_t *grid)
{
  const char *t = pl_plan_ctype (d->dtype);
  const int64_t lines = d->outer * d->inner;
  g_autofree char *what = pl_scan_describe (d);
  g_string_append_printf (out, "/* %s: %s, a thread per line (scan.c) */\n"
                               "extern \"C\" __global__ void __launch_bounds__ (256)\n"
                               "%s (const %s *__restrict__ x, %s *__restrict__ y, void *unused)\n{\n",
                          name, what, name, t, t);
  pl_codegen_cuda_grid_stride (out, 1, "line", lines);
  g_string_append (out, "  {\n");
  g_string_append_printf (out, "    const int64_t o = line / %" G_GINT64_FORMAT ", i = line %% %" G_GINT64_FORMAT ";\n",
                          d->inner, d->inner);
  g_string_append_printf (out, "    %s acc = 0;\n    for (int64_t s = 0; s < %" G_GINT64_FORMAT "; s++)\n    {\n",
                          acc_type (d), d->len);
  g_autofree char *l = d->reverse ? g_strdup_printf ("(%" G_GINT64_FORMAT " - 1 - s)", d->len) : g_strdup ("s");
  g_autofree char *at = g_strdup_printf ("(o * %" G_GINT64_FORMAT " + %s) * %" G_GINT64_FORMAT " + i", d->len, l,
                                         d->inner);
  emit_step (out, d, "      ", "acc", at);
  g_string_append (out, "    }\n  }\n}\n\n");
  *block = 256;
  *grid = pl_codegen_cuda_grid (lines, 256, n_sms, 32);
}
