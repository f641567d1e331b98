/* index-expr.h — symbolic index arithmetic for the code generators.
 *
 * A kernel iterates over a domain of coordinates c0..cn-1 (each 0 <= ck <
 * size k). Every load and store reads an element offset that is a function
 * of the coordinates: broadcasting, transposing and reshaping compose into
 * such functions (XLA's "index functions"). We keep them in a canonical
 * form
 *
 *     constant + sum_i coef_i * atom_i,
 *     atom = ck | (expr / d) | (expr % d) | clamp (expr - s, 0, n - 1)
 *            | reflect (expr - s, n)
 *
 * with non-negative coefficients, interned in an arena so that two equal
 * expressions are the same pointer. Division and modulo simplify whenever
 * the sum splits into a part divisible by d and a part known to be below d
 * (every dim-aligned reshape), so most index functions stay affine and loops
 * vectorize; the rest print as integer / and % by constants.
 * Internal to kernels/.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct _PlIdx      PlIdx;
typedef struct _PlIdxAtom  PlIdxAtom;
typedef struct _PlIdxArena PlIdxArena;

typedef enum {
  PL_IDX_COORD,  /* coordinate `coord` */
  PL_IDX_DIV,    /* arg / divisor */
  PL_IDX_MOD,    /* arg % divisor */
  PL_IDX_CLAMP,  /* arg - shift clamped into [0, divisor) */
  PL_IDX_REFLECT,/* arg - shift mirrored into [0, divisor), numpy's reflect */
} PlIdxAtomKind;

struct _PlIdxAtom {
  PlIdxAtomKind  kind;
  int            coord;    /* COORD */
  const PlIdx   *arg;      /* DIV, MOD, CLAMP */
  int64_t        divisor;  /* DIV, MOD; CLAMP, REFLECT: the size clamped or mirrored into */
  int64_t        shift;    /* CLAMP (> 0), REFLECT (>= 0): subtracted first */
  int64_t        max;      /* largest value it takes */
  const char    *key;      /* canonical text, unique per atom */
};

typedef struct {
  int64_t          coef;   /* > 0 */
  const PlIdxAtom *atom;
} PlIdxTerm;

struct _PlIdx {
  int64_t    constant;     /* >= 0 */
  int        n_terms;
  PlIdxTerm *terms;        /* sorted by atom key */
  int64_t    max;          /* largest value it takes (the smallest is >= 0) */
  const char *key;         /* canonical text, unique per expression */
};

/* An arena over a domain of n_coords coordinates of the given sizes. */
PlIdxArena  *pl_idx_arena_new      (int n_coords, const int64_t *sizes);
void         pl_idx_arena_free     (PlIdxArena *a);
int          pl_idx_arena_n_coords (const PlIdxArena *a);
int64_t      pl_idx_arena_size     (const PlIdxArena *a, int coord);

const PlIdx *pl_idx_const          (PlIdxArena *a, int64_t c);
/* Coordinate k (the constant 0 when its size is 1). */
const PlIdx *pl_idx_coord          (PlIdxArena *a, int k);
const PlIdx *pl_idx_add            (PlIdxArena *a, const PlIdx *x, const PlIdx *y);
const PlIdx *pl_idx_mul            (PlIdxArena *a, const PlIdx *x, int64_t c);   /* c >= 0 */
const PlIdx *pl_idx_div            (PlIdxArena *a, const PlIdx *x, int64_t d);   /* d >= 1 */
const PlIdx *pl_idx_mod            (PlIdxArena *a, const PlIdx *x, int64_t d);   /* d >= 1 */
/* x - shift (any sign) clamped into [0, n) (n >= 1): exactly x - shift
 * wherever that lies inside, the nearest edge elsewhere. A read that a
 * select may discard stays in bounds so, and its neighbours' reads land on
 * the same edge element (in cache), where x - shift wrapped mod n would
 * read a distinct element each (and divide). */
const PlIdx *pl_idx_clamp          (PlIdxArena *a, const PlIdx *x, int64_t shift, int64_t n);
/* x - shift mirrored into [0, n) without repeating the edge, like numpy's
 * reflect: -1 -> 1, n -> n - 2, periodic with period 2 (n - 1) beyond
 * (n >= 1; n = 1: 0). Exactly x - shift wherever that lies inside. */
const PlIdx *pl_idx_reflect        (PlIdxArena *a, const PlIdx *x, int64_t shift, int64_t n);
/* Row-major offset of the multi-index idx[rank] in a tensor of dims. */
const PlIdx *pl_idx_linearize      (PlIdxArena *a, int rank, const PlIdx *const *idx, const int64_t *dims);
/* The multi-index (out[rank]) of row-major offset flat in a tensor of dims. */
void         pl_idx_delinearize    (PlIdxArena *a, const PlIdx *flat, int rank, const int64_t *dims,
                                    const PlIdx **out);

/* The coefficient of coordinate k as a direct term (0 if absent); *nested
 * is set when k also occurs inside a division or modulo. */
int64_t      pl_idx_coord_coef     (const PlIdx *x, int k, bool *nested);
/* Whether coordinate k occurs anywhere in x. */
bool         pl_idx_uses_coord     (const PlIdx *x, int k);
/* x rebuilt in arena dst with coordinate k renamed map[k]; terms of
 * coordinates mapped to -1 are dropped (merged into a neighbour). */
const PlIdx *pl_idx_translate      (PlIdxArena *dst, const PlIdx *x, const int *map);
/* x rebuilt in arena dst with coordinate k replaced by the expression
 * repl[k] (of dst; one per coordinate of x's arena), simplified on the way:
 * splitting a loop, c = 3136 * c_hi + c_lo, turns c / 3136 into c_hi. */
const PlIdx *pl_idx_substitute     (PlIdxArena *dst, const PlIdx *x, const PlIdx *const *repl);
/* C (and CUDA) text of x, coordinate k printed as names[k]; g_free it. */
char        *pl_idx_to_c           (const PlIdx *x, const char *const *names);

G_END_DECLS
