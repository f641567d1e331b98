/* conv-direct-cuda.c — the direct convolution in generated CUDA (see
 * conv-direct.c, which describes the kernel, and conv-direct.h).
 */
#define G_LOG_DOMAIN "passlab"
#include "conv-direct-private.h"

#include <string.h>

/* What one CUDA block holds: its tile, threads, points per thread, and the
 * input window (WX x WY) staged per channel. */
typedef struct {
  int64_t tx, ty, tz, wx, wy, threads, ppt, shared_bytes;
} CudaTile;

/* The static shared memory a block may use without opting in. */
#define CUDA_SHARED_BYTES (48 << 10)
/* The fast memory and parallel units the pebble rule gets for a GPU block:
 * the block's 48 KiB (its outputs live in registers of about that size) and
 * an H100's 132 SMs. */
#define CUDA_PEBBLE_UNITS 132

static void
cuda_tile_measure (const PlConvDesc *c, CudaTile *t)
{
  t->wx = (t->tx - 1) * c->strides[1] + (c->kernel[1] - 1) * c->dilations[1] + 1;
  t->wy = (t->ty - 1) * c->strides[0] + (c->kernel[0] - 1) * c->dilations[0] + 1;
  t->threads = MIN (256, (t->tx * t->ty + 31) / 32 * 32);
  t->ppt = (t->tx * t->ty + t->threads - 1) / t->threads;
  t->shared_bytes = (t->wx * t->wy + t->tz * c->kernel[0] * c->kernel[1]) * (int64_t) pl_dtype_size (c->dtype);
}

/* The tile of c->tile (the pebble tile for zeros), cut down until its
 * shared memory fits, z <= 64 and a thread holds at most 4 points (its
 * accumulators stay in registers and the unrolled loops small). */
static CudaTile
cuda_tile (const PlConvDesc *c)
{
  int64_t tile[3];
  if (c->tile[0] > 0 && c->tile[1] > 0 && c->tile[2] > 0)
    memcpy (tile, c->tile, sizeof tile);
  else
    {
      /* a block holds one image in every layout: the rule's tile is NCHW's
       * (a CHWN tile on the CPU holds the batch) */
      PlConvDesc per_image = *c;
      per_image.x_layout = per_image.y_layout = PL_LAYOUT_NCHW;
      pl_conv_pebble_tile (&per_image, CUDA_SHARED_BYTES, CUDA_PEBBLE_UNITS, 1, tile);
    }
  CudaTile t = { MIN (tile[0], c->out[1]), MIN (tile[1], c->out[0]), MIN (MIN (tile[2], kg (c)), 64) };
  for (;;)
    {
      cuda_tile_measure (c, &t);
      if (t.shared_bytes <= CUDA_SHARED_BYTES && t.ppt <= 4)
        break;
      if (t.tx == 1 && t.ty == 1 && t.tz == 1)
        break;   /* a huge kernel window: nothing smaller */
      if (t.tx >= t.ty && t.tx > 1)
        t.tx = (t.tx + 1) / 2;
      else if (t.ty > 1)
        t.ty = (t.ty + 1) / 2;
      else
        t.tz = (t.tz + 1) / 2;
    }
  return t;
}

static const char cuda_body[] =
  "extern \"C\" __global__ void __launch_bounds__ (D_THREADS)\n"
  "D_NAME (const D_T *__restrict__ x, const D_T *__restrict__ wp, D_T *__restrict__ y)\n"
  "{\n"
  "  __shared__ D_T win[D_WY * D_WX];\n"
  "  __shared__ D_T ws[D_TZ * D_KH * D_KW];\n"
  "  const int tid = threadIdx.x;\n"
  "  const long long ox0 = (blockIdx.x % D_NX) * D_TX, oy0 = (blockIdx.x / D_NX) * D_TY;\n"
  "  for (long long gz = blockIdx.y; gz < D_G * D_NZ; gz += gridDim.y)\n"
  "    for (long long n = blockIdx.z; n < D_N; n += gridDim.z)\n"
  "      {\n"
  "        const long long g = gz / D_NZ, k0 = (gz % D_NZ) * D_TZ;\n"
  "        D_T acc[D_PPT][D_TZ];\n"
  "#pragma unroll\n"
  "        for (int q = 0; q < D_PPT; q++)\n"
  "#pragma unroll\n"
  "          for (int k = 0; k < D_TZ; k++)\n"
  "            acc[q][k] = 0;\n"
  "        for (long long c = 0; c < D_CG; c++)\n"
  "          {\n"
  "            /* stage channel c: its input window and its z * Hk * Wk weights */\n"
  "            __syncthreads ();\n"
  "            for (int i = tid; i < D_WY * D_WX; i += D_THREADS)\n"
  "              {\n"
  "                const long long ih = oy0 * D_SH - D_PT + i / D_WX, iw = ox0 * D_SW - D_PL + i % D_WX;\n"
  "                win[i] = ih >= 0 && ih < D_H && iw >= 0 && iw < D_W\n"
  "                           ? x[n * D_XN + (g * D_CG + c) * D_XC + ih * D_XH + iw * D_XW] : (D_T) 0;\n"
  "              }\n"
  "            for (int i = tid; i < D_TZ * D_KH * D_KW; i += D_THREADS)\n"
  "              {\n"
  "                const long long k = k0 + i / (D_KH * D_KW), r = i % (D_KH * D_KW);\n"
  "                ws[i] = k < D_KG ? wp[((g * D_CG + c) * D_KH * D_KW + r) * D_KG + k] : (D_T) 0;\n"
  "              }\n"
  "            __syncthreads ();\n"
  "#pragma unroll\n"
  "            for (int q = 0; q < D_PPT; q++)\n"
  "              {\n"
  "                const int p = tid + q * D_THREADS;\n"
  "                if (p >= D_TX * D_TY)\n"
  "                  break;\n"
  "                const int py = p / D_TX, px = p % D_TX;\n"
  "                for (int kh = 0; kh < D_KH; kh++)\n"
  "                  for (int kw = 0; kw < D_KW; kw++)\n"
  "                    {\n"
  "                      const D_T xv = win[(py * D_SH + kh * D_DH) * D_WX + px * D_SW + kw * D_DW];\n"
  "#pragma unroll\n"
  "                      for (int k = 0; k < D_TZ; k++)\n"
  "                        acc[q][k] += xv * ws[k * D_KH * D_KW + kh * D_KW + kw];\n"
  "                    }\n"
  "              }\n"
  "          }\n"
  "#pragma unroll\n"
  "        for (int q = 0; q < D_PPT; q++)\n"
  "          {\n"
  "            const int p = tid + q * D_THREADS;\n"
  "            const long long oy = oy0 + p / D_TX, ox = ox0 + p % D_TX;\n"
  "            if (p >= D_TX * D_TY)\n"
  "              break;\n"
  "            if (oy >= D_OH || ox >= D_OW)\n"
  "              continue;\n"
  "#pragma unroll\n"
  "            for (int k = 0; k < D_TZ; k++)\n"
  "              if (k0 + k < D_KG)\n"
  "                y[n * D_YN + (g * D_KG + k0 + k) * D_YC + oy * D_YH + ox * D_YW] = acc[q][k];\n"
  "          }\n"
  "      }\n"
  "}\n";

void
pl_conv_direct_emit_cuda (GString *out, const PlConvDesc *c, const char *name, unsigned grid[3], unsigned block[3])
{
  const CudaTile t = cuda_tile (c);
  const gsize start = out->len;
  const int64_t nx = (c->out[1] + t.tx - 1) / t.tx, ny = (c->out[0] + t.ty - 1) / t.ty;
  const int64_t nz = (kg (c) + t.tz - 1) / t.tz;
  int64_t xd[4] = { c->batch, c->c_in, c->in[0], c->in[1] }, yd[4] = { c->batch, c->c_out, c->out[0], c->out[1] };
  int64_t xs[4], ys[4];
  pl_layout_strides (c->x_layout, 4, xd, xs);
  pl_layout_strides (c->y_layout, 4, yd, ys);

  g_string_append_printf (out, "/* %s: direct conv %s, tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                          " per block (conv-direct.c) */\n", name, pl_layout_name (c->x_layout), t.tx, t.ty, t.tz);
  g_string_append_printf (out, "#define D_T %s\n#define D_NAME %s\n",
                          c->dtype == PL_DTYPE_F32 ? "float" : "double", name);
  const struct { const char *name; int64_t v; } defs[] = {
    { "D_N", c->batch }, { "D_H", c->in[0] }, { "D_W", c->in[1] }, { "D_OH", c->out[0] }, { "D_OW", c->out[1] },
    { "D_G", c->group }, { "D_CG", cg (c) }, { "D_KG", kg (c) }, { "D_KH", c->kernel[0] }, { "D_KW", c->kernel[1] },
    { "D_SH", c->strides[0] }, { "D_SW", c->strides[1] }, { "D_DH", c->dilations[0] }, { "D_DW", c->dilations[1] },
    { "D_PT", c->pads[0] }, { "D_PL", c->pads[1] }, { "D_TX", t.tx }, { "D_TY", t.ty }, { "D_TZ", t.tz },
    { "D_WX", t.wx }, { "D_WY", t.wy }, { "D_NX", nx }, { "D_NZ", nz }, { "D_THREADS", t.threads },
    { "D_PPT", t.ppt }, { "D_XN", xs[0] }, { "D_XC", xs[1] }, { "D_XH", xs[2] }, { "D_XW", xs[3] },
    { "D_YN", ys[0] }, { "D_YC", ys[1] }, { "D_YH", ys[2] }, { "D_YW", ys[3] },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (defs); i++)
    g_string_append_printf (out, "#define %s %" G_GINT64_FORMAT "LL\n", defs[i].name, defs[i].v);
  g_string_append (out, cuda_body);
  pl_cd_undef_all (out, start);

  grid[0] = (unsigned) (nx * ny);
  grid[1] = (unsigned) MIN (c->group * nz, 65535);
  grid[2] = (unsigned) MIN (c->batch, 65535);
  block[0] = (unsigned) t.threads;
  block[1] = block[2] = 1;
}
