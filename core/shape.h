/* shape.h — tensor shapes as the IR sees them: static dims, symbolic dims
 * kept by name ("N"), unknown dims ("?"), and unknown rank.
 *
 * A PlShape is a plain value type (copy it with `=`). Symbol names are
 * interned with g_intern_string, so they compare by pointer and outlive every
 * graph.
 */
#pragma once

#include "passlab-types.h"

G_BEGIN_DECLS

#define PL_MAX_RANK 8
#define PL_RANK_UNKNOWN (-1)
/* Largest element count a tensor may have; guards every size computation. */
#define PL_MAX_NUMEL (((int64_t) 1) << 40)

typedef struct {
  int64_t     size; /* >= 0: static size; -1: symbolic (sym != NULL) or unknown */
  const char *sym;  /* interned symbol name, or NULL */
} PlDim;

typedef struct {
  int   rank;              /* 0 for scalars, PL_RANK_UNKNOWN if unknown */
  PlDim dims[PL_MAX_RANK];
} PlShape;

PlShape pl_shape_unknown   (void);
PlShape pl_shape_scalar    (void);
/* A static shape; rank must be <= PL_MAX_RANK. */
PlShape pl_shape_from_dims (int rank, const int64_t *dims);
PlDim   pl_dim_static      (int64_t size);
PlDim   pl_dim_symbol      (const char *name); /* interns name */
PlDim   pl_dim_unknown     (void);

bool    pl_dim_is_static   (PlDim d);
bool    pl_dim_equal       (PlDim a, PlDim b);   /* same static size or same symbol */
bool    pl_shape_is_static (const PlShape *s);   /* known rank, all dims static */
bool    pl_shape_equal     (const PlShape *a, const PlShape *b);
/* Element count of a static shape, -1 if not static or on overflow. */
int64_t pl_shape_numel     (const PlShape *s);
/* The product of dims[0..n) (1 for n = 0). */
int64_t pl_dims_product    (int n, const int64_t *dims);
/* Copies the static sizes into dims (PL_MAX_RANK entries); false if not static. */
bool    pl_shape_get_dims  (const PlShape *s, int64_t *dims);
/* "[2, N, ?, 4]"; "[]" for scalars, "[*]" for unknown rank. Free with g_free. */
char   *pl_shape_to_string (const PlShape *s);

/* Numpy-style multidirectional broadcast of a and b into out.
 * Returns false (with a message naming both shapes) when they do not broadcast. */
bool    pl_shape_broadcast (const PlShape *a, const PlShape *b, PlShape *out, GError **error);

/* Multiplies a * b into *out; false on overflow past PL_MAX_NUMEL. */
bool    pl_mul_overflow    (int64_t a, int64_t b, int64_t *out);

G_END_DECLS
