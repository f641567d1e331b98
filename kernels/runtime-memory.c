/* runtime-memory.c — where an executable's buffers live: their lifetimes
 * over the steps, in-place sharing, the arena and the host pool, and the
 * device budget the arena must fit.
 *
 * Buffers. Graph inputs and constants use the caller's and the graph's
 * tensors (cpu; uploaded on cuda). Every value a kernel produces gets a place
 * in one arena, assigned first fit over the schedule (then by size, largest
 * first, when that packs tighter: pack_arena): allocated when its
 * step runs, freed after its last reader (views share their source's place
 * and keep it alive). An elementwise kernel may store its output in the
 * place of an input it reads for the last time (pl_runtime_share_in_place:
 * the rule of pl_in_place_input, which the graph's memory profile follows
 * too). The arena is allocated once; the memory timeline of a run records
 * the bytes in use at each step's start and end.
 *
 * Swapping (DESIGN.md §1.5): a SwapOut's output is a host value
 * (pl_value_on_host) and gets a place in a separate host pool (first fit
 * too; malloc'd on the cpu, pinned on cuda); its SwapOut and the SwapIn
 * that reads it back are copy steps, not kernels. The arena is the device
 * memory — graph inputs included, on both backends — so when the swap pass
 * frees a tensor after its SwapOut, first fit hands that place to the next
 * allocation. With a device budget the arena must fit it.
 */
#define G_LOG_DOMAIN "passlab"
#include "runtime-private.h"

#include "schedule.h"

/* --- the memory plan ---------------------------------------------------------------- */

typedef struct {
  int64_t offset, size;
} Block;

static int
cmp_block (gconstpointer a, gconstpointer b)
{
  const Block *x = a, *y = b;
  return (x->offset > y->offset) - (x->offset < y->offset);
}

/* The lowest offset where size bytes fit between blocks sorted by offset. */
static int64_t
lowest_gap (const GArray *sorted, int64_t size)
{
  int64_t at = 0;
  for (guint i = 0; i < sorted->len; i++)
    {
      const Block *b = &g_array_index (sorted, Block, i);
      if (b->offset - at >= size)
        break;
      at = MAX (at, b->offset + b->size);
    }
  return at;
}

/* First fit: a new live block at the lowest offset where it fits. */
static int64_t
first_fit (GArray *live, int64_t size)
{
  int64_t at = lowest_gap (live, size);
  Block nb = { at, size };
  g_array_append_val (live, nb);
  g_array_sort (live, cmp_block);
  return at;
}

static void
release (GArray *live, int64_t offset)
{
  for (guint i = 0; i < live->len; i++)
    if (g_array_index (live, Block, i).offset == offset)
      {
        g_array_remove_index (live, i);
        return;
      }
}

/* Device memory: every input and intermediate but the host ones. */
static bool
in_arena (const Buffer *b)
{
  return (b->kind == BUF_TEMP && !b->host) || b->kind == BUF_INPUT;
}

typedef struct {
  int     buf;
  int64_t size;
  int     first, last;   /* inputs: first = -1 */
} Lifetime;

/* Largest first; of equal sizes, the longer lifetime first. */
static int
cmp_size_long (gconstpointer a, gconstpointer b)
{
  const Lifetime *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return (y->last - y->first) - (x->last - x->first);
}

/* Largest first; of equal sizes, the earlier first. Many tensors of a
 * network share one size (every activation of a ResNet stage); placed in
 * time order they stack like first fit does within the size, where longest
 * first leaves holes a later one of the same size cannot use (resnet_stack
 * training step, batch 16, swapped to a 39 MiB budget: planned peak 38.4
 * MiB; arena 49.0 MiB longest first, 45.0 MiB first fit, 38.4 MiB
 * earliest first). */
static int
cmp_size_early (gconstpointer a, gconstpointer b)
{
  const Lifetime *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return (x->first > y->first) - (x->first < y->first);
}

/* Offsets in the order cmp sorts lt, each at the lowest address free over
 * its whole lifetime (the "greedy by size" plan of TFLite's memory
 * planner). First fit in time order fragments when a small tensor freed
 * late sits below a large hole; placing the large ones first usually lands
 * within a few percent of the peak. Quadratic: used up to GREEDY_MAX
 * buffers. Returns the arena size, offsets in out[] (per Lifetime, in lt's
 * sorted order). */
#define GREEDY_MAX 20000
static int64_t
greedy_by_size (GArray *lt, GCompareFunc cmp, int64_t *out)
{
  g_array_sort (lt, cmp);
  int n = (int) lt->len;
  int64_t arena = 0;
  g_autoptr (GArray) busy = g_array_new (FALSE, FALSE, sizeof (Block));
  for (int i = 0; i < n; i++)
    {
      const Lifetime *x = &g_array_index (lt, Lifetime, i);
      g_array_set_size (busy, 0);
      for (int j = 0; j < i; j++)
        {
          const Lifetime *y = &g_array_index (lt, Lifetime, j);
          if (y->first <= x->last && x->first <= y->last)
            g_array_append_val (busy, ((Block) { out[j], y->size }));
        }
      g_array_sort (busy, cmp_block);
      out[i] = lowest_gap (busy, x->size);
      arena = MAX (arena, out[i] + x->size);
    }
  return arena;
}

/* Replaces the first-fit offsets by greedy-by-size ones (either tie-break)
 * when that makes the arena smaller. */
static void
pack_arena (PlExecutable *e)
{
  g_autoptr (GArray) lt = g_array_new (FALSE, FALSE, sizeof (Lifetime));
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = pl_runtime_buf (e, (int) i);
      if ((b->kind != BUF_TEMP && b->kind != BUF_INPUT) || b->last < 0 || b->offset < 0 || !in_arena (b))
        continue;
      if (b->kind == BUF_TEMP && b->first < 0)
        continue;
      Lifetime l = { (int) i, (b->bytes + 63) & ~(int64_t) 63, b->kind == BUF_INPUT ? -1 : b->first, b->last };
      g_array_append_val (lt, l);
    }
  if (lt->len == 0 || lt->len > GREEDY_MAX)
    return;
  const GCompareFunc orders[] = { cmp_size_long, cmp_size_early };
  g_autofree int64_t *off = g_new (int64_t, lt->len);
  for (size_t k = 0; k < G_N_ELEMENTS (orders); k++)
    {
      int64_t arena = greedy_by_size (lt, orders[k], off);
      if (arena >= e->arena_bytes)
        continue;
      for (guint i = 0; i < lt->len; i++)
        pl_runtime_buf (e, g_array_index (lt, Lifetime, i).buf)->offset = off[i];
      e->arena_bytes = arena;
    }
}

/* Every buffer's lifetime (first, last) over the steps, from scratch: roots
 * over all their aliases, graph inputs from step 0, graph outputs past the
 * end (n_steps); the kernel workspace of the largest step. */
static void
lifetimes (PlExecutable *e)
{
  int n_steps = (int) e->steps->len;
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = pl_runtime_buf (e, (int) i);
      b->first = b->kind == BUF_INPUT ? 0 : -1;
      b->last = -1;
    }
  e->workspace_bytes = 0;
  for (int s = 0; s < n_steps; s++)
    {
      Step *st = pl_runtime_step (e, s);
      int extra[4] = { st->lib_buf, st->col_buf, st->scratch_buf, st->pack_buf };
      for (guint k = 0; k < st->plan->inputs->len + 1; k++)
        {
          int b = k < st->plan->inputs->len ? st->in_bufs[k] : st->pack_src;
          if (b >= 0)
            {
              Buffer *r = pl_runtime_buf (e, pl_runtime_root (e, b));
              r->last = MAX (r->last, s);
            }
        }
      for (guint k = 0; k < st->plan->outputs->len; k++)
        if (st->out_bufs[k] >= 0)
          {
            Buffer *r = pl_runtime_buf (e, pl_runtime_root (e, st->out_bufs[k]));
            if (r->first < 0)
              r->first = s;
            r->last = MAX (r->last, s);
          }
      int64_t ws = 0;
      for (int k = 0; k < 4; k++)
        if (extra[k] >= 0)
          {
            pl_runtime_buf (e, extra[k])->first = pl_runtime_buf (e, extra[k])->last = s;
            ws += pl_runtime_buf (e, extra[k])->bytes;
          }
      e->workspace_bytes = MAX (e->workspace_bytes, ws);
    }
  for (guint i = 0; i < e->g->outputs->len; i++)
    {
      int b = e->output_bufs[i];
      if (b >= 0)
        pl_runtime_buf (e, pl_runtime_root (e, b))->last = n_steps;
    }
}

void
pl_runtime_plan_memory (PlExecutable *e)
{
  int n_steps = (int) e->steps->len;
  lifetimes (e);
  g_autoptr (GArray) live = g_array_new (FALSE, FALSE, sizeof (Block));
  g_autoptr (GArray) host_live = g_array_new (FALSE, FALSE, sizeof (Block));
  int64_t in_use = 0, host_in_use = 0;
  e->arena_bytes = e->peak_bytes = e->host_bytes = e->host_peak_bytes = 0;
  for (int s = -1; s <= n_steps; s++)
    {
      /* allocate what step s makes (s = -1: the inputs) */
      for (guint i = 0; i < e->bufs->len; i++)
        {
          Buffer *b = pl_runtime_buf (e, (int) i);
          bool now = b->kind == BUF_INPUT ? s == -1 : b->first == s;
          if (!now || (b->kind != BUF_TEMP && b->kind != BUF_INPUT) || b->last < 0)
            continue;
          int64_t size = (b->bytes + 63) & ~(int64_t) 63;
          if (b->host)
            {
              host_in_use += b->bytes;
              b->host_offset = first_fit (host_live, size);
              e->host_bytes = MAX (e->host_bytes, b->host_offset + size);
              continue;
            }
          in_use += b->bytes;
          if (in_arena (b))
            {
              b->offset = first_fit (live, size);
              e->arena_bytes = MAX (e->arena_bytes, b->offset + size);
            }
        }
      e->peak_bytes = MAX (e->peak_bytes, in_use);
      e->host_peak_bytes = MAX (e->host_peak_bytes, host_in_use);
      /* free what step s read last */
      for (guint i = 0; i < e->bufs->len; i++)
        {
          Buffer *b = pl_runtime_buf (e, (int) i);
          if ((b->kind != BUF_TEMP && b->kind != BUF_INPUT) || b->last != s || b->last < 0 || (b->kind == BUF_TEMP && b->first < 0))
            continue;
          if (b->host)
            {
              host_in_use -= b->bytes;
              release (host_live, b->host_offset);
              continue;
            }
          in_use -= b->bytes;
          if (b->offset >= 0)
            release (live, b->offset);
        }
    }
  pack_arena (e);
}

/* The arena is the device memory the plan needs: it must fit the budget. */
bool
pl_runtime_check_budget (PlExecutable *e, GError **error)
{
  if (e->device_budget <= 0 || e->arena_bytes <= e->device_budget)
    return true;
  g_autofree char *need = g_format_size_full ((guint64) e->arena_bytes, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *peak = g_format_size_full ((guint64) e->peak_bytes, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *have = g_format_size_full ((guint64) e->device_budget, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *ws = g_format_size_full ((guint64) e->workspace_bytes, G_FORMAT_SIZE_IEC_UNITS);
  if (e->workspace_bytes >= e->device_budget)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC,
                   "needs %s of device memory (arena %" G_GINT64_FORMAT " bytes; planned peak %s), budget is %s "
                   "(%" G_GINT64_FORMAT " bytes): the kernel workspace alone (im2col / library scratch of one "
                   "kernel) takes %s, more than the budget; swapping cannot help", need, e->arena_bytes, peak, have,
                   e->device_budget, ws);
      return false;
    }
  g_set_error (error, PL_ERROR, PL_ERROR_EXEC,
               "needs %s of device memory (arena %" G_GINT64_FORMAT " bytes; planned peak %s, kernel workspace %s "
               "at most), budget is %s (%" G_GINT64_FORMAT " bytes): run the swap pass with "
               "--param swap.budget=%" G_GINT64_FORMAT " --param swap.workspace=%" G_GINT64_FORMAT " (or a "
               "smaller budget) to fit", need, e->arena_bytes, peak, ws, have, e->device_budget, e->device_budget,
               e->workspace_bytes);
  return false;
}

/* --- in-place sharing ----------------------------------------------------------------- */

/* The buffer v was given (-1: none, or a constant not read yet). */
static int
lookup_buffer (PlExecutable *e, const PlValue *v)
{
  return v ? GPOINTER_TO_INT (g_hash_table_lookup (e->buf_of, v)) - 1 : -1;
}

/* Whether step st (plan p) may store output slot q over root buffer r: a
 * fallback computes on copies of its inputs; a loop must read every slot
 * holding r only where it writes q. */
static bool
overwrites_root (PlExecutable *e, const Step *st, int r, int q)
{
  const PlKernelPlan *p = st->plan;
  if (p->kind == PL_PLAN_FALLBACK)
    return true;
  for (guint i = 0; i < p->inputs->len; i++)
    if (st->in_bufs[i] >= 0 && pl_runtime_root (e, st->in_bufs[i]) == r && !pl_kernel_plan_overwrites (p, (int) i, q))
      return false;
  return true;
}

/* Output j of step s's node into the memory of its input root r: the
 * output's buffer becomes an alias of r (one place in the arena, one
 * lifetime from r's first step to the output's last), the loop's two slots
 * lose restrict, and the kernel's note says so. false when the step's plan
 * does not allow it. */
static bool
share_buffer (PlExecutable *e, int s, int j, int k, int r)
{
  Step *st = pl_runtime_step (e, s);
  const PlNode *node = st->node;
  int ob = lookup_buffer (e, node->outputs[j]);
  Buffer *o = ob >= 0 ? pl_runtime_buf (e, ob) : NULL;
  if (!o || o->kind != BUF_TEMP || o->host || o->first != s)
    return false;
  int q = -1;
  for (guint k2 = 0; k2 < st->plan->outputs->len && q < 0; k2++)
    if (st->out_bufs[k2] == ob)
      q = (int) k2;
  if (q < 0 || !overwrites_root (e, st, r, q))
    return false;
  o->kind = BUF_ALIAS;
  o->alias_of = r;
  pl_runtime_buf (e, r)->last = MAX (pl_runtime_buf (e, r)->last, o->last);
  for (guint i = 0; st->plan->kind == PL_PLAN_LOOP && i < st->plan->inputs->len; i++)
    if (st->in_bufs[i] >= 0 && pl_runtime_root (e, st->in_bufs[i]) == r)
      pl_kernel_plan_share (st->plan, (int) i, q);
  Entry *en = &g_array_index (e->entries, Entry, st->entry);
  g_autofree char *what = node->n_outputs > 1 ? g_strdup_printf ("%s in place over %s", node->outputs[j]->name,
                                                                 node->inputs[k]->name)
                                              : g_strdup_printf ("in place over %s", node->inputs[k]->name);
  char *note = en->note ? g_strdup_printf ("%s; %s", en->note, what) : g_strdup (what);
  g_free (en->note);
  en->note = note;
  return true;
}

/* In-place sharing (DESIGN.md §1.5's floor; XLA's buffer assignment,
 * TFLite, PyTorch's in-place ops): the one kernel of an elementwise node
 * stores an output in the buffer of an input it reads for the last time,
 * by pl_in_place_input — the rule core/schedule.c's memory profile follows
 * too, so the planned peak is this plan's — and when its plan allows it
 * (overwrites_root). Runs before code generation (restrict) and before
 * the memory plan, in step order, so chains share one buffer. */
void
pl_runtime_share_in_place (PlExecutable *e)
{
  lifetimes (e);
  for (int s = 0; s < (int) e->steps->len; s++)
    {
      Step *st = pl_runtime_step (e, s);
      const PlNode *node = st->node;
      const Entry *en = &g_array_index (e->entries, Entry, st->entry);
      if (en->n_steps != 1 || node->graph != e->g || st->copy || st->convert || node->n_inputs == 0 ||
          (st->plan->kind != PL_PLAN_LOOP && st->plan->kind != PL_PLAN_FALLBACK))
        continue;
      /* dies: the input's memory is an intermediate's, last read here (views of it included) */
      g_autofree bool *dies = g_new0 (bool, node->n_inputs);
      g_autofree int *roots = g_new0 (int, node->n_inputs);
      for (int k = 0; k < node->n_inputs; k++)
        {
          int b = lookup_buffer (e, node->inputs[k]);
          roots[k] = b >= 0 ? pl_runtime_root (e, b) : -1;
          Buffer *r = roots[k] >= 0 ? pl_runtime_buf (e, roots[k]) : NULL;
          dies[k] = r && r->kind == BUF_TEMP && !r->host && r->first >= 0 && r->first < s && r->last == s;
        }
      for (int j = 0; j < node->n_outputs; j++)
        {
          int k = pl_in_place_input (node, j, dies);
          if (k >= 0)
            share_buffer (e, s, j, k, roots[k]);
        }
    }
}
