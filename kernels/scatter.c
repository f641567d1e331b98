/* scatter.c — generated ScatterND / ScatterElements kernels (see scatter.h).
 *
 * The line bodies are the same C for both backends:
 *   ScatterND, line s of the slice: for each tuple t, the slice's offset
 *     from its m indices (each checked: check j + 1 guards data axis j),
 *     then y[offset + s] combined with updates[t * slice + s];
 *   ScatterElements, line l: the updates' coordinates but the axis' from l,
 *     then for each j along the axis, the index at those coordinates
 *     (check 1) replaces the axis coordinate in the data.
 */
#define G_LOG_DOMAIN "passlab"
#include "scatter.h"

#include "codegen.h"
#include "kernel-plan.h"
#include "ops-util.h"

#include <string.h>

/* Elements per chunk of the C kernel's copy. */
#define COPY_CHUNK 65536

static const char *const reduce_names[] = { "none", "add", "mul", "max", "min" };

bool
pl_scatter_desc_from_node (const PlNode *node, PlScatterDesc *d, char **why)
{
  memset (d, 0, sizeof *d);
  PlValue *x = node->n_inputs > 2 ? node->inputs[0] : NULL, *ind = x ? node->inputs[1] : NULL;
  PlValue *u = x ? node->inputs[2] : NULL, *y = node->n_outputs > 0 ? node->outputs[0] : NULL;
  int64_t id[PL_MAX_RANK];
  if (!x || !ind || !u || !y)
    return (*why = g_strdup_printf ("%s without its three inputs", node->op_type)) == NULL;
  if (!pl_shape_get_dims (&x->shape, d->data) || !pl_shape_get_dims (&ind->shape, id)
      || !pl_shape_get_dims (&u->shape, d->upd))
    return (*why = g_strdup_printf ("%s without static shapes", node->op_type)) == NULL;
  if (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64 && x->dtype != PL_DTYPE_I32 && x->dtype != PL_DTYPE_I64)
    return (*why = g_strdup_printf ("%s of %s", node->op_type, pl_dtype_name (x->dtype))) == NULL;
  if (x->layout != PL_LAYOUT_NCHW || y->layout != PL_LAYOUT_NCHW)
    return (*why = g_strdup_printf ("%s in another layout", node->op_type)) == NULL;
  const char *r = pl_node_attr_string (node, "reduction", "none");
  d->reduce = PL_SCATTER_NONE;
  while (strcmp (reduce_names[d->reduce], r) != 0)
    if (++d->reduce > PL_SCATTER_MIN)
      return (*why = g_strdup_printf ("%s with reduction '%s'", node->op_type, r)) == NULL;
  d->nd = node->op == PL_OP_ScatterND;
  d->dtype = x->dtype;
  d->index_dtype = ind->dtype;
  d->rank = x->shape.rank;
  d->numel = 1;
  for (int k = 0; k < d->rank; k++)
    d->numel *= d->data[k];
  if (d->nd)
    {
      d->m = (int) id[ind->shape.rank - 1];
      d->tuples = d->slice = 1;
      for (int k = 0; k < ind->shape.rank - 1; k++)
        d->tuples *= id[k];
      for (int k = d->m; k < d->rank; k++)
        d->slice *= d->data[k];
    }
  else if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), d->rank, &d->axis, NULL))
    return (*why = g_strdup_printf ("%s with a bad axis", node->op_type)) == NULL;
  int64_t updates = 1;
  for (int k = 0; k < u->shape.rank; k++)
    updates *= d->upd[k];
  if (d->numel == 0 || updates == 0)
    return (*why = g_strdup_printf ("%s of an empty tensor", node->op_type)) == NULL;
  return true;
}

char *
pl_scatter_describe (const PlScatterDesc *d)
{
  GString *s = g_string_new (NULL);
  if (d->nd)
    g_string_append_printf (s, "scatternd %" G_GINT64_FORMAT " slices of %" G_GINT64_FORMAT, d->tuples, d->slice);
  else
    g_string_append_printf (s, "scatter elements along axis %d", d->axis);
  g_string_append (s, " into [");
  for (int k = 0; k < d->rank; k++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, k ? ", " : "", d->data[k]);
  g_string_append_printf (s, "]%s%s", d->reduce ? ", " : "", d->reduce ? reduce_names[d->reduce] : "");
  return g_string_free (s, FALSE);
}

char *
pl_scatter_check_message (const PlScatterDesc *d, const PlNode *node, int64_t id)
{
  int axis = d->nd ? (int) CLAMP (id - 1, 0, d->rank - 1) : d->axis;
  return g_strdup_printf ("index %%I of %s '%s' (axis %d of size %" G_GINT64_FORMAT ") is out of range", node->op_type,
                          node->name, axis, d->data[axis]);
}

/* --- code ----------------------------------------------------------------------------- */

static int64_t
stride_of (const int64_t *dims, int rank, int k)
{
  int64_t s = 1;
  for (int j = k + 1; j < rank; j++)
    s *= dims[j];
  return s;
}

/* Lines: elements of a slice (ND), or the update lines along the axis. */
static int64_t
n_lines (const PlScatterDesc *d)
{
  if (d->nd)
    return d->slice;
  int64_t n = 1;
  for (int k = 0; k < d->rank; k++)
    n *= k == d->axis ? 1 : d->upd[k];
  return n;
}

/* `y[p] = combine (y[p], v)` for d's reduction. */
static void
emit_combine (GString *o, const PlScatterDesc *d, const char *in, const char *p, const char *v)
{
  const char *t = pl_plan_ctype (d->dtype);
  bool fl = pl_dtype_is_float (d->dtype);
  switch (d->reduce)
    {
    case PL_SCATTER_NONE:
      g_string_append_printf (o, "%sy[%s] = %s;\n", in, p, v);
      break;
    case PL_SCATTER_ADD:
    case PL_SCATTER_MUL:
      {
        char op = d->reduce == PL_SCATTER_ADD ? '+' : '*';
        if (fl)
          g_string_append_printf (o, "%sy[%s] = y[%s] %c %s;\n", in, p, p, op, v);
        else
          g_string_append_printf (o, "%sy[%s] = (%s) ((uint64_t) y[%s] %c (uint64_t) %s);\n", in, p, t, p, op, v);
        break;
      }
    default:
      if (fl)
        g_string_append_printf (o, "%sy[%s] = (%s) %s ((double) y[%s], (double) %s);\n", in, p, t,
                                d->reduce == PL_SCATTER_MAX ? "fmax" : "fmin", p, v);
      else
        g_string_append_printf (o, "%s{ const %s a = y[%s], b = %s; y[%s] = a %s b ? a : b; }\n", in, t, p, v, p,
                                d->reduce == PL_SCATTER_MAX ? ">" : "<");
      break;
    }
}

/* The index at position `at` into an axis of n, from the end when
 * negative, into `var`; one out of range reports check `id` and sets ok = 0. */
static void
emit_index (GString *o, const char *in, const char *var, const char *at, int64_t n, int id)
{
  g_string_append_printf (o, "%sint64_t %s = (int64_t) idx[%s];\n", in, var, at);
  g_string_append_printf (o, "%sif (%s < -%" G_GINT64_FORMAT " || %s >= %" G_GINT64_FORMAT ")\n%s{\n", in, var, n, var,
                          n, in);
  g_string_append_printf (o, "%s  pl_flag (pl_status, %d, %s);\n%s  ok = 0;\n%s}\n", in, id, var, in, in);
  g_string_append_printf (o, "%s%s += %s < 0 ? %" G_GINT64_FORMAT " : 0;\n", in, var, var, n);
}

/* The body of one line (`line` in [0, n_lines)). */
static void
emit_line (GString *o, const PlScatterDesc *d)
{
  if (d->nd)
    {
      g_string_append_printf (o, "    for (int64_t t = 0; t < %" G_GINT64_FORMAT "; t++)\n    {\n", d->tuples);
      g_string_append (o, "      int64_t off = 0;\n      int ok = 1;\n");
      for (int j = 0; j < d->m; j++)
        {
          g_autofree char *var = g_strdup_printf ("i%d", j);
          g_autofree char *at = g_strdup_printf ("t * %d + %d", d->m, j);
          emit_index (o, "      ", var, at, d->data[j], j + 1);
          g_string_append_printf (o, "      off += %s * %" G_GINT64_FORMAT ";\n", var,
                                  stride_of (d->data, d->rank, j));
        }
      g_string_append (o, "      if (ok)\n");
      g_autofree char *v = g_strdup_printf ("upd[t * %" G_GINT64_FORMAT " + line]", d->slice);
      emit_combine (o, d, "        ", "off + line", v);
      g_string_append (o, "    }\n");
      return;
    }
  /* the line's coordinates but the axis', innermost first */
  g_string_append (o, "    int64_t rest = line, base = 0, ubase = 0;\n");
  for (int k = d->rank - 1; k >= 0; k--)
    if (k != d->axis)
      {
        g_string_append_printf (o, "    { const int64_t c = rest %% %" G_GINT64_FORMAT "; rest /= %" G_GINT64_FORMAT
                                   "; base += c * %" G_GINT64_FORMAT "; ubase += c * %" G_GINT64_FORMAT "; }\n",
                                d->upd[k], d->upd[k], stride_of (d->data, d->rank, k), stride_of (d->upd, d->rank, k));
      }
  const int64_t us = stride_of (d->upd, d->rank, d->axis);
  g_string_append_printf (o, "    for (int64_t j = 0; j < %" G_GINT64_FORMAT "; j++)\n    {\n", d->upd[d->axis]);
  g_string_append_printf (o, "      const int64_t u = ubase + j * %" G_GINT64_FORMAT ";\n      int ok = 1;\n", us);
  emit_index (o, "      ", "i", "u", d->data[d->axis], 1);
  g_string_append (o, "      if (ok)\n");
  g_autofree char *p = g_strdup_printf ("base + i * %" G_GINT64_FORMAT, stride_of (d->data, d->rank, d->axis));
  emit_combine (o, d, "        ", p, "upd[u]");
  g_string_append (o, "    }\n");
}

void
pl_scatter_emit_c (GString *out, const PlScatterDesc *d, const char *name)
{
  const char *t = pl_plan_ctype (d->dtype), *it = pl_plan_ctype (d->index_dtype);
  g_autofree char *what = pl_scatter_describe (d);
  const int64_t chunks = (d->numel + COPY_CHUNK - 1) / COPY_CHUNK;
  g_string_append_printf (out, "/* %s: %s (scatter.c) */\nvoid %s (void *const *args)\n{\n", name, what, name);
  g_string_append_printf (out, "  const %s *restrict x = (const %s *) args[0];\n"
                               "  const %s *restrict idx = (const %s *) args[1];\n"
                               "  const %s *restrict upd = (const %s *) args[2];\n"
                               "  %s *restrict y = (%s *) args[3];\n  int64_t *pl_status = (int64_t *) args[4];\n",
                          t, t, it, it, t, t, t, t);
  g_string_append_printf (out, "  #pragma omp parallel for schedule(static)\n"
                               "  for (int64_t c = 0; c < %" G_GINT64_FORMAT "; c++)\n"
                               "    memcpy (y + c * %d, x + c * %d, sizeof (%s) * (c + 1 < %" G_GINT64_FORMAT
                               " ? %d : %" G_GINT64_FORMAT " - c * %d));\n",
                          chunks, COPY_CHUNK, COPY_CHUNK, t, chunks, COPY_CHUNK, d->numel, COPY_CHUNK);
  g_string_append_printf (out, "  #pragma omp parallel for schedule(static)\n"
                               "  for (int64_t line = 0; line < %" G_GINT64_FORMAT "; line++)\n  {\n", n_lines (d));
  emit_line (out, d);
  g_string_append (out, "  }\n}\n\n");
}

void
pl_scatter_emit_cuda (GString *out, const PlScatterDesc *d, const char *name, int n_sms, int *copy_block,
                      int64_t *copy_grid, int *block, int64_t *grid)
{
  const char *t = pl_plan_ctype (d->dtype), *it = pl_plan_ctype (d->index_dtype);
  g_autofree char *what = pl_scatter_describe (d);
  const int64_t lines = n_lines (d);
  g_string_append_printf (out, "/* %s: %s, a copy, then a thread per line (scatter.c) */\n", name, what);
  g_string_append_printf (out, "extern \"C\" __global__ void __launch_bounds__ (256)\n"
                               "%s_copy (const %s *__restrict__ x, %s *__restrict__ y)\n{\n", name, t, t);
  pl_codegen_cuda_grid_stride (out, 1, "i", d->numel);
  g_string_append (out, "    y[i] = x[i];\n}\n\n");
  g_string_append_printf (out, "extern \"C\" __global__ void __launch_bounds__ (256)\n"
                               "%s (const %s *__restrict__ x, const %s *__restrict__ idx, const %s *__restrict__ upd, "
                               "%s *__restrict__ y, int64_t *pl_status, void *unused)\n{\n",
                          name, t, it, t, t);
  pl_codegen_cuda_grid_stride (out, 1, "line", lines);
  g_string_append (out, "  {\n");
  emit_line (out, d);
  g_string_append (out, "  }\n}\n\n");
  *copy_block = *block = 256;
  *copy_grid = pl_codegen_cuda_grid (d->numel, 256, n_sms, 32);
  *grid = pl_codegen_cuda_grid (lines, 256, n_sms, 32);
}
