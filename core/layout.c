/* layout.c — layout names, permutations and strides (see layout.h). */
#define G_LOG_DOMAIN "passlab"
#include "layout.h"

#include "graph.h"
#include "shape.h"

#include <string.h>

static const char *const names[PL_LAYOUT_COUNT] = { "NCHW", "NHWC", "CHWN" };
static const int perms[PL_LAYOUT_COUNT][4] = { { 0, 1, 2, 3 }, { 0, 2, 3, 1 }, { 1, 2, 3, 0 } };

const char *
pl_layout_name (PlLayout layout)
{
  return layout < PL_LAYOUT_COUNT ? names[layout] : "?";
}

bool
pl_layout_parse (const char *name, PlLayout *layout)
{
  for (int i = 0; i < PL_LAYOUT_COUNT && name; i++)
    if (strcmp (name, names[i]) == 0)
      {
        *layout = (PlLayout) i;
        return true;
      }
  return false;
}

bool
pl_layout_valid_for_rank (PlLayout layout, int rank)
{
  return layout == PL_LAYOUT_NCHW || (layout < PL_LAYOUT_COUNT && rank == 4);
}

void
pl_layout_perm (PlLayout layout, int rank, int *perm)
{
  g_assert (pl_layout_valid_for_rank (layout, rank));
  for (int i = 0; i < rank; i++)
    perm[i] = layout == PL_LAYOUT_NCHW ? i : perms[layout][i];
}

void
pl_layout_strides (PlLayout layout, int rank, const int64_t *dims, int64_t *strides)
{
  int perm[PL_MAX_RANK];
  pl_layout_perm (layout, rank, perm);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--)
    {
      strides[perm[i]] = s;
      s *= dims[perm[i]];
    }
}

bool
pl_layout_check_value (PlLayout layout, const PlValue *v, bool in_body, GError **error)
{
  const PlNode *p = v->producer;
  if (p && p->op == PL_OP_LayoutTransform)
    {
      const char *to = pl_node_attr_string (p, "to", NULL);
      PlLayout want;
      if (to && pl_layout_parse (to, &want) && want != layout)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                       "value '%s' has layout %s but its producer '%s' is a LayoutTransform to %s",
                       v->name, pl_layout_name (layout), p->name, to);
          return false;
        }
    }
  if (layout == PL_LAYOUT_NCHW)
    return true;
  const char *what = v->constant ? "a constant" : v->is_input && !in_body ? "a graph input"
                     : pl_value_is_output (v) && !in_body ? "a graph output" : NULL;
  if (layout >= PL_LAYOUT_COUNT)
    g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "value '%s' has an invalid layout %d", v->name,
                 (int) layout);
  else if (what)
    g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                 "value '%s' has layout %s but is %s (graph inputs, outputs and constants are always NCHW)",
                 v->name, pl_layout_name (layout), what);
  else if (!pl_layout_valid_for_rank (layout, v->shape.rank))
    {
      g_autofree char *rank = v->shape.rank < 0 ? g_strdup ("an unknown rank")
                                                : g_strdup_printf ("rank %d", v->shape.rank);
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                   "value '%s' has layout %s but %s (layouts other than NCHW need rank 4)",
                   v->name, pl_layout_name (layout), rank);
    }
  else
    return true;
  return false;
}
