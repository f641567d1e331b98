/* conv-tile.c — the direct convolution's output tile from the red-blue
 * pebble I/O bound (seed 003, MACO; see conv-direct.h): the rule's two
 * terms S and R, the tile that solves xy = R z and xyz = S, and the rule as
 * this CPU applies it (its L2, its cache line, OpenMP's team; whole rows
 * for NHWC depthwise convs). The tuner (tune.c) prunes its space with the
 * same terms; the kernels themselves are in conv-direct*.c.
 */
#define G_LOG_DOMAIN "passlab"
#include "conv-direct.h"

#include <math.h>

static int64_t kg (const PlConvDesc *c) { return c->c_out / c->group; }

/* Tile sizes are divisors of the dim or powers of two up to it: the values
 * the tuner tries (tune.c), so the rule's tile is one of them. A divisor
 * leaves no ragged last tile (whose smaller work unbalances the cores), so
 * a power of two that does not divide must be a factor sqrt(2) closer in
 * log distance to be taken. */
static int64_t
round_tile (double v, int64_t dim)
{
  int64_t best = 1;
  double best_d = INFINITY, lv = log (MAX (v, 1.0));
  for (int64_t t = 1; t <= dim; t++)
    if (dim % t == 0 || (t & (t - 1)) == 0)
      {
        double d = fabs (log ((double) t) - lv) + (dim % t ? 0.5 * G_LN2 : 0.0);
        if (d < best_d)
          best_d = d, best = t;
      }
  return best;
}

/* S, as the seed's S/Np: the fast memory of one parallel unit, in elements
 * of the tile. The seed's S is a fast memory that Np units share; here a
 * core owns its L2, so the caller passes one core's L2 as fast_mem_bytes
 * (pl_cpu_fast_memory_bytes: level 2 of /sys/devices/system/cpu/cpu0/
 * cache/index*, divided among the CPUs that share it; 2 MiB = 524288 f32 on
 * this project's Xeon) and S = fast_mem_bytes / element size: the tile's
 * outputs fill it (one channel's input window and z Hk Wk weights are small
 * beside them). Divided by N for CHWN, whose tile holds the whole batch;
 * and at most the outputs per unit, (N/NA) G OH OW KG / Np, so that every
 * unit gets a tile. */
static double
pebble_s (const PlConvDesc *c, int64_t fast_mem_bytes, int n_parallel)
{
  const double na = c->x_layout == PL_LAYOUT_CHWN ? (double) c->batch : 1.0;
  double s = (double) fast_mem_bytes / (double) pl_dtype_size (c->dtype) / na;
  double share = (double) c->batch / na * (double) c->group * (double) c->out[0] * (double) c->out[1]
                 * (double) kg (c) / MAX (n_parallel, 1);
  return MAX (1.0, MIN (s, share));
}

/* R, the reuse of one input element, Hk Wk / (sh sw), divided by what
 * staging an input element costs in weight elements. The pebble game counts
 * words moved; a cache moves lines. The generic NHWC kernel stages cu input
 * channels at a time (pl_conv_direct_channels_per_pass), and channels are
 * innermost there, so the cu elements of a point it stages come in a line
 * of line_elems while the weights it reads are whole vectors: its input
 * words cost line_elems / cu times more, and the rule trades input reuse
 * for them (larger z, fewer points). The NHWC pointwise kernel reads whole
 * rows of channels in place, and NCHW and CHWN stage contiguous rows
 * (images): no such factor. 1 for the CUDA kernel, whose block stages
 * through shared memory. Measured on the stack's eleven convs at batch 1 in
 * NHWC (four exhaustive searches averaged, one channel a pass): the best
 * tiles hold all output channels and few points, at xy / (R z) of
 * 0.01 .. 0.4 for R = Hk Wk / stride^2. With the line factor on the
 * pointwise kernel, the pruned search's best 1x1 stride-2 tiles ran at
 * 72-88% of the full search's. */
static double
pebble_r (const PlConvDesc *c, int64_t line_elems)
{
  double gamma = 1.0;
  if (c->x_layout == PL_LAYOUT_NHWC && line_elems > 1 && !pl_conv_direct_nhwc_pointwise (c))
    gamma = (double) line_elems / (double) MIN (line_elems, pl_conv_direct_channels_per_pass (c));
  /* CHWN: a tile point is the whole batch, so its input words per channel are
   * x y N against z Hk Wk weights: balanced at x y = R z / N. */
  if (c->x_layout == PL_LAYOUT_CHWN)
    gamma *= (double) c->batch;
  return (double) (c->kernel[0] * c->kernel[1]) / (double) (c->strides[0] * c->strides[1]) / gamma;
}

void
pl_conv_pebble_terms (const PlConvDesc *c, int64_t fast_mem_bytes, int n_parallel, int64_t line_elems, double *S,
                      double *R)
{
  *S = pebble_s (c, fast_mem_bytes, n_parallel);
  *R = pebble_r (c, line_elems);
}

void
pl_conv_pebble_tile (const PlConvDesc *c, int64_t fast_mem_bytes, int n_parallel, int64_t line_elems, int64_t tile[3])
{
  const double S = pebble_s (c, fast_mem_bytes, n_parallel), R = pebble_r (c, line_elems);
  const double OH = (double) c->out[0], OW = (double) c->out[1], KG = (double) kg (c);
  /* xy = R z and xyz = S: z = sqrt (S / R), xy = sqrt (S R) */
  double z = sqrt (S / R), xy = sqrt (S * R);
  if (z > KG)   /* all channels in one tile: spend the memory on points */
    z = KG, xy = S / KG;
  if (xy > OH * OW)   /* the whole image in one tile: spend it on channels */
    xy = OH * OW, z = MIN (KG, S / xy);
  /* square, unless the image is narrower or lower; the CHWN pointwise
   * kernel's points run on along a row and into the next when the tile
   * spans the width (one segment; 7 of 14 columns left a part vector a row
   * at batch 8: 8.0 against 5.0 ms for ResNeXt's 8x1024x14x14 -> 512) */
  double x = pl_conv_direct_chwn_pointwise (c) ? MIN (OW, xy) : MIN (OW, sqrt (xy));
  if (xy / x > OH)
    x = MIN (OW, xy / OH);
  tile[2] = round_tile (z, kg (c));
  tile[0] = round_tile (x, c->out[1]);
  tile[1] = round_tile (xy / (double) tile[0], c->out[0]);   /* y makes up for x's rounding */
}

static int64_t
cpu_line_elems (const PlConvDesc *c)
{
  return MAX (1, pl_cpu_line_bytes () / (int64_t) pl_dtype_size (c->dtype));
}

void
pl_conv_cpu_pebble_terms (const PlConvDesc *c, int n_parallel, double *S, double *R)
{
  pl_conv_pebble_terms (c, pl_cpu_fast_memory_bytes (), n_parallel > 0 ? n_parallel : pl_cpu_parallel_units (),
                        cpu_line_elems (c), S, R);
}

/* The NHWC depthwise kernel's tile holds every channel of its points, and
 * each input element serves Hk Wk / stride^2 outputs of its own channel
 * only: no channel reuse to trade (the small-group kernel's tile too: an
 * input serves its group's few channels, read from L1 within a point). Whole rows (contiguous in NHWC), as many
 * as fit the L2 with all channels, but at least 4 tasks a thread (the rows
 * of a depthwise conv are cheap, so balance matters more than reuse). */
static void
nhwc_depthwise_tile (const PlConvDesc *c, int n_parallel, int64_t tile[3])
{
  const int64_t OH = c->out[0], OW = c->out[1];
  const double fast = (double) pl_cpu_fast_memory_bytes () / (double) pl_dtype_size (c->dtype);
  tile[0] = OW;
  tile[1] = 1;
  tile[2] = 1;
  for (int64_t y = OH; y >= 1; y--)
    if ((OH % y == 0 || (y & (y - 1)) == 0) && c->batch * ((OH + y - 1) / y) >= 4 * (int64_t) n_parallel
        && (double) (y * OW * c->c_out) <= fast)
      {
        tile[1] = y;
        break;
      }
}

void
pl_conv_cpu_pebble_tile (const PlConvDesc *c, int n_parallel, int64_t tile[3])
{
  n_parallel = n_parallel > 0 ? n_parallel : pl_cpu_parallel_units ();
  if (pl_conv_direct_nhwc_depthwise (c) || pl_conv_direct_nhwc_grouped (c))
    nhwc_depthwise_tile (c, n_parallel, tile);
  else
    pl_conv_pebble_tile (c, pl_cpu_fast_memory_bytes (), n_parallel, cpu_line_elems (c), tile);
}
