/* tensor.c — dense refcounted tensors and typed element access. */
#define G_LOG_DOMAIN "passlab"
#include "tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

PlTensor *
pl_tensor_new (PlDType dtype, int rank, const int64_t *dims, GError **error)
{
  int64_t numel = 1;
  size_t esize = pl_dtype_size (dtype);

  if (esize == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "cannot make a tensor of dtype %s",
                   pl_dtype_name (dtype));
      return NULL;
    }
  if (rank < 0 || rank > PL_MAX_RANK)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "rank %d exceeds the maximum of %d",
                   rank, PL_MAX_RANK);
      return NULL;
    }
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0 || !pl_mul_overflow (numel, dims[i], &numel))
      {
        PlShape s = pl_shape_from_dims (rank, dims);
        g_autofree char *str = pl_shape_to_string (&s);
        g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW,
                     "tensor shape %s is negative or too large (limit %" G_GINT64_FORMAT " elements)",
                     str, (int64_t) PL_MAX_NUMEL);
        return NULL;
      }

  size_t nbytes = (size_t) numel * esize;
  /* aligned_alloc needs a size that is a multiple of the alignment. */
  size_t alloc = (nbytes + 63) & ~(size_t) 63;
  void *data = aligned_alloc (64, alloc ? alloc : 64);
  if (!data)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW, "out of memory allocating %zu bytes", nbytes);
      return NULL;
    }
  memset (data, 0, alloc ? alloc : 64);

  PlTensor *t = g_new0 (PlTensor, 1);
  t->ref_count = 1;
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++)
    t->dims[i] = dims[i];
  t->numel = numel;
  t->data = data;
  return t;
}

PlTensor *
pl_tensor_new_scalar (PlDType dtype, double value)
{
  PlTensor *t = pl_tensor_new (dtype, 0, NULL, NULL);
  g_return_val_if_fail (t != NULL, NULL);
  pl_tensor_set_f64 (t, 0, value);
  return t;
}

PlTensor *
pl_tensor_new_shape (PlDType dtype, const PlShape *shape, GError **error)
{
  int64_t dims[PL_MAX_RANK];
  if (!pl_shape_get_dims (shape, dims))
    {
      g_autofree char *s = pl_shape_to_string (shape);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "shape %s is not static", s);
      return NULL;
    }
  return pl_tensor_new (dtype, shape->rank, dims, error);
}

PlTensor *
pl_tensor_ref (PlTensor *t)
{
  g_return_val_if_fail (t != NULL, NULL);
  g_atomic_int_inc (&t->ref_count);
  return t;
}

void
pl_tensor_unref (PlTensor *t)
{
  if (t && g_atomic_int_dec_and_test (&t->ref_count))
    {
      free (t->data);
      g_free (t);
    }
}

PlTensor *
pl_tensor_copy (const PlTensor *t)
{
  PlTensor *c = pl_tensor_new (t->dtype, t->rank, t->dims, NULL);
  g_assert (c != NULL);
  memcpy (c->data, t->data, pl_tensor_nbytes (t));
  return c;
}

size_t
pl_tensor_nbytes (const PlTensor *t)
{
  return (size_t) t->numel * pl_dtype_size (t->dtype);
}

PlShape
pl_tensor_shape (const PlTensor *t)
{
  return pl_shape_from_dims (t->rank, t->dims);
}

double
pl_tensor_get_f64 (const PlTensor *t, int64_t i)
{
  const void *p = t->data;
  switch (t->dtype)
    {
    case PL_DTYPE_F32:  return ((const float *) p)[i];
    case PL_DTYPE_F16:  return pl_f16_to_f32 (((const uint16_t *) p)[i]);
    case PL_DTYPE_BF16: return pl_bf16_to_f32 (((const uint16_t *) p)[i]);
    case PL_DTYPE_F64:  return ((const double *) p)[i];
    case PL_DTYPE_I64:  return (double) ((const int64_t *) p)[i];
    case PL_DTYPE_I32:  return ((const int32_t *) p)[i];
    case PL_DTYPE_I16:  return ((const int16_t *) p)[i];
    case PL_DTYPE_I8:   return ((const int8_t *) p)[i];
    case PL_DTYPE_U64:  return (double) ((const uint64_t *) p)[i];
    case PL_DTYPE_U32:  return ((const uint32_t *) p)[i];
    case PL_DTYPE_U16:  return ((const uint16_t *) p)[i];
    case PL_DTYPE_U8:   return ((const uint8_t *) p)[i];
    case PL_DTYPE_BOOL: return ((const uint8_t *) p)[i] != 0;
    default:            g_assert_not_reached ();
    }
}

/* Converts double to an integer type the way a C cast would, but without
 * undefined behaviour for out-of-range values and NaN (they saturate / 0). */
static int64_t
f64_to_i64_sat (double v)
{
  if (isnan (v))
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return (int64_t) v;
}

static uint64_t
f64_to_u64_sat (double v)
{
  if (isnan (v) || v <= 0)
    return v <= -1 ? (uint64_t) f64_to_i64_sat (v) : 0;  /* negative: wrap like int64 */
  if (v >= 18446744073709551615.0)
    return UINT64_MAX;
  return (uint64_t) v;
}

void
pl_tensor_set_f64 (PlTensor *t, int64_t i, double v)
{
  void *p = t->data;
  switch (t->dtype)
    {
    case PL_DTYPE_F32:  ((float *) p)[i] = (float) v; break;
    case PL_DTYPE_F16:  ((uint16_t *) p)[i] = pl_f32_to_f16 ((float) v); break;
    case PL_DTYPE_BF16: ((uint16_t *) p)[i] = pl_f32_to_bf16 ((float) v); break;
    case PL_DTYPE_F64:  ((double *) p)[i] = v; break;
    case PL_DTYPE_U64:  ((uint64_t *) p)[i] = f64_to_u64_sat (v); break;
    case PL_DTYPE_BOOL: ((uint8_t *) p)[i] = v != 0; break;
    default:            pl_tensor_set_i64 (t, i, f64_to_i64_sat (v)); break;
    }
}

int64_t
pl_tensor_get_i64 (const PlTensor *t, int64_t i)
{
  const void *p = t->data;
  switch (t->dtype)
    {
    case PL_DTYPE_I64:  return ((const int64_t *) p)[i];
    case PL_DTYPE_I32:  return ((const int32_t *) p)[i];
    case PL_DTYPE_I16:  return ((const int16_t *) p)[i];
    case PL_DTYPE_I8:   return ((const int8_t *) p)[i];
    case PL_DTYPE_U64:  return (int64_t) ((const uint64_t *) p)[i];
    case PL_DTYPE_U32:  return ((const uint32_t *) p)[i];
    case PL_DTYPE_U16:  return ((const uint16_t *) p)[i];
    case PL_DTYPE_U8:   return ((const uint8_t *) p)[i];
    case PL_DTYPE_BOOL: return ((const uint8_t *) p)[i] != 0;
    default:            return f64_to_i64_sat (pl_tensor_get_f64 (t, i));
    }
}

void
pl_tensor_set_i64 (PlTensor *t, int64_t i, int64_t v)
{
  void *p = t->data;
  /* Narrowing wraps modulo 2^n, as ONNX Cast between integer types does. */
  switch (t->dtype)
    {
    case PL_DTYPE_I64:  ((int64_t *) p)[i] = v; break;
    case PL_DTYPE_I32:  ((int32_t *) p)[i] = (int32_t) (uint32_t) v; break;
    case PL_DTYPE_I16:  ((int16_t *) p)[i] = (int16_t) (uint16_t) v; break;
    case PL_DTYPE_I8:   ((int8_t *) p)[i] = (int8_t) (uint8_t) v; break;
    case PL_DTYPE_U64:  ((uint64_t *) p)[i] = (uint64_t) v; break;
    case PL_DTYPE_U32:  ((uint32_t *) p)[i] = (uint32_t) v; break;
    case PL_DTYPE_U16:  ((uint16_t *) p)[i] = (uint16_t) v; break;
    case PL_DTYPE_U8:   ((uint8_t *) p)[i] = (uint8_t) v; break;
    case PL_DTYPE_BOOL: ((uint8_t *) p)[i] = v != 0; break;
    default:            pl_tensor_set_f64 (t, i, (double) v); break;
    }
}

PlTensor *
pl_tensor_cast (const PlTensor *t, PlDType to)
{
  PlTensor *r = pl_tensor_new (to, t->rank, t->dims, NULL);
  g_assert (r != NULL);
  if (to == t->dtype)
    {
      memcpy (r->data, t->data, pl_tensor_nbytes (t));
      return r;
    }
  bool exact_int = !pl_dtype_is_float (t->dtype) && !pl_dtype_is_float (to);
  for (int64_t i = 0; i < t->numel; i++)
    {
      if (exact_int)
        pl_tensor_set_i64 (r, i, pl_tensor_get_i64 (t, i));
      else if (t->dtype == PL_DTYPE_U64 && to == PL_DTYPE_F64)
        pl_tensor_set_f64 (r, i, (double) ((const uint64_t *) t->data)[i]);
      else
        pl_tensor_set_f64 (r, i, pl_tensor_get_f64 (t, i));
    }
  return r;
}

void
pl_tensor_fill_random (PlTensor *t, GRand *rand, double lo, double hi)
{
  for (int64_t i = 0; i < t->numel; i++)
    {
      if (t->dtype == PL_DTYPE_BOOL)
        pl_tensor_set_i64 (t, i, g_rand_boolean (rand));
      else if (pl_dtype_is_float (t->dtype))
        pl_tensor_set_f64 (t, i, g_rand_double_range (rand, lo, hi));
      else
        pl_tensor_set_i64 (t, i, (int64_t) floor (lo) +
                                   g_rand_int_range (rand, 0, (gint32) (floor (hi) - floor (lo)) + 1));
    }
}

static bool
same_shape (const PlTensor *a, const PlTensor *b)
{
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

bool
pl_tensor_allclose (const PlTensor *a, const PlTensor *b, double rtol, double atol, double *worst)
{
  double w = 0;
  bool ok = a->dtype == b->dtype && same_shape (a, b);

  if (!ok)
    {
      if (worst)
        *worst = INFINITY;
      return false;
    }
  bool is_float = pl_dtype_is_float (a->dtype);
  for (int64_t i = 0; i < a->numel; i++)
    {
      if (!is_float)
        {
          if (pl_tensor_get_i64 (a, i) != pl_tensor_get_i64 (b, i))
            w = INFINITY;
          continue;
        }
      double x = pl_tensor_get_f64 (a, i), y = pl_tensor_get_f64 (b, i);
      if (isnan (x) || isnan (y))
        {
          if (isnan (x) != isnan (y))
            w = INFINITY;
          continue;
        }
      if (isinf (x) || isinf (y))
        {
          if (x != y)
            w = INFINITY;
          continue;
        }
      double tol = atol + rtol * fabs (y);
      double e = fabs (x - y);
      double r = tol > 0 ? e / tol : (e > 0 ? INFINITY : 0);
      if (r > w)
        w = r;
    }
  if (worst)
    *worst = w;
  return w <= 1.0;
}

double
pl_tensor_max_rel_error (const PlTensor *a, const PlTensor *b, double floor_)
{
  if (!same_shape (a, b))
    return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a->numel; i++)
    {
      double x = pl_tensor_get_f64 (a, i), y = pl_tensor_get_f64 (b, i);
      if (isnan (x) || isnan (y))
        {
          if (isnan (x) != isnan (y))
            return INFINITY;
          continue;
        }
      if (x == y)
        continue;
      double e = fabs (x - y) / MAX (fabs (y), floor_);
      if (!(e <= worst))
        worst = e;
    }
  return worst;
}

char *
pl_tensor_summary (const PlTensor *t, int max_values)
{
  PlShape s = pl_tensor_shape (t);
  g_autofree char *shape = pl_shape_to_string (&s);
  GString *str = g_string_new (NULL);
  g_string_append_printf (str, "%s%s", pl_dtype_name (t->dtype), shape);

  if (t->numel > 0)
    {
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      for (int64_t i = 0; i < t->numel; i++)
        {
          double v = pl_tensor_get_f64 (t, i);
          lo = MIN (lo, v);
          hi = MAX (hi, v);
          sum += v;
        }
      g_string_append_printf (str, " min=%.6g max=%.6g mean=%.6g", lo, hi, sum / (double) t->numel);
    }
  g_string_append (str, " [");
  for (int64_t i = 0; i < t->numel && i < max_values; i++)
    g_string_append_printf (str, "%s%.6g", i ? ", " : "", pl_tensor_get_f64 (t, i));
  if (t->numel > max_values)
    g_string_append (str, ", ...");
  g_string_append_c (str, ']');
  return g_string_free (str, FALSE);
}
