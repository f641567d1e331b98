/* shape.c — shapes with static, symbolic and unknown dims. */
#define G_LOG_DOMAIN "passlab"
#include "shape.h"

PlDim
pl_dim_static (int64_t size)
{
  return (PlDim) { .size = size, .sym = NULL };
}

PlDim
pl_dim_symbol (const char *name)
{
  return (PlDim) { .size = -1, .sym = g_intern_string (name) };
}

PlDim
pl_dim_unknown (void)
{
  return (PlDim) { .size = -1, .sym = NULL };
}

bool
pl_dim_is_static (PlDim d)
{
  return d.size >= 0;
}

bool
pl_dim_equal (PlDim a, PlDim b)
{
  if (a.size >= 0 || b.size >= 0)
    return a.size == b.size;
  return a.sym != NULL && a.sym == b.sym;
}

PlShape
pl_shape_unknown (void)
{
  return (PlShape) { .rank = PL_RANK_UNKNOWN };
}

PlShape
pl_shape_scalar (void)
{
  return (PlShape) { .rank = 0 };
}

PlShape
pl_shape_from_dims (int rank, const int64_t *dims)
{
  PlShape s = { .rank = rank };
  g_return_val_if_fail (rank >= 0 && rank <= PL_MAX_RANK, pl_shape_unknown ());
  for (int i = 0; i < rank; i++)
    s.dims[i] = pl_dim_static (dims[i]);
  return s;
}

bool
pl_shape_is_static (const PlShape *s)
{
  if (s->rank < 0)
    return false;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i].size < 0)
      return false;
  return true;
}

bool
pl_shape_equal (const PlShape *a, const PlShape *b)
{
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    {
      const PlDim *x = &a->dims[i], *y = &b->dims[i];
      if (x->size != y->size || x->sym != y->sym)
        return false;
    }
  return true;
}

bool
pl_mul_overflow (int64_t a, int64_t b, int64_t *out)
{
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow (a, b, &r) || r > PL_MAX_NUMEL)
    return false;
  *out = r;
  return true;
}

int64_t
pl_dims_product (int n, const int64_t *dims)
{
  int64_t p = 1;
  for (int d = 0; d < n; d++)
    p *= dims[d];
  return p;
}

int64_t
pl_shape_numel (const PlShape *s)
{
  int64_t n = 1;
  if (!pl_shape_is_static (s))
    return -1;
  for (int i = 0; i < s->rank; i++)
    if (!pl_mul_overflow (n, s->dims[i].size, &n))
      return -1;
  return n;
}

bool
pl_shape_get_dims (const PlShape *s, int64_t *dims)
{
  if (!pl_shape_is_static (s))
    return false;
  for (int i = 0; i < s->rank; i++)
    dims[i] = s->dims[i].size;
  return true;
}

char *
pl_shape_to_string (const PlShape *s)
{
  if (s->rank < 0)
    return g_strdup ("[*]");
  GString *str = g_string_new ("[");
  for (int i = 0; i < s->rank; i++)
    {
      if (i)
        g_string_append (str, ", ");
      if (s->dims[i].size >= 0)
        g_string_append_printf (str, "%" G_GINT64_FORMAT, s->dims[i].size);
      else if (s->dims[i].sym)
        g_string_append (str, s->dims[i].sym);
      else
        g_string_append_c (str, '?');
    }
  g_string_append_c (str, ']');
  return g_string_free (str, FALSE);
}

/* Broadcasts one pair of dims; false if they conflict. */
static bool
broadcast_dim (PlDim a, PlDim b, PlDim *out)
{
  if (a.size == 1)
    *out = b;
  else if (b.size == 1)
    *out = a;
  else if (a.size >= 0 && b.size >= 0)
    {
      if (a.size != b.size)
        return false;
      *out = a;
    }
  else if (a.size >= 0)
    *out = a;          /* a symbol or unknown that broadcasts must equal a (or be 1; we assume equal) */
  else if (b.size >= 0)
    *out = b;
  else if (a.sym && a.sym == b.sym)
    *out = a;
  else
    *out = pl_dim_unknown ();
  return true;
}

bool
pl_shape_broadcast (const PlShape *a, const PlShape *b, PlShape *out, GError **error)
{
  if (a->rank < 0 || b->rank < 0)
    {
      *out = pl_shape_unknown ();
      return true;
    }
  int rank = MAX (a->rank, b->rank);
  PlShape r = { .rank = rank };
  for (int i = 0; i < rank; i++)
    {
      int ia = a->rank - rank + i, ib = b->rank - rank + i;
      PlDim da = ia >= 0 ? a->dims[ia] : pl_dim_static (1);
      PlDim db = ib >= 0 ? b->dims[ib] : pl_dim_static (1);
      if (!broadcast_dim (da, db, &r.dims[i]))
        {
          g_autofree char *sa = pl_shape_to_string (a);
          g_autofree char *sb = pl_shape_to_string (b);
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                       "shapes %s and %s do not broadcast (dim %d: %" G_GINT64_FORMAT
                       " vs %" G_GINT64_FORMAT ")", sa, sb, i, da.size, db.size);
          return false;
        }
    }
  *out = r;
  return true;
}
