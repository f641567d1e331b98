/* fuzz.c — the pass fuzzer (see fuzz.h).
 *
 * One "trial" runs a graph through the pipeline and classifies the outcome
 * (ok, or which kind of failure in which pass). With o->isolate, a trial runs
 * in a forked child (core/isolate.h) that inherits the graph and the pass
 * registry through fork, writes a record to a pipe before each pass and one
 * with the outcome at the end; a child that dies by a signal is a crash of
 * the pass it last started (one that runs past timeout_s: a timeout).
 *
 * Shrinking is greedy delta debugging on the graph: drop an output; replace
 * a node's output by a new graph input of the same type (cutting off what
 * only fed it); replace it by one of the node's own inputs of the same type
 * (bypassing the node); after each edit, dead code and unused inputs go. An
 * edit is kept when the trial still fails with the same kind in the same
 * pass. A trial also requires the graph before the passes to run and give
 * finite outputs, so shrinking cannot wander into graphs that fail for
 * another reason (a Log that now sees negative inputs).
 *
 * Rounding: the check runs in f32, and the reference interpreter computes
 * each op in double and rounds once, so a correct rewrite that stores more
 * intermediates in f32 (a decomposed LayerNormalization, a reduction split
 * in two) can exceed 1e-4 where an output nearly cancels (the check's floor
 * is 1e-3, so an absolute error of 1e-7 already fails). A check failure is
 * therefore confirmed in f64: both versions are converted to f64 and checked
 * again; if they agree there, the difference was f32 rounding, not a change
 * of meaning, and the run goes on (counted in n_rounding).
 */
#define G_LOG_DOMAIN "passlab"
#include "fuzz.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "interp.h"
#include "isolate.h"
#include "rewrite.h"
#include "text-format.h"

#define MAX_MESSAGE 4000

static const char *const kind_names[] = {
  "ok", "bad graph", "pass error", "verifier", "check", "crash", "timeout", "backend",
};

const char *
pl_fuzz_kind_name (PlFuzzKind kind)
{
  return (guint) kind < G_N_ELEMENTS (kind_names) ? kind_names[kind] : "?";
}

void
pl_fuzz_options_init (PlFuzzOptions *o)
{
  *o = (PlFuzzOptions) {
    .seed = 1, .n_graphs = 100, .tolerance = 1e-4, .shrink = true, .isolate = true,
    .timeout_s = 60, .max_trials = 500,
  };
  pl_random_graph_options_init (&o->graph);
}

static void
failure_free (PlFuzzFailure *f)
{
  g_free (f->pass);
  g_free (f->message);
  g_free (f->path);
  g_free (f);
}

void
pl_fuzz_result_clear (PlFuzzResult *r)
{
  if (r->failures)
    g_ptr_array_unref (r->failures);
  *r = (PlFuzzResult) { 0 };
}

/* --- one trial ------------------------------------------------------------------ */

typedef struct {
  PlFuzzKind kind;
  int        pass_index;   /* pipeline entry that failed; -1: none */
  char      *message;
  int        n_rounding;   /* check failures that f64 showed to be rounding */
} Outcome;

static void
outcome_clear (Outcome *out)
{
  g_clear_pointer (&out->message, g_free);
}

/* What a child writes: a record with type START before each pass, then one
 * RESULT followed by message_len bytes. */
enum { RECORD_START = 1, RECORD_RESULT = 2 };
typedef struct {
  int type;
  int kind;
  int pass_index;
  int n_rounding;
  int message_len;
} Record;

static Outcome
outcome (PlFuzzKind kind, int pass_index, char *message)
{
  return (Outcome) { kind, pass_index, message, 0 };
}

/* The graph before any pass must verify, run and give finite outputs. */
static bool
check_input_graph (const PlGraph *g, guint32 seed, char **message)
{
  g_autoptr (GError) error = NULL;
  if (!pl_graph_verify (g, &error))
    {
      *message = g_strdup_printf ("the graph does not verify: %s", error->message);
      return false;
    }
  PlTensor **inputs = pl_random_inputs (g, seed, 1, &error);
  PlTensor **outputs = inputs ? pl_interp_run (g, inputs, NULL, &error) : NULL;
  bool ok = outputs != NULL;
  if (!ok)
    *message = g_strdup_printf ("the graph does not run: %s", error->message);
  for (guint i = 0; ok && i < g->outputs->len; i++)
    for (int64_t k = 0; ok && k < outputs[i]->numel; k++)
      if (!isfinite (pl_tensor_get_f64 (outputs[i], k)))
        {
          *message = g_strdup_printf ("output '%s' of the graph is not finite",
                                      ((PlValue *) g->outputs->pdata[i])->name);
          ok = false;
        }
  pl_interp_free_outputs (outputs, outputs ? (int) g->outputs->len : 0);
  pl_interp_free_outputs (inputs, inputs ? (int) g->inputs->len : 0);
  return ok;
}

/* Converts every f32 value of g (inputs, constants, tensor attributes, fusion
 * bodies) to f64 and infers again. The graph is a private copy; constants
 * get new data, so their fields are set directly. */
static bool
graph_to_f64 (PlGraph *g, GError **error)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      if (v->dtype != PL_DTYPE_F32 || v->producer)
        continue;
      if (v->constant)
        {
          PlTensor *t = pl_tensor_cast (v->constant, PL_DTYPE_F64);
          pl_tensor_unref (v->constant);
          v->constant = t;
        }
      v->dtype = PL_DTYPE_F64;
    }
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *n = g->nodes->pdata[i];
      for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].type == PL_ATTR_TENSOR && n->attrs[a].t->dtype == PL_DTYPE_F32)
          {
            g_autoptr (PlTensor) t = pl_tensor_cast (n->attrs[a].t, PL_DTYPE_F64);
            g_autofree char *name = g_strdup (n->attrs[a].name);
            pl_node_set_attr_tensor (n, name, t);
          }
      if (n->body && !graph_to_f64 (n->body, error))
        return false;
    }
  return pl_graph_infer_shapes (g, error);
}

/* Whether before and after, which differ beyond tolerance in f32, agree in f64. */
static bool
agree_in_f64 (const PlGraph *before, const PlGraph *after, guint32 seed, double tolerance)
{
  g_autoptr (PlGraph) a = pl_graph_copy (before);
  g_autoptr (PlGraph) b = pl_graph_copy (after);
  if (!graph_to_f64 (a, NULL) || !graph_to_f64 (b, NULL))
    return false;
  g_autofree double *errors = g_new0 (double, MAX (a->outputs->len, 1));
  if (!pl_check_graphs (a, b, seed, 1, errors, NULL))
    return false;
  for (guint i = 0; i < a->outputs->len; i++)
    if (!(errors[i] <= tolerance))
      return false;
  return true;
}

/* Runs the trial here. progress_fd >= 0 gets a START record before each pass. */
static Outcome
trial_here (const PlGraph *g, const PlPipeline *p, const PlFuzzOptions *o, guint32 seed, int progress_fd)
{
  char *message = NULL;
  if (!check_input_graph (g, seed, &message))
    return outcome (PL_FUZZ_BAD_GRAPH, -1, message);

  PlRunOptions ro;
  pl_run_options_init (&ro);
  ro.check = true;
  ro.seed = seed;
  ro.tolerance = o->tolerance;
  g_autoptr (PlHistory) h = pl_history_new (g, &ro);
  int n_rounding = 0;
  for (guint i = 0; i < p->entries->len; i++)
    {
      if (progress_fd >= 0)
        pl_isolated_write (progress_fd, &(Record) { RECORD_START, 0, (int) i, 0, 0 }, sizeof (Record));
      g_autoptr (GError) error = NULL;
      Outcome out = outcome (PL_FUZZ_OK, -1, NULL);
      if (!pl_history_apply (h, p->entries->pdata[i], &ro, &error))
        {
          bool verify = g_str_has_prefix (error->message, "the graph does not verify");
          out = outcome (verify ? PL_FUZZ_VERIFY : PL_FUZZ_PASS_ERROR, (int) i, g_strdup (error->message));
        }
      else
        {
          PlStep *prev = h->steps->pdata[h->steps->len - 2], *last = h->steps->pdata[h->steps->len - 1];
          if (last->check_failed && agree_in_f64 (prev->graph, last->graph, seed, o->tolerance))
            n_rounding++;
          else if (last->check_failed)
            out = outcome (PL_FUZZ_CHECK, (int) i, g_strdup (last->check_message));
        }
      if (out.kind != PL_FUZZ_OK)
        {
          out.n_rounding = n_rounding;
          return out;
        }
    }
  if (o->backend)
    {
      /* the backend stage: entry index p->entries->len */
      if (progress_fd >= 0)
        pl_isolated_write (progress_fd, &(Record) { RECORD_START, 0, (int) p->entries->len, 0, 0 }, sizeof (Record));
      PlStep *last = h->steps->pdata[h->steps->len - 1];
      char *differs = o->backend (g, last->graph, seed, o->tolerance, o->backend_data);
      if (differs)
        {
          Outcome out = outcome (PL_FUZZ_BACKEND, (int) p->entries->len, differs);
          out.n_rounding = n_rounding;
          return out;
        }
    }
  Outcome ok = outcome (PL_FUZZ_OK, -1, NULL);
  ok.n_rounding = n_rounding;
  return ok;
}

typedef struct {
  const PlGraph       *g;
  const PlPipeline    *p;
  const PlFuzzOptions *o;
  guint32              seed;
} TrialArgs;

/* The child: runs the trial, writing START records and then the RESULT. */
static bool
trial_child (int fd, gpointer data)
{
  const TrialArgs *a = data;
  Outcome out = trial_here (a->g, a->p, a->o, a->seed, fd);
  size_t len = out.message ? MIN (strlen (out.message), MAX_MESSAGE) : 0;
  Record r = { RECORD_RESULT, (int) out.kind, out.pass_index, out.n_rounding, (int) len };
  return pl_isolated_write (fd, &r, sizeof r) && pl_isolated_write (fd, out.message, len);
}

static bool
trial_isolated (const PlGraph *g, const PlPipeline *p, const PlFuzzOptions *o, guint32 seed, Outcome *out,
                GError **error)
{
  TrialArgs args = { g, p, o, seed };
  PlIsolatedStatus status;
  g_autoptr (GBytes) bytes = NULL;
  if (!pl_run_isolated (trial_child, &args, o->timeout_s, &bytes, &status, error))
    return false;
  gsize size;
  const guint8 *data = g_bytes_get_data (bytes, &size);

  /* The last pass started, and the result if there is one. */
  int started = -1;
  bool have_result = false;
  for (size_t at = 0; at + sizeof (Record) <= size;)
    {
      Record r;
      memcpy (&r, data + at, sizeof r);
      at += sizeof r;
      if (r.type == RECORD_START)
        started = r.pass_index;
      else if (r.type == RECORD_RESULT)
        {
          size_t len = MIN ((size_t) MAX (r.message_len, 0), size - at);
          *out = outcome ((PlFuzzKind) r.kind, r.pass_index,
                          len > 0 ? g_strndup ((const char *) data + at, len) : NULL);
          out->n_rounding = r.n_rounding;
          have_result = true;
          break;
        }
    }
  if (status.end != PL_ISOLATED_EXITED)
    {
      outcome_clear (out);
      *out = outcome (status.end == PL_ISOLATED_TIMED_OUT ? PL_FUZZ_TIMEOUT : PL_FUZZ_CRASH, started,
                      pl_isolated_status_describe (&status, o->timeout_s));
    }
  else if (!have_result)
    *out = outcome (PL_FUZZ_CRASH, started,
                    g_strdup_printf ("exited with status %d and no result", status.exit_code));
  return true;
}

static bool
trial (const PlGraph *g, const PlPipeline *p, const PlFuzzOptions *o, guint32 seed, Outcome *out, GError **error)
{
  *out = outcome (PL_FUZZ_OK, -1, NULL);
  if (!o->isolate)
    {
      *out = trial_here (g, p, o, seed, -1);
      return true;
    }
  return trial_isolated (g, p, o, seed, out, error);
}

/* --- shrinking --------------------------------------------------------------------- */

typedef struct {
  const PlPipeline    *p;
  const PlFuzzOptions *o;
  guint32              seed;
  PlFuzzKind           kind;        /* the failure to keep */
  int                  pass_index;
  int                  trials;
  char                *message;     /* the smallest graph's failure */
} Shrink;

/* Removes dead nodes, unread constants and unread inputs. */
static void
clean_up (PlGraph *g)
{
  pl_rw_dce (g);
  for (guint i = g->inputs->len; i-- > 0;)
    {
      PlValue *v = g->inputs->pdata[i];
      if (v->n_uses == 0 && !pl_value_is_output (v))
        pl_graph_remove_value (g, v);
    }
}

/* Keeps cand (returning true, freeing *best) if it still fails the same way; else frees cand. */
static bool
try_candidate (Shrink *S, PlGraph **best, PlGraph *cand, GError **error)
{
  clean_up (cand);
  Outcome out;
  bool same = false;
  if (pl_graph_verify (cand, NULL) && cand->nodes->len > 0)
    {
      S->trials++;
      if (!trial (cand, S->p, S->o, S->seed, &out, error))
        {
          pl_graph_free (cand);
          return false;
        }
      same = out.kind == S->kind && out.pass_index == S->pass_index;
      if (same)
        {
          g_free (S->message);
          S->message = g_steal_pointer (&out.message);
        }
      outcome_clear (&out);
    }
  if (!same)
    {
      pl_graph_free (cand);
      return false;
    }
  pl_graph_free (*best);
  *best = cand;
  return true;
}

/* Output k dropped. */
static PlGraph *
edit_drop_output (const PlGraph *g, guint k)
{
  PlGraph *c = pl_graph_copy (g);
  /* graph.h has no removal for outputs; the array is their only record. */
  g_ptr_array_remove_index (c->outputs, k);
  return c;
}

/* Output k replaced by the value with id value_id (what came after it goes). */
static PlGraph *
edit_retarget (const PlGraph *g, guint k, guint32 value_id)
{
  PlGraph *c = pl_graph_copy (g);
  for (guint i = 0; i < c->values->len; i++)
    if (((PlValue *) c->values->pdata[i])->id == value_id)
      pl_graph_set_output (c, (int) k, c->values->pdata[i]);
  return c;
}

/* Output slot of node (by id) replaced by a new graph input of its type. */
static PlGraph *
edit_cut (const PlGraph *g, guint32 node_id, int slot)
{
  PlGraph *c = pl_graph_copy (g);
  PlValue *v = pl_graph_node_by_id (c, node_id)->outputs[slot];
  g_autofree char *old_name = g_strdup (v->name);
  g_autofree char *name = g_strdup_printf ("%s_in", v->name);
  g_autofree char *unique = pl_graph_unique_name (c, name);
  PlValue *in = pl_graph_add_input (c, unique, v->dtype, &v->shape, NULL);
  pl_value_replace_uses (v, in);
  clean_up (c);
  /* The input takes the cut value's name where the node is gone. */
  if (!pl_graph_find_value (c, old_name))
    pl_value_rename (in, old_name, NULL);
  return c;
}

/* Output slot of node replaced by the node's input `input`. */
static PlGraph *
edit_bypass (const PlGraph *g, guint32 node_id, int slot, int input)
{
  PlGraph *c = pl_graph_copy (g);
  PlNode *n = pl_graph_node_by_id (c, node_id);
  pl_value_replace_uses (n->outputs[slot], n->inputs[input]);
  return c;
}

static bool
same_type (const PlValue *a, const PlValue *b)
{
  return a && b && a != b && a->dtype == b->dtype && pl_shape_equal (&a->shape, &b->shape);
}

/* One round over outputs and nodes; true if anything was removed. */
static bool
shrink_round (Shrink *S, PlGraph **best, GError **error)
{
  bool improved = false;
  for (guint k = (*best)->outputs->len; k-- > 0 && (*best)->outputs->len > 1;)
    if (S->trials < S->o->max_trials)
      {
        GError *local = NULL;
        improved |= try_candidate (S, best, edit_drop_output (*best, k), &local);
        if (local)
          return g_propagate_error (error, local), false;
      }

  /* An output replaced by an earlier value, the earliest first: the
   * smallest graphs are tried first. */
  for (guint k = 0; k < (*best)->outputs->len; k++)
    {
      int n;
      g_autofree PlNode **order = pl_graph_topo_order (*best, &n, NULL);
      g_autofree guint32 *ids = g_new (guint32, MAX (n, 1));
      int n_ids = 0;
      for (int i = 0; order && i < n; i++)
        for (int slot = 0; slot < order[i]->n_outputs; slot++)
          {
            PlValue *v = order[i]->outputs[slot];
            if (v && !pl_value_is_output (v))
              ids[n_ids++] = v->id;
            break;   /* first output only: enough, and ids stays n long */
          }
      bool kept = false;
      for (int i = 0; i < n_ids && !kept && S->trials < S->o->max_trials; i++)
        {
          GError *local = NULL;
          kept = try_candidate (S, best, edit_retarget (*best, k, ids[i]), &local);
          if (local)
            return g_propagate_error (error, local), false;
        }
      improved |= kept;
    }

  /* Nodes nearest the outputs first: a cut there removes the most. */
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (*best, &n, NULL);
  if (!order)
    return improved;
  g_autofree guint32 *ids = g_new (guint32, MAX (n, 1));
  for (int i = 0; i < n; i++)
    ids[i] = order[n - 1 - i]->id;
  for (int i = 0; i < n && S->trials < S->o->max_trials; i++)
    {
      PlNode *node = pl_graph_node_by_id (*best, ids[i]);
      for (int slot = 0; node && slot < node->n_outputs; slot++)
        {
          PlValue *v = node->outputs[slot];
          if (!v || (v->n_uses == 0 && !pl_value_is_output (v)))
            continue;
          GError *local = NULL;
          bool kept = try_candidate (S, best, edit_cut (*best, ids[i], slot), &local);
          for (int in = 0; !kept && !local && in < node->n_inputs && S->trials < S->o->max_trials; in++)
            if (same_type (node->inputs[in], v))
              kept = try_candidate (S, best, edit_bypass (*best, ids[i], slot, in), &local);
          if (local)
            return g_propagate_error (error, local), false;
          improved |= kept;
          if (kept)
            break;   /* node is gone or changed: move on */
        }
    }
  return improved;
}

/* The smallest graph found that fails like `failed` did. */
static PlGraph *
shrink (const PlGraph *g, const PlPipeline *p, const PlFuzzOptions *o, guint32 seed, const Outcome *failed,
        char **message, GError **error)
{
  Shrink S = { p, o, seed, failed->kind, failed->pass_index, 0, g_strdup (failed->message) };
  PlGraph *best = pl_graph_copy (g);
  GError *local = NULL;
  while (S.trials < o->max_trials && shrink_round (&S, &best, &local))
    ;
  if (local)
    {
      g_propagate_error (error, local);
      g_free (S.message);
      pl_graph_free (best);
      return NULL;
    }
  *message = S.message;
  return best;
}

/* --- the fuzz loop -------------------------------------------------------------------- */

static PlPipeline *
builtin_pipeline (void)
{
  PlPipeline *p = pl_pipeline_new ();
  g_autoptr (GPtrArray) all = pl_pass_list ();
  for (guint i = 0; i < all->len; i++)
    {
      const PlPass *pass = all->pdata[i];
      if (pass->builtin)
        pl_pipeline_append (p, pl_pass_args_new (pass));
    }
  return p;
}

/* The pipeline up to and including entry last: what a failure there needs. */
static PlPipeline *
pipeline_prefix (const PlPipeline *p, int last)
{
  PlPipeline *q = pl_pipeline_new ();
  for (int i = 0; i <= last && i < (int) p->entries->len; i++)
    pl_pipeline_append (q, pl_pass_args_copy (p->entries->pdata[i]));
  return q;
}

static char *
pipeline_spec (const PlPipeline *p)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < p->entries->len; i++)
    g_string_append_printf (s, "%s%s", i ? "," : "", pl_pass_args_pass (p->entries->pdata[i])->name);
  return g_string_free (s, FALSE);
}

/* Writes g with a comment saying how it fails. */
static bool
write_failure (const PlGraph *g, const PlFuzzFailure *f, const PlPipeline *p, const char *message,
               const char *path, GError **error)
{
  g_autofree char *spec = pipeline_spec (p);
  g_autofree char *text = pl_text_print (g);
  g_autofree char *flat = g_strdup (message ? message : "");
  g_strdelimit (flat, "\r\n", ' ');
  g_autofree char *all = g_strdup_printf ("# passlab-cli fuzz: seed %u, %s failure%s%s\n"
                                          "# pipeline: %s\n# %s\n%s",
                                          f->seed, pl_fuzz_kind_name (f->kind),
                                          !f->pass ? "" : g_str_has_prefix (f->pass, "backend ") ? " in " : " in pass ",
                                          f->pass ? f->pass : "", spec, flat, text);
  return g_file_set_contents (path, all, -1, error);
}

/* Fuzzes one seed; a failure goes to r. */
static bool
fuzz_one (const PlFuzzOptions *o, const PlPipeline *p, guint32 seed, PlFuzzResult *r, GError **error)
{
  PlRandomGraphOptions go = o->graph;
  go.seed = seed;
  g_autoptr (PlGraph) g = pl_random_graph (&go);
  Outcome out;
  if (!trial (g, p, o, seed, &out, error))
    return false;
  r->n_graphs++;
  r->n_rounding += out.n_rounding > 0;
  if (out.kind == PL_FUZZ_OK)
    {
      r->n_passed++;
      return true;
    }

  PlFuzzFailure *f = g_new0 (PlFuzzFailure, 1);
  f->seed = seed;
  f->kind = out.kind;
  if (out.pass_index >= (int) p->entries->len)
    f->pass = g_strdup_printf ("backend %s", o->backend_name ? o->backend_name : "");
  else if (out.pass_index >= 0)
    f->pass = g_strdup (pl_pass_args_pass (p->entries->pdata[out.pass_index])->name);
  f->message = g_strdup (out.message);
  f->n_nodes = f->shrunk_nodes = (int) g->nodes->len;
  r->n_failed++;
  g_ptr_array_add (r->failures, f);

  g_autoptr (PlPipeline) needed = pipeline_prefix (p, out.pass_index);
  g_autoptr (PlGraph) small = NULL;
  g_autofree char *small_message = NULL;
  /* A hang costs timeout_s per trial: not shrunk. */
  if (o->shrink && out.kind != PL_FUZZ_TIMEOUT)
    {
      small = shrink (g, needed, o, seed, &out, &small_message, error);
      if (!small)
        {
          outcome_clear (&out);
          return false;
        }
      f->shrunk_nodes = (int) small->nodes->len;
    }
  bool ok = true;
  if (o->out_dir)
    {
      g_autofree char *base = g_strdup_printf ("fuzz-fail-%u.graph", seed);
      f->path = g_build_filename (o->out_dir, base, NULL);
      ok = write_failure (small ? small : g, f, needed, small ? small_message : out.message, f->path, error);
      if (!ok)
        g_clear_pointer (&f->path, g_free);
    }
  outcome_clear (&out);
  if (o->on_failure)
    o->on_failure (f, o->user_data);
  return ok;
}

bool
pl_fuzz_run (const PlFuzzOptions *o, PlFuzzResult *r, GError **error)
{
  pl_passes_init ();
  *r = (PlFuzzResult) { .failures = g_ptr_array_new_with_free_func ((GDestroyNotify) failure_free) };
  g_autoptr (PlPipeline) p = o->passes ? pl_pipeline_parse (o->passes, error) : builtin_pipeline ();
  if (!p)
    return false;
  if (o->out_dir && g_mkdir_with_parents (o->out_dir, 0755) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s: %s", o->out_dir, g_strerror (errno));
      return false;
    }
  for (int i = 0; i < o->n_graphs; i++)
    if (!fuzz_one (o, p, o->seed + (guint32) i, r, error))
      return false;
  return true;
}
