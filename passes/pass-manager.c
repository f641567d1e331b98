/* pass-manager.c — applies pipelines of passes and keeps the history.
 *
 * Each step: copy the previous version, run the pass on the copy, verify,
 * compute statistics and the diff, and optionally check numerically against
 * the previous version with the reference interpreter. The input graph is
 * never modified. */
#define G_LOG_DOMAIN "passlab"
#include "pass-manager.h"

#include "interp.h"

#include <math.h>
#include <string.h>

void
pl_run_options_init (PlRunOptions *o)
{
  *o = (PlRunOptions) { .check = false, .seed = 1, .tolerance = 1e-4, .sym_size = 1 };
}

/* --- pipelines ------------------------------------------------------------------- */

PlPipeline *
pl_pipeline_new (void)
{
  PlPipeline *p = g_new0 (PlPipeline, 1);
  p->entries = g_ptr_array_new_with_free_func ((GDestroyNotify) pl_pass_args_free);
  return p;
}

void
pl_pipeline_free (PlPipeline *p)
{
  if (!p)
    return;
  g_ptr_array_free (p->entries, TRUE);
  g_free (p);
}

void
pl_pipeline_append (PlPipeline *p, PlPassArgs *args)
{
  g_ptr_array_add (p->entries, args);
}

/* Splits spec at the commas outside braces; NULL with *error on an
 * unbalanced brace. */
static GPtrArray *
split_entries (const char *spec, GError **error)
{
  g_autoptr (GPtrArray) out = g_ptr_array_new_with_free_func (g_free);
  int depth = 0;
  const char *start = spec;
  for (const char *c = spec;; c++)
    {
      if (*c == '{' && ++depth > 1)
        break;
      if (*c == '}' && --depth < 0)
        break;
      if (*c == '\0' && depth != 0)
        break;
      if ((*c == ',' && depth == 0) || *c == '\0')
        {
          g_ptr_array_add (out, g_strstrip (g_strndup (start, c - start)));
          if (!*c)
            return g_steal_pointer (&out);
          start = c + 1;
        }
    }
  g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "pipeline '%s': unbalanced '{' '}' (PASS{key=value ...})", spec);
  return NULL;
}

PlPipeline *
pl_pipeline_parse (const char *spec, GError **error)
{
  g_autoptr (PlPipeline) p = pl_pipeline_new ();
  g_autoptr (GPtrArray) entries = split_entries (spec, error);
  if (!entries)
    return NULL;
  for (guint i = 0; i < entries->len; i++)
    {
      char *name = entries->pdata[i];
      char *brace = strchr (name, '{');
      g_auto (GStrv) settings = NULL;
      if (brace)
        {
          char *close = strrchr (brace, '}');
          if (!close || close[1])
            {
              g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "'%s': expected PASS{key=value ...}", name);
              return NULL;
            }
          *close = '\0';
          settings = g_strsplit_set (brace + 1, " \t;", -1);
          *brace = '\0';
          g_strstrip (name);
        }
      if (!*name)
        continue;
      const PlPass *pass = pl_pass_find (name);
      if (!pass)
        {
          g_autoptr (GPtrArray) all = pl_pass_list ();
          g_autoptr (GString) known = g_string_new (NULL);
          for (guint k = 0; k < all->len; k++)
            g_string_append_printf (known, "%s%s", k ? ", " : "", ((PlPass *) all->pdata[k])->name);
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "unknown pass '%s' (known: %s)", name, known->str);
          return NULL;
        }
      PlPassArgs *args = pl_pass_args_new (pass);
      pl_pipeline_append (p, args);
      for (int k = 0; settings && settings[k]; k++)
        {
          if (!*settings[k])
            continue;
          char *eq = strchr (settings[k], '=');
          if (!eq)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "%s{...}: '%s' is not key=value", name, settings[k]);
              return NULL;
            }
          *eq = '\0';
          if (!pl_pass_args_set (args, settings[k], eq + 1, error))
            return NULL;
        }
    }
  return g_steal_pointer (&p);
}

bool
pl_pipeline_set_param (PlPipeline *p, const char *assignment, GError **error)
{
  const char *eq = strchr (assignment, '=');
  const char *dot = eq ? memchr (assignment, '.', eq - assignment) : NULL;
  if (!eq || !dot)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "'%s': expected PASS.KEY=VALUE", assignment);
      return false;
    }
  g_autofree char *pass = g_strndup (assignment, dot - assignment);
  g_autofree char *key = g_strndup (dot + 1, eq - dot - 1);
  bool found = false;
  for (guint i = 0; i < p->entries->len; i++)
    {
      PlPassArgs *args = p->entries->pdata[i];
      if (strcmp (pl_pass_args_pass (args)->name, pass) != 0)
        continue;
      if (!pl_pass_args_set (args, key, eq + 1, error))
        return false;
      found = true;
    }
  if (!found)
    g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "'%s': pass '%s' is not in the pipeline", assignment, pass);
  return found;
}

/* --- history ---------------------------------------------------------------------- */

static void
step_free (PlStep *s)
{
  g_free (s->pass_name);
  g_free (s->args_text);
  pl_graph_free (s->graph);
  pl_graph_diff_free (s->diff);
  g_free (s->report);
  pl_pass_report_free (s->counters);
  g_free (s->output_errors);
  g_free (s->check_message);
  g_free (s);
}

PlHistory *
pl_history_new (const PlGraph *input, const PlRunOptions *options)
{
  PlRunOptions defaults;
  if (!options)
    pl_run_options_init (&defaults), options = &defaults;
  PlHistory *h = g_new0 (PlHistory, 1);
  h->steps = g_ptr_array_new_with_free_func ((GDestroyNotify) step_free);
  PlStep *s0 = g_new0 (PlStep, 1);
  s0->graph = pl_graph_copy (input);
  s0->report = g_strdup ("");
  pl_graph_stats (s0->graph, options->sym_size, &s0->stats);
  g_ptr_array_add (h->steps, s0);
  return h;
}

void
pl_history_free (PlHistory *h)
{
  if (!h)
    return;
  g_ptr_array_free (h->steps, TRUE);
  g_free (h->error);
  g_free (h);
}

PlStep *
pl_history_step (const PlHistory *h, int i)
{
  g_return_val_if_fail (i >= 0 && (guint) i < h->steps->len, NULL);
  return h->steps->pdata[i];
}

int
pl_history_n_steps (const PlHistory *h)
{
  return (int) h->steps->len;
}

/* Index of the value named like v among g's outputs, or -1. */
static int
find_output (const PlGraph *g, const PlValue *v)
{
  for (guint i = 0; i < g->outputs->len; i++)
    if (strcmp (((PlValue *) g->outputs->pdata[i])->name, v->name) == 0)
      return (int) i;
  return -1;
}

bool
pl_check_graphs (const PlGraph *before, const PlGraph *after, guint32 seed, int64_t sym_size,
                 double *errors, GError **error)
{
  int n_out = (int) before->outputs->len;
  int n_in = (int) before->inputs->len;
  /* Inputs must correspond one to one by name; outputs are matched by name
   * (falling back to position), and outputs only `after` has (a training
   * step's gradients) are not compared. */
  bool same_inputs = after->inputs->len == before->inputs->len;
  for (int i = 0; same_inputs && i < n_in; i++)
    same_inputs = strcmp (((PlValue *) before->inputs->pdata[i])->name,
                          ((PlValue *) after->inputs->pdata[i])->name) == 0;
  if (!same_inputs)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "the versions have different graph inputs");
      return false;
    }
  g_autofree int *match = g_new (int, MAX (n_out, 1));
  for (int i = 0; i < n_out; i++)
    {
      match[i] = find_output (after, before->outputs->pdata[i]);
      if (match[i] < 0 && (guint) i < after->outputs->len)
        match[i] = i;
      if (match[i] < 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "output '%s' is gone",
                       ((PlValue *) before->outputs->pdata[i])->name);
          return false;
        }
    }
  PlTensor **inputs = pl_random_inputs (before, seed, sym_size, error);
  if (!inputs)
    return false;
  bool ok = false;
  int n_after = (int) after->outputs->len;
  PlTensor **a = pl_interp_run (before, inputs, NULL, error);
  PlTensor **b = a ? pl_interp_run (after, inputs, NULL, error) : NULL;
  if (b)
    {
      for (int i = 0; i < n_out; i++)
        {
          /* Errors relative to the output's scale (its largest magnitude):
           * a meaning-changing rewrite shows as O(1), while float32
           * rounding of values near zero stays near machine epsilon. */
          PlTensor *x = b[match[i]], *y = a[i];
          double scale = 0;
          for (int64_t k = 0; k < y->numel; k++)
            {
              double v = fabs (pl_tensor_get_f64 (y, k));
              if (isfinite (v) && v > scale)
                scale = v;
            }
          if (x->dtype != y->dtype)
            errors[i] = INFINITY;
          else
            errors[i] = pl_tensor_max_rel_error (x, y, MAX (scale, 1e-6));
        }
      ok = true;
    }
  pl_interp_free_outputs (a, a ? n_out : 0);
  pl_interp_free_outputs (b, b ? n_after : 0);
  pl_interp_free_outputs (inputs, n_in);
  return ok;
}

/* Runs the numerical check of step s against prev and records the result. */
static void
check_step (PlStep *s, const PlStep *prev, const PlRunOptions *options)
{
  g_autoptr (GError) error = NULL;
  s->checked = true;
  s->n_outputs = (int) prev->graph->outputs->len;
  s->output_errors = g_new0 (double, MAX (s->n_outputs, 1));
  if (!pl_check_graphs (prev->graph, s->graph, options->seed, options->sym_size, s->output_errors, &error))
    {
      s->check_failed = true;
      s->max_rel_error = INFINITY;
      s->check_message = g_strdup_printf ("pass %s: the check could not run: %s", s->pass_name, error->message);
      return;
    }
  for (int i = 0; i < s->n_outputs; i++)
    if (!(s->output_errors[i] <= s->max_rel_error))
      s->max_rel_error = s->output_errors[i];
  if (!(s->max_rel_error <= options->tolerance))
    {
      s->check_failed = true;
      int worst = 0;
      for (int i = 1; i < s->n_outputs; i++)
        if (!(s->output_errors[i] <= s->output_errors[worst]))
          worst = i;
      s->check_message = g_strdup_printf ("pass %s changed output '%s' by a relative error of %.3g (tolerance %.3g)",
                                          s->pass_name, ((PlValue *) prev->graph->outputs->pdata[worst])->name,
                                          s->max_rel_error, options->tolerance);
    }
}

bool
pl_history_apply (PlHistory *h, const PlPassArgs *args, const PlRunOptions *options, GError **error)
{
  PlRunOptions defaults;
  if (!options)
    pl_run_options_init (&defaults), options = &defaults;
  const PlPass *pass = pl_pass_args_pass (args);
  const PlStep *prev = h->steps->pdata[h->steps->len - 1];
  PlStep *s = g_new0 (PlStep, 1);
  s->pass_name = g_strdup (pass->name);
  s->args_text = pl_pass_args_describe (args);
  s->graph = pl_graph_copy (prev->graph);
  s->counters = pl_pass_report_new ();

  GError *local = NULL;
  gint64 t0 = g_get_monotonic_time ();
  bool ok = pass->run (s->graph, args, s->counters, pass->user_data, &local);
  s->time_ms = (g_get_monotonic_time () - t0) / 1000.0;
  if (ok && !pl_graph_verify (s->graph, &local))
    ok = false, g_prefix_error (&local, "the graph does not verify after pass %s: ", pass->name);
  else if (!ok)
    g_prefix_error (&local, "pass %s failed: ", pass->name);
  if (!ok)
    {
      g_free (h->error);
      h->error = g_strdup (local->message);
      g_propagate_error (error, local);
      step_free (s);
      return false;
    }
  s->report = g_strdup (s->counters->text->str);
  s->diff = pl_graph_diff (prev->graph, s->graph);
  /* A pass may say it changed something; the diff is the ground truth. */
  s->changed = !pl_graph_diff_empty (s->diff) || prev->graph->outputs->len != s->graph->outputs->len;
  for (guint i = 0; !s->changed && i < s->graph->outputs->len; i++)
    s->changed = ((PlValue *) s->graph->outputs->pdata[i])->id != ((PlValue *) prev->graph->outputs->pdata[i])->id;
  pl_graph_stats (s->graph, options->sym_size, &s->stats);
  if (options->check && s->changed)
    check_step (s, prev, options);
  g_ptr_array_add (h->steps, s);
  if (s->check_failed && options->stop_on_check_failure)
    {
      g_free (h->error);
      h->error = g_strdup (s->check_message);
      g_set_error_literal (error, PL_ERROR, PL_ERROR_EXEC, s->check_message);
      return false;
    }
  return true;
}

PlHistory *
pl_pipeline_run (const PlGraph *input, const PlPipeline *p, const PlRunOptions *options, GError **error)
{
  PlHistory *h = pl_history_new (input, options);
  for (guint i = 0; i < p->entries->len; i++)
    if (!pl_history_apply (h, p->entries->pdata[i], options, error))
      break;
  return h;
}

/* --- JSON ------------------------------------------------------------------------- */

static void
json_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  for (const char *c = s ? s : ""; *c; c++)
    {
      if (*c == '"' || *c == '\\')
        g_string_append_printf (out, "\\%c", *c);
      else if ((unsigned char) *c < 0x20)
        g_string_append_printf (out, "\\u%04x", *c);
      else
        g_string_append_c (out, *c);
    }
  g_string_append_c (out, '"');
}

static void
json_number (GString *out, double v)
{
  if (isfinite (v))
    g_string_append_printf (out, "%.6g", v);
  else
    g_string_append (out, "null");
}

char *
pl_history_to_json (const PlHistory *h)
{
  GString *out = g_string_new ("{\"steps\":[");
  for (guint i = 0; i < h->steps->len; i++)
    {
      const PlStep *s = h->steps->pdata[i];
      g_string_append (out, i ? ",\n  {" : "\n  {");
      g_string_append (out, "\"pass\":");
      if (s->pass_name)
        json_string (out, s->pass_name);
      else
        g_string_append (out, "null");
      g_string_append (out, ",\"params\":");
      json_string (out, s->args_text);
      g_string_append_printf (out, ",\"changed\":%s,\"nodes\":%" G_GINT64_FORMAT ",\"kernels\":%" G_GINT64_FORMAT
                              ",\"reshape_bytes\":%" G_GINT64_FORMAT ",\"bytes_moved\":%" G_GINT64_FORMAT
                              ",\"flops\":%" G_GINT64_FORMAT ",\"peak_bytes\":%" G_GINT64_FORMAT ",\"time_ms\":",
                              s->changed ? "true" : "false", s->stats.nodes, s->stats.kernels, s->stats.reshape_bytes,
                              s->stats.bytes_moved, s->stats.flops, s->stats.peak_bytes);
      json_number (out, s->time_ms);
      g_string_append (out, ",\"max_rel_error\":");
      if (s->checked)
        json_number (out, s->max_rel_error);
      else
        g_string_append (out, "null");
      g_string_append_printf (out, ",\"check_failed\":%s", s->check_failed ? "true" : "false");
      if (s->diff)
        g_string_append_printf (out, ",\"added\":%u,\"removed\":%u,\"changed_nodes\":%u", s->diff->added->len,
                                s->diff->removed->len, s->diff->changed->len);
      g_string_append (out, ",\"report\":");
      json_string (out, s->report);
      g_string_append_c (out, '}');
    }
  g_string_append (out, "\n]");
  if (h->error)
    {
      g_string_append (out, ",\"error\":");
      json_string (out, h->error);
    }
  g_string_append (out, "}\n");
  return g_string_free (out, FALSE);
}
