/* tensor.h — dense, row-major tensors with refcounted data.
 *
 * Constants in a graph and every buffer the reference interpreter produces
 * are PlTensors. Graph copies share constant tensors by reference, so a pass
 * history of a model with large weights costs the weights once.
 * A tensor is immutable once shared (refcount > 1); writers own a fresh one.
 */
#pragma once

#include "dtype.h"
#include "shape.h"

G_BEGIN_DECLS

struct _PlTensor {
  gint     ref_count;
  PlDType  dtype;
  int      rank;
  int64_t  dims[PL_MAX_RANK];
  int64_t  numel;
  void    *data;   /* numel * pl_dtype_size(dtype) bytes, 64-byte aligned, zeroed at creation */
};

/* A new zero-filled tensor. Fails (PL_ERROR_OVERFLOW) when the element count
 * overflows or exceeds PL_MAX_NUMEL, or the allocation fails. */
PlTensor *pl_tensor_new        (PlDType dtype, int rank, const int64_t *dims, GError **error);
PlTensor *pl_tensor_new_scalar (PlDType dtype, double value);
/* A tensor of the given static shape; fails if the shape is not static. */
PlTensor *pl_tensor_new_shape  (PlDType dtype, const PlShape *shape, GError **error);
PlTensor *pl_tensor_ref        (PlTensor *t);
void      pl_tensor_unref      (PlTensor *t);
PlTensor *pl_tensor_copy       (const PlTensor *t);   /* deep copy, refcount 1 */
size_t    pl_tensor_nbytes     (const PlTensor *t);
PlShape   pl_tensor_shape      (const PlTensor *t);

/* Element access through a common type, for code that does not care about
 * the storage type. Floats convert exactly to double; integers to int64
 * (u64 values above INT64_MAX wrap — they do not occur in our models). */
double    pl_tensor_get_f64    (const PlTensor *t, int64_t i);
void      pl_tensor_set_f64    (PlTensor *t, int64_t i, double v);   /* rounds / saturates as C casts do */
int64_t   pl_tensor_get_i64    (const PlTensor *t, int64_t i);
void      pl_tensor_set_i64    (PlTensor *t, int64_t i, int64_t v);

/* A converted copy with ONNX Cast semantics (float->int truncates toward zero,
 * anything->bool is != 0). */
PlTensor *pl_tensor_cast       (const PlTensor *t, PlDType to);
/* Fills with uniform values in [lo, hi) (integers: [lo, hi] rounded; bool: 0/1). */
void      pl_tensor_fill_random (PlTensor *t, GRand *rand, double lo, double hi);

/* Elementwise comparison for tests and the conformance runner.
 * Returns true when shapes and dtypes match and every element satisfies
 * |a-b| <= atol + rtol*|b| (NaN equals NaN; integers and bools exactly).
 * On return *worst holds the largest |a-b| / (atol + rtol*|b|) seen (<= 1 passes). */
bool      pl_tensor_allclose   (const PlTensor *a, const PlTensor *b, double rtol, double atol, double *worst);
/* Largest relative error max|a-b| / max(|b|, floor) over all elements; +inf on shape mismatch. */
double    pl_tensor_max_rel_error (const PlTensor *a, const PlTensor *b, double floor);

/* "f32[2, 3] min=.. max=.. mean=.. [v0, v1, ...]" with up to max_values values. */
char     *pl_tensor_summary    (const PlTensor *t, int max_values);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlTensor, pl_tensor_unref)

G_END_DECLS
