/* runtime-run.c — running an executable: one launch per step, library
 * calls, fallbacks on host tensors, a timing per launch (clock_gettime on
 * the CPU, CUDA events on the GPU), one warm-up run then `repeat` timed
 * runs, and the report: per-kernel medians, the last run's launches and its
 * memory in use over time. The reference backend runs the interpreter with
 * a per-node hook instead.
 *
 * Swap copies (SwapOut / SwapIn steps). On the cpu a copy is a memcpy
 * between the arena and the host pool, in order: compute waits for the
 * whole copy, so the wait time is the copy time. On cuda a copy goes on the
 * copy stream after an event that marks everything issued before it; a
 * later step waits (cuStreamWaitEvent) for a copy only when it must: it
 * reads a swapped-in tensor, it has a control edge on the copy (SERIALIZE:
 * the next big allocation after a swap-out), or it writes where a pending
 * swap-out still reads. The issue point of a swap-in is its place in the
 * schedule, which the swap pass chose (PREFETCH edge). Copy and wait times
 * are events: copy start/end on the copy stream, and around each wait on
 * the compute stream.
 *
 * Fallbacks and the caller see logical tensors: a buffer in another layout
 * (layout.h) is reordered on the host on its way to and from them.
 */
#define G_LOG_DOMAIN "passlab"
#include "runtime-private.h"

#include "interp.h"
#include "schedule.h"
#include "stats.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* The status words of one kernel that checks indices (pl_kernel_plan_checks). */
#define STATUS_BYTES (sizeof (int64_t) * PL_STATUS_WORDS)

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static bool
check_inputs (const PlGraph *g, PlTensor *const *inputs, GError **error)
{
  for (guint i = 0; i < g->inputs->len; i++)
    {
      const PlValue *v = g->inputs->pdata[i];
      const PlTensor *t = inputs ? inputs[i] : NULL;
      bool ok = t && t->dtype == v->dtype && t->rank == v->shape.rank;
      for (int k = 0; ok && k < t->rank; k++)
        ok = t->dims[k] == v->shape.dims[k].size;
      if (!ok)
        {
          g_autofree char *want = pl_shape_to_string (&v->shape);
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "input '%s' must be %s%s", v->name, pl_dtype_name (v->dtype), want);
          return false;
        }
    }
  return true;
}

/* --- buffers as memory --------------------------------------------------------------- */

static void *
host_ptr (PlExecutable *e, int b, PlTensor *const *inputs)
{
  Buffer *r = pl_runtime_buf (e, pl_runtime_root (e, b));
  switch (r->kind)
    {
    case BUF_CONST: return r->constant->data;
    default: return r->host ? (char *) e->host_pool + r->host_offset : (char *) e->arena + r->offset;
    }
}

static bool
on_host (PlExecutable *e, int b)
{
  return e->backend == PL_BACKEND_CPU || pl_runtime_buf (e, pl_runtime_root (e, b))->host;
}

static guint64
dev_ptr (PlExecutable *e, int b)
{
  Buffer *r = pl_runtime_buf (e, pl_runtime_root (e, b));
  return r->kind == BUF_CONST ? r->device : e->cu_arena + (guint64) r->offset;
}

/* --- layouts on the host --------------------------------------------------------------- */

/* Copies elements of `size` bytes with the offsets of both layouts: an
 * odometer over the logical index, innermost dim fastest. */
static void
relayout (size_t size, int rank, const int64_t *dims, const int64_t *fs, const int64_t *ts, const char *src, char *dst)
{
  int64_t idx[PL_MAX_RANK] = { 0 }, n = pl_dims_product (rank, dims);
  int64_t fo = 0, to = 0;
  for (int64_t i = 0; i < n; i++)
    {
      memcpy (dst + to * (int64_t) size, src + fo * (int64_t) size, size);
      for (int k = rank - 1; k >= 0; k--)
        {
          fo += fs[k];
          to += ts[k];
          if (++idx[k] < dims[k])
            break;
          fo -= fs[k] * dims[k];
          to -= ts[k] * dims[k];
          idx[k] = 0;
        }
    }
}

void
pl_runtime_relayout (PlDType dtype, int rank, const int64_t *dims, PlLayout from, PlLayout to, const void *src,
                     void *dst)
{
  int64_t fs[PL_MAX_RANK], ts[PL_MAX_RANK];
  pl_layout_strides (from, rank, dims, fs);
  pl_layout_strides (to, rank, dims, ts);
  relayout (pl_dtype_size (dtype), rank, dims, fs, ts, src, dst);
}

/* A host tensor with buffer b's type and shape and contents, in logical
 * (row-major) order whatever the buffer's layout: what the reference
 * implementations and the caller read. */
static PlTensor *
buffer_tensor (PlExecutable *e, int b, PlTensor *const *inputs G_GNUC_UNUSED, GError **error)
{
  Buffer *x = pl_runtime_buf (e, b);
  Buffer *r = pl_runtime_buf (e, pl_runtime_root (e, b));
  if (r->kind == BUF_CONST && !r->owned && x->rank == r->constant->rank && x->dtype == r->constant->dtype)
    return pl_tensor_ref (r->constant);
  PlTensor *t = pl_tensor_new (x->dtype, x->rank, x->dims, error);
  if (!t)
    return NULL;
  size_t n = pl_tensor_nbytes (t);
  g_autofree void *phys = x->layout != PL_LAYOUT_NCHW ? g_malloc (n) : NULL;
  void *dst = phys ? phys : t->data;
  if (r->kind == BUF_CONST)
    memcpy (dst, r->constant->data, n);
  else if (on_host (e, b))
    memcpy (dst, host_ptr (e, b, NULL), n);
  else if (!pl_cuda_download (e->cuda, dst, dev_ptr (e, b), n, error))
    {
      pl_tensor_unref (t);
      return NULL;
    }
  if (phys)
    pl_runtime_relayout (x->dtype, x->rank, x->dims, x->layout, PL_LAYOUT_NCHW, phys, t->data);
  return t;
}

/* t (logical order) into buffer b, in b's layout. */
static bool
store_tensor (PlExecutable *e, int b, const PlTensor *t, GError **error)
{
  Buffer *x = pl_runtime_buf (e, b);
  if (!t || (int64_t) pl_tensor_nbytes (t) != x->bytes || t->dtype != x->dtype)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "a fallback produced the wrong type for '%s'", x->name);
      return false;
    }
  size_t n = pl_tensor_nbytes (t);
  g_autofree void *phys = x->layout != PL_LAYOUT_NCHW ? g_malloc (n) : NULL;
  if (phys)
    pl_runtime_relayout (x->dtype, x->rank, x->dims, PL_LAYOUT_NCHW, x->layout, t->data, phys);
  const void *src = phys ? phys : t->data;
  if (on_host (e, b))
    {
      memcpy (host_ptr (e, b, NULL), src, n);
      return true;
    }
  return pl_cuda_upload (e->cuda, dev_ptr (e, b), src, n, error);
}

/* The op's reference implementation on host copies of its inputs. */
static bool
run_fallback (PlExecutable *e, Step *st, PlTensor *const *inputs, GError **error)
{
  const PlNode *node = st->node;
  PlKernelPlan *p = st->plan;
  int slots = MAX ((int) p->inputs->len, pl_op_info (node->op)->max_inputs);
  g_autofree PlTensor **ins = g_new0 (PlTensor *, MAX (slots, 1));
  g_autofree PlTensor **outs = g_new0 (PlTensor *, MAX (node->n_outputs, 1));
  bool ok = true;
  for (guint k = 0; k < p->inputs->len && ok; k++)
    if (st->in_bufs[k] >= 0)
      ok = (ins[k] = buffer_tensor (e, st->in_bufs[k], inputs, error)) != NULL;
  if (ok)
    {
      if (node->body)
        {
          PlTensor **r = pl_interp_run (node->body, ins, NULL, error);
          ok = r != NULL;
          for (int k = 0; ok && k < node->n_outputs; k++)
            outs[k] = r[k];
          g_free (r);
        }
      else
        ok = pl_op_info (node->op)->eval (node, ins, outs, error);
    }
  for (guint k = 0; ok && k < p->outputs->len; k++)
    if (st->out_bufs[k] >= 0)
      ok = store_tensor (e, st->out_bufs[k], outs[k], error);
  for (int k = 0; k < slots; k++)
    if (ins[k])
      pl_tensor_unref (ins[k]);
  for (int k = 0; k < node->n_outputs; k++)
    if (outs[k])
      pl_tensor_unref (outs[k]);
  return ok;
}

/* --- one step on the cpu -------------------------------------------------------------- */

static bool
exec_cpu (PlExecutable *e, Step *st, PlTensor *const *inputs, GError **error)
{
  PlKernelPlan *p = st->plan;
  if (st->copy)
    {
      /* a swap copy: arena <-> host pool, synchronous (reordered if the two values' layouts differ) */
      Buffer *src = pl_runtime_buf (e, st->in_bufs[0]), *dst = pl_runtime_buf (e, st->out_bufs[0]);
      if (src->layout != dst->layout)
        pl_runtime_relayout (dst->dtype, dst->rank, dst->dims, src->layout, dst->layout,
                             host_ptr (e, st->in_bufs[0], inputs), host_ptr (e, st->out_bufs[0], inputs));
      else
        memcpy (host_ptr (e, st->out_bufs[0], inputs), host_ptr (e, st->in_bufs[0], inputs), (size_t) dst->bytes);
      return true;
    }
  if (st->convert)
    {
      Buffer *x = pl_runtime_buf (e, st->in_bufs[0]);
      if (x->dtype != (st->convert == CONVERT_F16 ? PL_DTYPE_F32 : PL_DTYPE_F16))
        return run_fallback (e, st, inputs, error);   /* the evaluator names the wrong dtype */
      int64_t n = x->bytes / (int64_t) pl_dtype_size (x->dtype);
      void *src = host_ptr (e, st->in_bufs[0], inputs), *dst = host_ptr (e, st->out_bufs[0], inputs);
      if (st->convert == CONVERT_F16)
        for (int64_t i = 0; i < n; i++)
          ((uint16_t *) dst)[i] = pl_f32_to_f16 (((const float *) src)[i]);
      else
        for (int64_t i = 0; i < n; i++)
          ((float *) dst)[i] = pl_f16_to_f32 (((const uint16_t *) src)[i]);
      return true;
    }
  if (p->kind == PL_PLAN_FALLBACK)
    return run_fallback (e, st, inputs, error);
  if (p->kind == PL_PLAN_ALIAS)
    return true;
  int n_in = (int) p->inputs->len, n_out = (int) p->outputs->len;
  /* no allocation per launch for the common case */
  void *small[32] = { NULL };
  g_autofree void **big = n_in + n_out + 1 > 32 ? g_new0 (void *, n_in + n_out + 1) : NULL;
  void **args = big ? big : small;
  for (int k = 0; k < n_in; k++)
    if (st->in_bufs[k] >= 0)
      args[k] = host_ptr (e, st->in_bufs[k], inputs);
  for (int k = 0; k < n_out; k++)
    if (st->out_bufs[k] >= 0)
      args[n_in + k] = host_ptr (e, st->out_bufs[k], inputs);
  if (p->kind == PL_PLAN_GEMM || p->kind == PL_PLAN_CONV)
    {
      void *target = !p->loop || p->in_place ? args[n_in] : host_ptr (e, st->lib_buf, inputs);
      if (st->pack_buf >= 0)   /* weights that are not constants: packed every run */
        pl_runtime_pack_weights (st, host_ptr (e, st->pack_src, inputs), args[p->conv.w_slot]);
      if (p->kind == PL_PLAN_GEMM)
        pl_cpu_gemm_with (&p->gemm, args[p->gemm.a_slot], args[p->gemm.b_slot], target, st->gemm_small);
      else if (p->conv.transpose)
        pl_cpu_conv_transpose (p, args[p->conv.x_slot], args[p->conv.w_slot], target,
                               host_ptr (e, st->col_buf, inputs), st->im2col);
      else if (st->direct)
        st->direct (args[p->conv.x_slot], args[p->conv.w_slot], target, st->tile[0], st->tile[1], st->tile[2]);
      else
        pl_cpu_conv (&p->conv, args[p->conv.x_slot], args[p->conv.w_slot], target,
                     st->col_buf >= 0 ? host_ptr (e, st->col_buf, inputs) : NULL, st->im2col);
      if (p->lib_slot >= 0)
        args[p->lib_slot] = target;
    }
  if (st->status >= 0)
    args[n_in + n_out] = &e->status[PL_STATUS_WORDS * st->status];
  if (st->fn)
    st->fn (args);
  return true;
}

/* --- one step on the gpu --------------------------------------------------------------- */

/* Weights that are not constants, packed for the direct conv through the
 * host (they are small; constants were packed once when building). */
static bool
pack_on_host (PlExecutable *e, Step *st, GError **error)
{
  Buffer *src = pl_runtime_buf (e, st->pack_src), *dst = pl_runtime_buf (e, st->pack_buf);
  g_autofree void *w = g_malloc (MAX (src->bytes, 1)), *packed = g_malloc (MAX (dst->bytes, 1));
  if (!pl_cuda_download (e->cuda, w, dev_ptr (e, st->pack_src), (size_t) src->bytes, error))
    return false;
  pl_runtime_pack_weights (st, w, packed);
  return pl_cuda_upload (e->cuda, dev_ptr (e, st->pack_buf), packed, (size_t) dst->bytes, error);
}

/* A ConvTranspose, image by image: the groups' column matrices by one
 * batched cuBLAS GEMM into the workspace, then the col2im kernel writes the
 * image's outputs. */
static bool
conv_transpose_cuda (PlExecutable *e, Step *st, guint64 x, guint64 w, guint64 y, GError **error)
{
  const PlKernelPlan *p = st->plan;
  const PlConvDesc *c = &p->conv;
  guint64 col = dev_ptr (e, st->col_buf);
  guint64 image_bytes = (guint64) (c->c_in * c->col_cols * (int64_t) pl_dtype_size (c->dtype));
  for (int64_t n = 0; n < c->batch; n++)
    {
      void *params[3] = { &col, &y, &n };
      if (!pl_cuda_gemm (e->cuda, &p->gemm, w, x + (guint64) n * image_bytes, col, error) ||
          !pl_cuda_launch (e->cuda, st->cu_fn[1], &st->launch[1], params, error))
        return false;
    }
  return true;
}

static bool
exec_cuda (PlExecutable *e, Step *st, PlTensor *const *inputs, GError **error)
{
  PlKernelPlan *p = st->plan;
  if (p->kind == PL_PLAN_FALLBACK)
    return pl_cuda_sync (e->cuda, error) && run_fallback (e, st, inputs, error);
  if (p->kind == PL_PLAN_ALIAS)
    return true;
  int n_in = (int) p->inputs->len, n_out = (int) p->outputs->len;
  g_autofree guint64 *ptr = g_new0 (guint64, n_in + n_out + 2);
  g_autofree void **params = g_new0 (void *, n_in + n_out + 2);
  for (int k = 0; k < n_in; k++)
    if (st->in_bufs[k] >= 0)
      ptr[k] = dev_ptr (e, st->in_bufs[k]);
  for (int k = 0; k < n_out; k++)
    if (st->out_bufs[k] >= 0)
      ptr[n_in + k] = dev_ptr (e, st->out_bufs[k]);
  ptr[n_in + n_out] = st->scratch_buf >= 0 ? dev_ptr (e, st->scratch_buf) : 0;
  if (p->kind == PL_PLAN_GEMM || p->kind == PL_PLAN_CONV)
    {
      guint64 target = !p->loop || p->in_place ? ptr[n_in] : dev_ptr (e, st->lib_buf);
      if (st->pack_buf >= 0 && !pack_on_host (e, st, error))
        return false;
      if (p->kind == PL_PLAN_GEMM)
        {
          if (!pl_cuda_gemm (e->cuda, &p->gemm, ptr[p->gemm.a_slot], ptr[p->gemm.b_slot], target, error))
            return false;
        }
      else if (p->conv.transpose)
        {
          if (!conv_transpose_cuda (e, st, ptr[p->conv.x_slot], ptr[p->conv.w_slot], target, error))
            return false;
        }
      else
        {
          guint64 cp[3] = { ptr[p->conv.x_slot], ptr[p->conv.w_slot], target };
          void *cparams[3] = { &cp[0], &cp[1], &cp[2] };
          if (!pl_cuda_launch (e->cuda, st->cu_fn[1], &st->launch[1], cparams, error))
            return false;
        }
      if (p->lib_slot >= 0)
        ptr[p->lib_slot] = target;
    }
  if (p->kind == PL_PLAN_SCATTER)   /* the copy of the data first */
    {
      void *copy[2] = { &ptr[0], &ptr[n_in] };
      if (!pl_cuda_launch (e->cuda, st->cu_fn[1], &st->launch[1], copy, error))
        return false;
    }
  if (!st->cu_fn[0])
    return true;
  int n_params = n_in + n_out + 1;
  if (st->status >= 0)   /* the status word goes before the scratch */
    {
      ptr[n_params] = ptr[n_params - 1];
      ptr[n_params - 1] = e->cu_status + STATUS_BYTES * (guint64) st->status;
      n_params++;
    }
  for (int k = 0; k < n_params; k++)
    params[k] = &ptr[k];
  return pl_cuda_launch (e->cuda, st->cu_fn[0], &st->launch[0], params, error);
}

/* --- runs ------------------------------------------------------------------------------- */

/* The bytes allocated when step s starts and freed when it ends (s = -1:
 * the inputs), device or host (host buffers). */
static void
memory_deltas (PlExecutable *e, bool host, int64_t *alloc, int64_t *freed)
{
  int n = (int) e->steps->len;
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = pl_runtime_buf (e, (int) i);
      if ((b->kind != BUF_TEMP && b->kind != BUF_INPUT) || b->last < 0 || (b->kind == BUF_TEMP && b->first < 0) ||
          b->host != host)
        continue;
      int first = b->kind == BUF_INPUT ? -1 : b->first;
      alloc[first + 1] += b->bytes;
      if (b->last < n)
        freed[b->last + 1] += b->bytes;
    }
}

static PlRunReport *
make_report (PlExecutable *e, int runs, const double *dur, const double *start, const double *total,
             const double *copy, const double *wait)
{
  int n_steps = (int) e->steps->len, n_entries = (int) e->entries->len, timed = runs - 1;
  PlRunReport *r = g_new0 (PlRunReport, 1);
  r->backend = e->backend;
  r->repeats = timed;
  r->n_kernels = n_entries;
  r->kernels = g_new0 (PlKernelTiming, MAX (n_entries, 1));
  g_autofree double *per = g_new0 (double, MAX (timed, 1));
  for (int i = 0; i < n_entries; i++)
    {
      Entry *en = &g_array_index (e->entries, Entry, i);
      PlKernelTiming *k = &r->kernels[i];
      for (int run = 1; run < runs; run++)
        {
          per[run - 1] = 0;
          for (int s = en->first_step; s < en->first_step + en->n_steps; s++)
            per[run - 1] += dur[run * n_steps + s];
        }
      k->name = g_strdup (en->name);
      k->node_id = en->node_id;
      k->ops = g_strdup (en->ops);
      k->n_ops = en->n_ops;
      k->library = en->library;
      k->fallback = en->fallback;
      k->kind = g_strdup (en->kind);
      k->note = g_strdup (en->note);
      k->n_launches = en->n_steps;
      k->bytes = en->bytes;
      k->flops = en->flops;
      k->median_ms = pl_median_sort (per, timed);
      k->min_ms = per[0];
      k->gbps = k->median_ms > 0 ? (double) k->bytes / (k->median_ms * 1e6) : 0;
    }
  g_autofree double *tot = g_memdup2 (total + 1, sizeof (double) * MAX (timed, 1));
  r->total_ms = pl_median_sort (tot, timed);
  g_autofree double *cp = g_memdup2 (copy + 1, sizeof (double) * MAX (timed, 1));
  r->copy_ms = pl_median_sort (cp, timed);
  g_autofree double *wt = g_memdup2 (wait + 1, sizeof (double) * MAX (timed, 1));
  r->wait_ms = pl_median_sort (wt, timed);
  for (int s = 0; s < n_steps; s++)
    if (pl_runtime_step (e, s)->copy)
      {
        r->n_copies++;
        r->copy_bytes += pl_runtime_buf (e, pl_runtime_step (e, s)->out_bufs[0])->bytes;
      }

  /* the last run's launches and memory */
  int last = runs - 1;
  r->events = g_new0 (PlTraceEvent, MAX (n_steps, 1));
  for (int s = 0; s < n_steps; s++)
    {
      Step *st = pl_runtime_step (e, s);
      if (st->plan->kind == PL_PLAN_ALIAS)
        continue;
      Entry *en = &g_array_index (e->entries, Entry, st->entry);
      PlTraceEvent *ev = &r->events[r->n_events++];
      ev->kernel = st->entry;
      ev->name = g_strdup (en->n_steps > 1 ? st->node->name : en->name);
      ev->start_ms = start[s];
      ev->dur_ms = dur[last * n_steps + s];
    }
  g_autofree int64_t *alloc = g_new0 (int64_t, n_steps + 2);
  g_autofree int64_t *freed = g_new0 (int64_t, n_steps + 2);
  g_autofree int64_t *halloc = g_new0 (int64_t, n_steps + 2);
  g_autofree int64_t *hfreed = g_new0 (int64_t, n_steps + 2);
  memory_deltas (e, false, alloc, freed);
  memory_deltas (e, true, halloc, hfreed);
  r->memory = g_new0 (PlMemorySample, 2 * n_steps + 2);
  int64_t in_use = alloc[0], host_use = halloc[0];
  r->memory[r->n_memory++] = (PlMemorySample) { 0.0, in_use, host_use };
  for (int s = 0; s < n_steps; s++)
    {
      in_use += alloc[s + 1];
      host_use += halloc[s + 1];
      r->memory[r->n_memory++] = (PlMemorySample) { start[s], in_use, host_use };
      r->peak_bytes = MAX (r->peak_bytes, in_use);
      r->host_peak_bytes = MAX (r->host_peak_bytes, host_use);
      in_use -= freed[s + 1];
      host_use -= hfreed[s + 1];
      r->memory[r->n_memory++] = (PlMemorySample) { start[s] + dur[last * n_steps + s], in_use, host_use };
    }
  r->peak_bytes = MAX (r->peak_bytes, alloc[0]);
  r->arena_bytes = e->arena_bytes;
  r->host_pool_bytes = e->host_bytes;
  r->workspace_bytes = e->workspace_bytes;
  r->device_budget = e->device_budget;
  for (guint i = 0; i < e->bufs->len; i++)
    if (pl_runtime_buf (e, (int) i)->kind == BUF_CONST && pl_runtime_buf (e, (int) i)->last >= 0)
      /* what the kernels read (packed weights, not their source) */
      r->param_bytes += pl_runtime_buf (e, (int) i)->bytes;
  return r;
}

/* The inputs into their places in the arena, at the start of every run
 * (first fit reuses an input's place once it is read for the last time). */
static bool
upload_inputs (PlExecutable *e, PlTensor *const *inputs, GError **error)
{
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = pl_runtime_buf (e, (int) i);
      if (b->kind != BUF_INPUT || b->offset < 0)
        continue;
      if (b->layout != PL_LAYOUT_NCHW)
        {
          /* graph inputs are logical; a kernel reads this one in its layout */
          if (!store_tensor (e, (int) i, inputs[b->input_index], error))
            return false;
        }
      else if (e->backend == PL_BACKEND_CPU)
        memcpy ((char *) e->arena + b->offset, inputs[b->input_index]->data, (size_t) b->bytes);
      else if (!pl_cuda_upload (e->cuda, e->cu_arena + (guint64) b->offset, inputs[b->input_index]->data,
                                (size_t) b->bytes, error))
        return false;
    }
  return true;
}

/* --- swap copies on cuda ------------------------------------------------------------------ */

/* Event numbers: 0 the run's start; 2s+1, 2s+2 around step s (on the copy
 * stream for a copy); EV_ISSUE + s before copy s is issued; EV_WAIT + 2s,
 * + 2s + 1 around the waits before step s. */
#define EV_ISSUE(n) (2 * (n) + 2)
#define EV_WAIT(n)  (3 * (n) + 2)
#define N_EVENTS(n) (5 * (n) + 2)

static bool
ranges_overlap (const Buffer *a, const Buffer *b)
{
  return a->offset >= 0 && b->offset >= 0 && a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes;
}

/* Whether step s must wait for the pending copy c (see the top of the file). */
static bool
must_wait (PlExecutable *e, Step *st, Step *cp)
{
  PlKernelPlan *p = st->plan;
  if (cp->copy == COPY_IN)
    {
      int dst = pl_runtime_root (e, cp->out_bufs[0]);
      for (guint k = 0; k < p->inputs->len; k++)
        if (st->in_bufs[k] >= 0 && pl_runtime_root (e, st->in_bufs[k]) == dst)
          return true;
    }
  for (int k = 0; k < st->node->n_controls; k++)
    if (st->node->controls[k].node == cp->node)
      return true;
  if (cp->copy == COPY_OUT)
    {
      Buffer *src = pl_runtime_buf (e, pl_runtime_root (e, cp->in_bufs[0]));
      int extra[3] = { st->lib_buf, st->col_buf, st->scratch_buf };
      for (guint k = 0; k < p->outputs->len; k++)
        if (st->out_bufs[k] >= 0 && ranges_overlap (pl_runtime_buf (e, pl_runtime_root (e, st->out_bufs[k])), src))
          return true;
      for (int k = 0; k < 3; k++)
        if (extra[k] >= 0 && ranges_overlap (pl_runtime_buf (e, extra[k]), src))
          return true;
    }
  return false;
}

/* Step s on cuda: a copy issued on the copy stream, or the waits it needs then its launch. */
static bool
run_cuda_step (PlExecutable *e, int s, bool *pending, bool *waited, PlTensor *const *inputs, GError **error)
{
  int n = (int) e->steps->len;
  Step *st = pl_runtime_step (e, s);
  if (st->copy)
    {
      bool out = st->copy == COPY_OUT;
      int hb = out ? st->out_bufs[0] : st->in_bufs[0], db = out ? st->in_bufs[0] : st->out_bufs[0];
      if (!pl_cuda_record (e->cuda, EV_ISSUE (n) + s, error) ||
          !pl_cuda_copy_async (e->cuda, out, host_ptr (e, hb, inputs), dev_ptr (e, db),
                               (size_t) pl_runtime_buf (e, st->out_bufs[0])->bytes, EV_ISSUE (n) + s, 2 * s + 1,
                               2 * s + 2, error))
        return false;
      pending[s] = true;
      return true;
    }
  waited[s] = false;
  for (int c = 0; c < s; c++)
    if (pending[c] && must_wait (e, st, pl_runtime_step (e, c)))
      {
        if (!waited[s] && !pl_cuda_record (e->cuda, EV_WAIT (n) + 2 * s, error))
          return false;
        waited[s] = true;
        if (!pl_cuda_wait_event (e->cuda, 2 * c + 2, error))
          return false;
        pending[c] = false;
      }
  if (waited[s] && !pl_cuda_record (e->cuda, EV_WAIT (n) + 2 * s + 1, error))
    return false;
  if (st->plan->kind == PL_PLAN_FALLBACK)
    memset (pending, 0, sizeof (bool) * (size_t) n);   /* it synchronizes the context */
  return pl_cuda_record (e->cuda, 2 * s + 1, error) && exec_cuda (e, st, inputs, error) &&
         pl_cuda_record (e->cuda, 2 * s + 2, error);
}

/* --- index checks ----------------------------------------------------------------------- */


/* The status words: PL_STATUS_WORDS per step whose kernel checks indices,
 * assigned and allocated at the first run, zeroed before each. */
static bool
reset_status (PlExecutable *e, GError **error)
{
  if (!e->status_ready)
    {
      for (guint s = 0; s < e->steps->len; s++)
        {
          Step *st = pl_runtime_step (e, (int) s);
          st->status = !st->copy && st->plan && pl_kernel_plan_checks (st->plan) ? e->n_status++ : -1;
        }
      e->status = g_new0 (int64_t, PL_STATUS_WORDS * MAX (e->n_status, 1));
      if (e->backend == PL_BACKEND_CUDA && e->n_status > 0 &&
          !(e->cu_status = pl_cuda_alloc (e->cuda, STATUS_BYTES * (size_t) e->n_status, error)))
        return false;
      e->status_ready = true;
    }
  if (e->n_status == 0)
    return true;
  memset (e->status, 0, STATUS_BYTES * (size_t) e->n_status);
  return e->backend != PL_BACKEND_CUDA ||
         pl_cuda_upload (e->cuda, e->cu_status, e->status, STATUS_BYTES * (size_t) e->n_status, error);
}

/* Fails the run when step s met an index out of range or a division by
 * zero, as the reference would have: the check's message (its number,
 * 1-based) with its value. */
static bool
status_ok (PlExecutable *e, int s, GError **error)
{
  Step *st = pl_runtime_step (e, s);
  const int64_t *w = &e->status[PL_STATUS_WORDS * st->status];
  if (!w[0])
    return true;
  g_autofree char *message = pl_kernel_plan_check_message (st->plan, w[0], w[1]);
  g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "kernel %s (%s): %s", st->plan->name, st->plan->ops, message);
  return false;
}

static bool
cuda_status_ok (PlExecutable *e, GError **error)
{
  if (e->n_status == 0)
    return true;
  if (!pl_cuda_download (e->cuda, e->status, e->cu_status, STATUS_BYTES * (size_t) e->n_status, error))
    return false;
  for (guint s = 0; s < e->steps->len; s++)
    if (pl_runtime_step (e, (int) s)->status >= 0 && !status_ok (e, (int) s, error))
      return false;
  return true;
}

/* One run; dur/start (per step, ms), the copy time and the wait time filled. */
static bool
run_once (PlExecutable *e, PlTensor *const *inputs, double *dur, double *start, double *total, double *copy,
          double *wait, GError **error)
{
  int n = (int) e->steps->len;
  bool cuda = e->backend == PL_BACKEND_CUDA;
  *copy = *wait = 0;
  if (!upload_inputs (e, inputs, error) || !reset_status (e, error))
    return false;
  double t0 = now_ms ();
  if (cuda && !pl_cuda_record (e->cuda, 0, error))
    return false;
  g_autofree bool *pending = cuda ? g_new0 (bool, MAX (n, 1)) : NULL;
  g_autofree bool *waited = cuda ? g_new0 (bool, MAX (n, 1)) : NULL;
  for (int s = 0; s < n; s++)
    {
      Step *st = pl_runtime_step (e, s);
      if (cuda)
        {
          if (!run_cuda_step (e, s, pending, waited, inputs, error))
            return false;
          continue;
        }
      double a = now_ms ();
      if (!exec_cpu (e, st, inputs, error) || (st->status >= 0 && !status_ok (e, s, error)))
        return false;
      double b = now_ms ();
      start[s] = a - t0;
      dur[s] = b - a;
      if (st->copy)
        *copy += b - a;
    }
  if (cuda)
    {
      if (!pl_cuda_sync (e->cuda, error) || !cuda_status_ok (e, error))
        return false;
      float ms = 0;
      *total = 0;
      for (int s = 0; s < n; s++)
        {
          if (!pl_cuda_elapsed (e->cuda, 0, 2 * s + 1, &ms, error))
            return false;
          start[s] = ms;
          if (!pl_cuda_elapsed (e->cuda, 2 * s + 1, 2 * s + 2, &ms, error))
            return false;
          dur[s] = ms;
          *total = MAX (*total, start[s] + dur[s]);
          if (pl_runtime_step (e, s)->copy)
            *copy += ms;
          if (waited[s])
            {
              if (!pl_cuda_elapsed (e->cuda, EV_WAIT (n) + 2 * s, EV_WAIT (n) + 2 * s + 1, &ms, error))
                return false;
              *wait += ms;
            }
        }
      return true;
    }
  *total = now_ms () - t0;
  *wait = *copy;   /* synchronous copies: compute waits for all of each */
  return true;
}

static PlTensor **
collect_outputs (PlExecutable *e, PlTensor *const *inputs, GError **error)
{
  const PlGraph *g = e->g;
  PlTensor **outs = g_new0 (PlTensor *, g->outputs->len + 1);
  for (guint i = 0; i < g->outputs->len; i++)
    {
      outs[i] = buffer_tensor (e, e->output_bufs[i], inputs, error);
      if (!outs[i])
        {
          pl_interp_free_outputs (outs, (int) i);
          return NULL;
        }
      if (outs[i]->ref_count > 1)
        {
          /* a constant output: hand out a copy, as the interpreter would a new tensor */
          PlTensor *c = pl_tensor_copy (outs[i]);
          pl_tensor_unref (outs[i]);
          outs[i] = c;
        }
    }
  return outs;
}

PlTensor **
pl_runtime_run_compiled (PlExecutable *e, PlTensor *const *inputs, int repeat, PlRunReport **report, GError **error)
{
  if (!check_inputs (e->g, inputs, error))
    return NULL;
  if (e->backend == PL_BACKEND_CPU && !e->arena)
    {
      /* page-aligned (offsets are multiples of 64): every buffer starts on a
       * cache line whatever malloc returns, so kernels vectorize and stream
       * alike from one executable to the next */
      e->arena = g_aligned_alloc0 (1, (gsize) MAX (e->arena_bytes, 64), 4096);
    }
  if (e->backend == PL_BACKEND_CPU && !e->host_pool && e->host_bytes > 0)
    e->host_pool = g_malloc0 ((gsize) e->host_bytes);   /* the host pool: apart from the arena */
  int n = (int) e->steps->len, runs = 1 + repeat;
  g_autofree double *dur = g_new0 (double, (gsize) runs * MAX (n, 1));
  g_autofree double *start = g_new0 (double, MAX (n, 1));
  g_autofree double *total = g_new0 (double, runs);
  g_autofree double *copy = g_new0 (double, runs);
  g_autofree double *wait = g_new0 (double, runs);
  if (e->backend == PL_BACKEND_CUDA && !pl_cuda_events (e->cuda, N_EVENTS (n), error))
    return NULL;
  for (int run = 0; run < runs; run++)
    if (!run_once (e, inputs, dur + run * n, start, &total[run], &copy[run], &wait[run], error))
      return NULL;
  PlTensor **outs = collect_outputs (e, inputs, error);
  if (outs && report)
    {
      *report = make_report (e, runs, dur, start, total, copy, wait);
      (*report)->emulated = e->backend == PL_BACKEND_CUDA && pl_cuda_emulated (e->cuda);
      (*report)->device = e->backend == PL_BACKEND_CPU
                          ? g_strdup_printf ("cpu: %s, %d threads, OMP_WAIT_POLICY=%s, %s", pl_cpu_compiler_flags (),
                                             e->threads > 0 ? e->threads : (int) g_get_num_processors (),
                                             g_getenv ("OMP_WAIT_POLICY") ? g_getenv ("OMP_WAIT_POLICY") : "default",
                                             pl_cpu_blas_name ())
                          : g_strdup_printf ("cuda: %s, %d SMs%s", pl_cuda_device_name (e->cuda),
                                             pl_cuda_sm_count (e->cuda),
                                             pl_cuda_emulated (e->cuda)
                                               ? " (emulated: results are checked; the times are the CPU's, not a GPU's)"
                                               : "");
    }
  return outs;
}

/* --- the reference interpreter ---------------------------------------------------------- */

typedef struct {
  double  last;
  double  t0;
  GArray *dur;    /* per node of one run, in the order they ran */
  GArray *start;
} RefTimes;

static void
ref_hook (const PlNode *node, PlTensor *const *outputs, gpointer data)
{
  RefTimes *t = data;
  double now = now_ms ();
  double d = now - t->last, s = t->last - t->t0;
  g_array_append_val (t->dur, d);
  g_array_append_val (t->start, s);
  t->last = now;
}

PlTensor **
pl_runtime_run_reference (PlExecutable *e, PlTensor *const *inputs, int repeat, PlRunReport **report, GError **error)
{
  const PlGraph *g = e->g;
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return NULL;
  int runs = 1 + repeat;
  g_autofree double *dur = g_new0 (double, (gsize) runs * MAX (n, 1));
  g_autofree double *total = g_new0 (double, runs);
  PlTensor **outs = NULL;
  RefTimes t = { 0 };
  t.dur = g_array_new (FALSE, FALSE, sizeof (double));
  t.start = g_array_new (FALSE, FALSE, sizeof (double));
  PlInterpOptions opt = { ref_hook, &t };
  for (int run = 0; run < runs; run++)
    {
      if (outs)
        pl_interp_free_outputs (outs, (int) g->outputs->len);
      g_array_set_size (t.dur, 0);
      g_array_set_size (t.start, 0);
      t.t0 = t.last = now_ms ();
      outs = pl_interp_run (g, inputs, &opt, error);
      total[run] = now_ms () - t.t0;
      if (!outs)
        break;
      for (int k = 0; k < n && k < (int) t.dur->len; k++)
        dur[run * n + k] = g_array_index (t.dur, double, k);
    }
  if (outs && report)
    {
      PlRunReport *r = g_new0 (PlRunReport, 1);
      r->backend = PL_BACKEND_REFERENCE;
      r->repeats = repeat;
      r->device = g_strdup ("reference interpreter");
      r->n_kernels = n;
      r->kernels = g_new0 (PlKernelTiming, MAX (n, 1));
      g_autofree double *per = g_new0 (double, repeat);
      for (int k = 0; k < n; k++)
        {
          PlKernelTiming *kt = &r->kernels[k];
          const PlNode *node = order[k];
          for (int run = 1; run < runs; run++)
            per[run - 1] = dur[run * n + k];
          kt->name = g_strdup (node->name);
          kt->node_id = node->id;
          kt->ops = g_strdup (node->op_type);
          kt->n_ops = 1;
          kt->kind = g_strdup (node->body ? pl_node_attr_string (node, "kind", "fusion") : "op");
          kt->n_launches = 1;
          kt->median_ms = pl_median_sort (per, repeat);
          kt->min_ms = per[0];
          for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i])
              kt->bytes += pl_value_bytes (node->inputs[i], 1, NULL);
          for (int i = 0; i < node->n_outputs; i++)
            if (node->outputs[i])
              kt->bytes += pl_value_bytes (node->outputs[i], 1, NULL);
          kt->gbps = kt->median_ms > 0 ? (double) kt->bytes / (kt->median_ms * 1e6) : 0;
        }
      g_autofree double *tot = g_memdup2 (total + 1, sizeof (double) * repeat);
      r->total_ms = pl_median_sort (tot, repeat);
      r->events = g_new0 (PlTraceEvent, MAX (n, 1));
      for (int k = 0; k < n && k < (int) t.start->len; k++)
        r->events[r->n_events++] = (PlTraceEvent) { k, g_strdup (order[k]->name), g_array_index (t.start, double, k),
                                                    g_array_index (t.dur, double, k) };
      /* the schedule's liveness, at the times the nodes ran */
      g_autoptr (PlMemoryProfile) mp = pl_memory_profile (g, 1, NULL);
      if (mp && mp->n_steps == n)
        {
          r->memory = g_new0 (PlMemorySample, n + 1);
          r->memory[r->n_memory++] = (PlMemorySample) { 0, mp->input_bytes, 0 };
          for (int k = 0; k < n && k < r->n_events; k++)
            r->memory[r->n_memory++] = (PlMemorySample) { r->events[k].start_ms, mp->live_bytes[k],
                                                          mp->host_live_bytes ? mp->host_live_bytes[k] : 0 };
          r->peak_bytes = mp->peak_bytes;
          r->host_peak_bytes = mp->host_peak_bytes;
          r->param_bytes = mp->param_bytes;
        }
      *report = r;
    }
  g_array_unref (t.dur);
  g_array_unref (t.start);
  return outs;
}
