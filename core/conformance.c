/* conformance.c — runs one ONNX backend test folder with the reference
 * interpreter and says PASS, FAIL or SKIP.
 *
 * A test that needs an op we do not run (unknown, control flow, or without a
 * reference implementation) or a type we do not have (strings, sequences)
 * is a SKIP, also when the model then fails to load, so the FAIL list stays
 * a list of our own bugs. Everything else that goes wrong — loading,
 * running, comparing — is a FAIL with the reason.
 */
#define G_LOG_DOMAIN "passlab"

#include "conformance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "onnx-io.h"
#include "onnx.pb-c.h"

static char *
scan_type (const Onnx__ValueInfoProto *vi)
{
  const Onnx__TypeProto *t = vi->type;
  if (t == NULL)
    return NULL;
  if (t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return g_strdup_printf ("unsupported type: '%s' is not a tensor", vi->name != NULL ? vi->name : "");
  int code = t->tensor_type->has_elem_type ? t->tensor_type->elem_type : 0;
  if (code != 0 && pl_dtype_from_onnx (code) == PL_DTYPE_UNDEFINED)
    return g_strdup_printf ("unsupported dtype: %s of '%s'",
                            code == ONNX__TENSOR_PROTO__DATA_TYPE__STRING ? "string" : "non-numeric",
                            vi->name != NULL ? vi->name : "");
  return NULL;
}

/* Why an op cannot run here (unknown, control flow, or no reference
 * implementation), or NULL when it can. */
static char *
op_skip_reason (const char *op_type, const char *domain)
{
  if (strcmp (domain, "ai.onnx") == 0)
    domain = "";
  PlOp op = pl_op_from_name (op_type, domain);
  const PlOpInfo *info = op != PL_OP_OPAQUE ? pl_op_info (op) : NULL;
  if (info == NULL || info->category == PL_CAT_CONTROL || info->eval == NULL)
    return g_strdup_printf ("unsupported op: %s%s%s", domain, domain[0] != '\0' ? "." : "", op_type);
  return NULL;
}

static char *
scan_graph (const PlGraph *g)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g->nodes->pdata[i];
      char *why = op_skip_reason (node->op_type, node->domain);
      if (why != NULL)
        return why;
    }
  return NULL;
}

/* The same for a model the importer refused: ops first, then types. */
static char *
scan_model (const Onnx__ModelProto *m)
{
  const Onnx__GraphProto *gp = m->graph;
  if (gp == NULL)
    return NULL;
  for (size_t i = 0; i < gp->n_node; i++)
    {
      const Onnx__NodeProto *np = gp->node[i];
      char *why = op_skip_reason (np->op_type != NULL ? np->op_type : "?",
                                  np->domain != NULL ? np->domain : "");
      if (why != NULL)
        return why;
    }
  const Onnx__ValueInfoProto *const *lists[] = { (const Onnx__ValueInfoProto *const *) gp->input,
                                                 (const Onnx__ValueInfoProto *const *) gp->output };
  size_t counts[] = { gp->n_input, gp->n_output };
  for (int l = 0; l < 2; l++)
    for (size_t i = 0; i < counts[l]; i++)
      {
        char *why = scan_type (lists[l][i]);
        if (why != NULL)
          return why;
      }
  for (size_t i = 0; i < gp->n_initializer; i++)
    if (gp->initializer[i]->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__STRING)
      return g_strdup ("unsupported dtype: string");
  return NULL;
}

/* Reads folder/input_0.pb, input_1.pb, ... (prefix "input" or "output")
 * into slots that follow `values` (graph inputs or outputs): by name where
 * the file names one of them, else by position. */
static PlTensor **
load_tensors (const char *folder, const char *prefix, GPtrArray *values, GError **error)
{
  g_autoptr (GPtrArray) loaded = g_ptr_array_new_with_free_func ((GDestroyNotify) pl_tensor_unref);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (int k = 0;; k++)
    {
      g_autofree char *file = g_strdup_printf ("%s/%s_%d.pb", folder, prefix, k);
      if (!g_file_test (file, G_FILE_TEST_EXISTS))
        break;
      char *name = NULL;
      PlTensor *t = pl_onnx_load_tensor (file, &name, error);
      if (t == NULL)
        return NULL;
      g_ptr_array_add (loaded, t);
      g_ptr_array_add (names, name);
    }
  if (loaded->len != values->len)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "the model has %u %ss, %s has %u",
                   values->len, prefix, folder, loaded->len);
      return NULL;
    }

  PlTensor **slots = g_new0 (PlTensor *, values->len + 1);
  for (guint k = 0; k < loaded->len; k++)
    {
      guint slot = k;
      for (guint j = 0; j < values->len; j++)
        if (strcmp (((PlValue *) values->pdata[j])->name, names->pdata[k]) == 0)
          slot = j;
      if (slots[slot] != NULL)
        slot = k;
      if (slots[slot] != NULL)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "%s_%u.pb: two files for %s '%s'",
                       prefix, k, prefix, ((PlValue *) values->pdata[slot])->name);
          pl_interp_free_outputs (slots, (int) values->len);
          return NULL;
        }
      slots[slot] = pl_tensor_ref (loaded->pdata[k]);
    }
  return slots;
}

/* Compares one output; on a mismatch returns a message naming the first
 * element out of tolerance. *worst gets the worst error / tolerance. */
static char *
compare_output (const char *name, const PlTensor *got, const PlTensor *want, double *worst)
{
  if (got->dtype != want->dtype)
    {
      *worst = INFINITY;
      return g_strdup_printf ("output '%s': got dtype %s, want %s", name,
                              pl_dtype_name (got->dtype), pl_dtype_name (want->dtype));
    }
  PlShape gs = pl_tensor_shape (got), ws = pl_tensor_shape (want);
  if (!pl_shape_equal (&gs, &ws))
    {
      g_autofree char *a = pl_shape_to_string (&gs);
      g_autofree char *b = pl_shape_to_string (&ws);
      *worst = INFINITY;
      return g_strdup_printf ("output '%s': got shape %s, want %s", name, a, b);
    }
  if (pl_tensor_allclose (got, want, PL_CONFORMANCE_RTOL, PL_CONFORMANCE_ATOL, worst))
    return NULL;

  bool exact = !pl_dtype_is_float (want->dtype);
  for (int64_t i = 0; i < want->numel; i++)
    {
      if (exact)
        {
          int64_t a = pl_tensor_get_i64 (got, i), b = pl_tensor_get_i64 (want, i);
          if (a != b)
            return g_strdup_printf ("output '%s'[%" G_GINT64_FORMAT "]: got %" G_GINT64_FORMAT
                                    ", want %" G_GINT64_FORMAT, name, i, a, b);
          continue;
        }
      double a = pl_tensor_get_f64 (got, i), b = pl_tensor_get_f64 (want, i);
      if (isnan (a) && isnan (b))
        continue;
      if (a == b)  /* equal infinities */
        continue;
      if (!(fabs (a - b) <= PL_CONFORMANCE_ATOL + PL_CONFORMANCE_RTOL * fabs (b)))
        return g_strdup_printf ("output '%s'[%" G_GINT64_FORMAT "]: got %.9g, want %.9g "
                                "(%.3g times the tolerance)", name, i, a, b, *worst);
    }
  return g_strdup_printf ("output '%s': values differ (%.3g times the tolerance)", name, *worst);
}

/* numpy has no bfloat16, so the suite stores bf16 data as uint16 bit
 * patterns; a u16 tensor where the model declares bf16 is read as bf16.
 * The tensor was just loaded and is not shared. */
static void
bf16_from_bits (PlTensor *t, PlDType declared)
{
  if (declared == PL_DTYPE_BF16 && t->dtype == PL_DTYPE_U16)
    t->dtype = PL_DTYPE_BF16;
}

/* Runs one test_data_set_N folder. Returns false with result filled on a
 * skip or failure. */
static bool
run_data_set (const PlGraph *g, const char *folder, PlConformanceRunner run, gpointer data,
              PlConformanceResult *result)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *base = g_path_get_basename (folder);
  int n_in = (int) g->inputs->len, n_out = (int) g->outputs->len;

  PlTensor **inputs = load_tensors (folder, "input", g->inputs, &error);
  if (inputs == NULL)
    {
      result->status = g_error_matches (error, PL_ERROR, PL_ERROR_UNSUPPORTED)
        ? PL_CONFORMANCE_SKIP : PL_CONFORMANCE_FAIL;
      result->message = g_strdup_printf ("%s: %s", base, error->message);
      return false;
    }
  PlTensor **want = load_tensors (folder, "output", g->outputs, &error);
  if (want == NULL)
    {
      pl_interp_free_outputs (inputs, n_in);
      result->status = g_error_matches (error, PL_ERROR, PL_ERROR_UNSUPPORTED)
        ? PL_CONFORMANCE_SKIP : PL_CONFORMANCE_FAIL;
      result->message = g_strdup_printf ("%s: %s", base, error->message);
      return false;
    }

  for (int k = 0; k < n_in; k++)
    bf16_from_bits (inputs[k], ((PlValue *) g->inputs->pdata[k])->dtype);
  for (int k = 0; k < n_out; k++)
    bf16_from_bits (want[k], ((PlValue *) g->outputs->pdata[k])->dtype);

  PlTensor **got = run ? run (g, inputs, data, result, &error) : pl_interp_run (g, inputs, NULL, &error);
  bool ok = got != NULL;
  if (!ok)
    {
      /* An op that refuses a case it does not implement (training-mode
       * Dropout is random) skips, like an op that is missing. */
      result->status = g_error_matches (error, PL_ERROR, PL_ERROR_UNSUPPORTED)
        ? PL_CONFORMANCE_SKIP : PL_CONFORMANCE_FAIL;
      result->message = g_strdup_printf ("%s: %s", base, error->message);
    }
  for (int k = 0; ok && k < n_out; k++)
    {
      double worst = 0;
      char *why = compare_output (((PlValue *) g->outputs->pdata[k])->name, got[k], want[k], &worst);
      if (!(worst <= result->worst))
        result->worst = worst;
      if (why != NULL)
        {
          result->status = PL_CONFORMANCE_FAIL;
          result->message = g_strdup_printf ("%s: %s", base, why);
          g_free (why);
          ok = false;
        }
    }
  if (got != NULL)
    pl_interp_free_outputs (got, n_out);
  pl_interp_free_outputs (inputs, n_in);
  pl_interp_free_outputs (want, n_out);
  return ok;
}

static gint
compare_paths (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static void
run_dir (const char *dir, PlConformanceRunner run, gpointer run_data, PlConformanceResult *result)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *model_path = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!g_file_get_contents (model_path, &data, &len, &error))
    {
      result->status = PL_CONFORMANCE_FAIL;
      result->message = g_strdup (error->message);
      return;
    }

  pl_ops_init ();
  g_autoptr (PlGraph) g = pl_onnx_load_from_data ((const guint8 *) data, len, model_path, &error);
  char *skip = NULL;
  if (g != NULL)
    skip = scan_graph (g);
  else if (!g_error_matches (error, PL_ERROR, PL_ERROR_FORMAT))
    {
      /* The importer unpacked this file before it failed, so it passed the
       * nesting-depth check and unpacking it here is safe. */
      Onnx__ModelProto *m = onnx__model_proto__unpack (NULL, len, (const guint8 *) data);
      if (m != NULL)
        {
          skip = scan_model (m);
          onnx__model_proto__free_unpacked (m, NULL);
        }
    }
  if (skip != NULL)
    {
      result->status = PL_CONFORMANCE_SKIP;
      result->message = skip;
      return;
    }
  if (g == NULL)
    {
      result->status = g_error_matches (error, PL_ERROR, PL_ERROR_UNSUPPORTED)
        ? PL_CONFORMANCE_SKIP : PL_CONFORMANCE_FAIL;
      result->message = g_strdup (error->message);
      return;
    }

  g_autoptr (GDir) d = g_dir_open (dir, 0, &error);
  if (d == NULL)
    {
      result->status = PL_CONFORMANCE_FAIL;
      result->message = g_strdup (error->message);
      return;
    }
  g_autoptr (GPtrArray) sets = g_ptr_array_new_with_free_func (g_free);
  const char *entry;
  while ((entry = g_dir_read_name (d)) != NULL)
    if (g_str_has_prefix (entry, "test_data_set_"))
      g_ptr_array_add (sets, g_build_filename (dir, entry, NULL));
  if (sets->len == 0)
    {
      result->status = PL_CONFORMANCE_FAIL;
      result->message = g_strdup_printf ("%s has no test_data_set_* folder", dir);
      return;
    }
  g_ptr_array_sort (sets, compare_paths);

  result->status = PL_CONFORMANCE_PASS;
  for (guint i = 0; i < sets->len; i++)
    if (!run_data_set (g, sets->pdata[i], run, run_data, result))
      return;
}

void
pl_conformance_run_dir_with (const char *dir, PlConformanceRunner run, gpointer data, PlConformanceResult *result)
{
  g_return_if_fail (dir != NULL && result != NULL);

  memset (result, 0, sizeof *result);
  gint64 start = g_get_monotonic_time ();
  run_dir (dir, run, data, result);
  result->seconds = (double) (g_get_monotonic_time () - start) / G_USEC_PER_SEC;
}

void
pl_conformance_run_dir (const char *dir, PlConformanceResult *result)
{
  pl_conformance_run_dir_with (dir, NULL, NULL, result);
}

void
pl_conformance_result_clear (PlConformanceResult *result)
{
  g_clear_pointer (&result->message, g_free);
}
