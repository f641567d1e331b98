/* pass.c — the pass registry, typed pass arguments, and pass reports. */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --- registry ------------------------------------------------------------------ */

static GPtrArray *registry;   /* PlPass*, in registration order */
static GMutex registry_lock;

static const char *const param_type_names[] = { "int", "float", "bool", "string" };

const char *
pl_param_type_name (PlParamType type)
{
  return param_type_names[type];
}

PlPass *
pl_pass_new (const char *name, const char *description, const PlPassParam *params, int n_params,
             PlPassRunFunc run, gpointer user_data, GDestroyNotify destroy)
{
  PlPass *pass = g_new0 (PlPass, 1);
  pass->name = g_strdup (name);
  pass->description = g_strdup (description);
  pass->n_params = n_params;
  pass->params = g_new0 (PlPassParam, MAX (n_params, 1));
  for (int i = 0; i < n_params; i++)
    pass->params[i] = (PlPassParam) {
      .name = g_strdup (params[i].name),
      .type = params[i].type,
      .default_value = g_strdup (params[i].default_value),
      .description = g_strdup (params[i].description),
    };
  pass->run = run;
  pass->user_data = user_data;
  pass->destroy = destroy;
  return pass;
}

void
pl_pass_free (PlPass *pass)
{
  if (!pass)
    return;
  for (int i = 0; i < pass->n_params; i++)
    {
      g_free (pass->params[i].name);
      g_free (pass->params[i].default_value);
      g_free (pass->params[i].description);
    }
  g_free (pass->params);
  if (pass->destroy)
    pass->destroy (pass->user_data);
  g_free (pass->name);
  g_free (pass->description);
  g_free (pass);
}

static int
find_index (const char *name)
{
  for (guint i = 0; registry && i < registry->len; i++)
    if (strcmp (((PlPass *) registry->pdata[i])->name, name) == 0)
      return (int) i;
  return -1;
}


void
pl_pass_register_builtin (PlPass *pass)
{
  pass->builtin = true;
  if (!registry)
    registry = g_ptr_array_new ();
  g_assert (find_index (pass->name) < 0);
  g_ptr_array_add (registry, pass);
}

bool
pl_pass_register (PlPass *pass, GError **error)
{
  pl_passes_init ();
  g_mutex_lock (&registry_lock);
  int i = find_index (pass->name);
  if (i >= 0 && ((PlPass *) registry->pdata[i])->builtin)
    {
      g_mutex_unlock (&registry_lock);
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "'%s' is a built-in pass and cannot be replaced", pass->name);
      pl_pass_free (pass);
      return false;
    }
  if (i >= 0)
    {
      pl_pass_free (registry->pdata[i]);
      registry->pdata[i] = pass;
    }
  else
    g_ptr_array_add (registry, pass);
  g_mutex_unlock (&registry_lock);
  return true;
}

bool
pl_pass_unregister (const char *name)
{
  g_mutex_lock (&registry_lock);
  int i = find_index (name);
  bool ok = i >= 0 && !((PlPass *) registry->pdata[i])->builtin;
  if (ok)
    pl_pass_free (g_ptr_array_steal_index (registry, i));
  g_mutex_unlock (&registry_lock);
  return ok;
}

const PlPass *
pl_pass_find (const char *name)
{
  pl_passes_init ();
  int i = find_index (name);
  return i >= 0 ? registry->pdata[i] : NULL;
}

GPtrArray *
pl_pass_list (void)
{
  pl_passes_init ();
  GPtrArray *list = g_ptr_array_new ();
  for (guint i = 0; i < registry->len; i++)
    g_ptr_array_add (list, registry->pdata[i]);
  return list;
}

/* --- arguments ------------------------------------------------------------------ */

struct _PlPassArgs {
  const PlPass *pass;
  char        **values;   /* one per pass->params entry, as text */
};

PlPassArgs *
pl_pass_args_new (const PlPass *pass)
{
  PlPassArgs *args = g_new0 (PlPassArgs, 1);
  args->pass = pass;
  args->values = g_new0 (char *, MAX (pass->n_params, 1));
  for (int i = 0; i < pass->n_params; i++)
    args->values[i] = g_strdup (pass->params[i].default_value);
  return args;
}

PlPassArgs *
pl_pass_args_copy (const PlPassArgs *args)
{
  PlPassArgs *c = pl_pass_args_new (args->pass);
  for (int i = 0; i < args->pass->n_params; i++)
    {
      g_free (c->values[i]);
      c->values[i] = g_strdup (args->values[i]);
    }
  return c;
}

void
pl_pass_args_free (PlPassArgs *args)
{
  if (!args)
    return;
  for (int i = 0; i < args->pass->n_params; i++)
    g_free (args->values[i]);
  g_free (args->values);
  g_free (args);
}

const PlPass *
pl_pass_args_pass (const PlPassArgs *args)
{
  return args->pass;
}

static int
param_index (const PlPass *pass, const char *name)
{
  for (int i = 0; i < pass->n_params; i++)
    if (strcmp (pass->params[i].name, name) == 0)
      return i;
  return -1;
}

static bool
parse_int (const char *s, int64_t *out)
{
  char *end;
  errno = 0;
  long long v = strtoll (s, &end, 0);
  if (errno || end == s || *end)
    return false;
  *out = v;
  return true;
}

static bool
parse_float (const char *s, double *out)
{
  char *end;
  errno = 0;
  double v = g_ascii_strtod (s, &end);
  if (errno || end == s || *end)
    return false;
  *out = v;
  return true;
}

static bool
parse_bool (const char *s, bool *out)
{
  if (!g_ascii_strcasecmp (s, "true") || !strcmp (s, "1") || !g_ascii_strcasecmp (s, "yes"))
    *out = true;
  else if (!g_ascii_strcasecmp (s, "false") || !strcmp (s, "0") || !g_ascii_strcasecmp (s, "no"))
    *out = false;
  else
    return false;
  return true;
}

bool
pl_pass_args_set (PlPassArgs *args, const char *name, const char *value, GError **error)
{
  const PlPass *pass = args->pass;
  int i = param_index (pass, name);
  if (i < 0)
    {
      g_autoptr (GString) known = g_string_new (NULL);
      for (int k = 0; k < pass->n_params; k++)
        g_string_append_printf (known, "%s%s", k ? ", " : "", pass->params[k].name);
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "%s has no parameter '%s' (it has: %s)", pass->name,
                   name, pass->n_params ? known->str : "none");
      return false;
    }
  int64_t iv;
  double fv;
  bool bv;
  bool ok = true;
  switch (pass->params[i].type)
    {
    case PL_PARAM_INT:    ok = parse_int (value, &iv); break;
    case PL_PARAM_FLOAT:  ok = parse_float (value, &fv); break;
    case PL_PARAM_BOOL:   ok = parse_bool (value, &bv); break;
    case PL_PARAM_STRING: break;
    }
  if (!ok)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "%s.%s: '%s' is not a%s %s", pass->name, name, value,
                   pass->params[i].type == PL_PARAM_INT ? "n" : "", pl_param_type_name (pass->params[i].type));
      return false;
    }
  g_free (args->values[i]);
  args->values[i] = g_strdup (value);
  return true;
}

static const char *
value_of (const PlPassArgs *args, const char *name, PlParamType type)
{
  int i = param_index (args->pass, name);
  if (i < 0 || args->pass->params[i].type != type)
    g_error ("pass %s reads undeclared %s parameter '%s'", args->pass->name, pl_param_type_name (type), name);
  return args->values[i];
}

int64_t
pl_pass_args_int (const PlPassArgs *args, const char *name)
{
  int64_t v = 0;
  parse_int (value_of (args, name, PL_PARAM_INT), &v);
  return v;
}

double
pl_pass_args_float (const PlPassArgs *args, const char *name)
{
  double v = 0;
  parse_float (value_of (args, name, PL_PARAM_FLOAT), &v);
  return v;
}

bool
pl_pass_args_bool (const PlPassArgs *args, const char *name)
{
  bool v = false;
  parse_bool (value_of (args, name, PL_PARAM_BOOL), &v);
  return v;
}

const char *
pl_pass_args_string (const PlPassArgs *args, const char *name)
{
  return value_of (args, name, PL_PARAM_STRING);
}

char *
pl_pass_args_describe (const PlPassArgs *args)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < args->pass->n_params; i++)
    if (g_strcmp0 (args->values[i], args->pass->params[i].default_value) != 0)
      g_string_append_printf (s, "%s%s=%s", s->len ? ", " : "", args->pass->params[i].name, args->values[i]);
  return g_string_free (s, FALSE);
}

/* --- reports --------------------------------------------------------------------- */

PlPassReport *
pl_pass_report_new (void)
{
  PlPassReport *r = g_new0 (PlPassReport, 1);
  r->text = g_string_new (NULL);
  r->counters = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  r->counter_order = g_ptr_array_new ();
  return r;
}

void
pl_pass_report_free (PlPassReport *r)
{
  if (!r)
    return;
  g_string_free (r->text, TRUE);
  g_ptr_array_free (r->counter_order, TRUE);
  g_hash_table_destroy (r->counters);
  g_free (r);
}

void
pl_pass_report_printf (PlPassReport *r, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_string_append_vprintf (r->text, fmt, ap);
  va_end (ap);
  if (r->text->len && r->text->str[r->text->len - 1] != '\n')
    g_string_append_c (r->text, '\n');
}

void
pl_pass_report_count (PlPassReport *r, const char *counter, int64_t delta)
{
  gint64 *v = g_hash_table_lookup (r->counters, counter);
  if (!v)
    {
      char *key = g_strdup (counter);
      v = g_new0 (gint64, 1);
      g_hash_table_insert (r->counters, key, v);
      g_ptr_array_add (r->counter_order, key);
    }
  *v += delta;
}

int64_t
pl_pass_report_get (const PlPassReport *r, const char *counter)
{
  gint64 *v = g_hash_table_lookup (r->counters, counter);
  return v ? *v : 0;
}
