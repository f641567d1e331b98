/* cli-info.c — the commands that look at a graph without running it:
 * `info` (a summary), `print` (the text format) and `convert`. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "dot-export.h"
#include "onnx-io.h"
#include "schedule.h"
#include "text-format.h"

/* "512 bytes", or "1.5 KiB (1536 bytes)". */
static char *
format_bytes (int64_t bytes)
{
  if (bytes < 1024)
    return g_strdup_printf ("%" G_GINT64_FORMAT " bytes", bytes);
  g_autofree char *human = g_format_size_full ((guint64) bytes, G_FORMAT_SIZE_IEC_UNITS);
  return g_strdup_printf ("%s (%" G_GINT64_FORMAT " bytes)", human, bytes);
}

/* Loads the single FILE argument left after option parsing. */
static PlGraph *
load_single (int argc, char **argv)
{
  if (argc < 2)
    {
      pl_cli_fail ("missing FILE (see '%s --help')", argv[0]);
      return NULL;
    }
  if (argc > 2)
    {
      pl_cli_fail ("unexpected argument '%s' (see '%s --help')", argv[2], argv[0]);
      return NULL;
    }
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_cli_load (argv[1], &error);
  if (g == NULL)
    pl_cli_fail_error (error);
  return g;
}

/* --- info ------------------------------------------------------------------- */

typedef struct {
  const char *op;
  int         count;
  bool        opaque;
} OpCount;

static int
compare_op_counts (gconstpointer a, gconstpointer b)
{
  const OpCount *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return strcmp (x->op, y->op);
}

/* Op histogram, most frequent first (ties by name). Ops of other domains
 * are named "domain.Op"; the names live in strings. */
static GArray *
op_histogram (const PlGraph *g, GStringChunk *strings)
{
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);
  GArray *counts = g_array_new (FALSE, FALSE, sizeof (OpCount));
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g_ptr_array_index (g->nodes, i);
      const char *op = node->op_type != NULL ? node->op_type : pl_op_name (node->op);
      if (node->domain != NULL && node->domain[0] != '\0')
        {
          g_autofree char *qualified = g_strdup_printf ("%s.%s", node->domain, op);
          op = g_string_chunk_insert_const (strings, qualified);
        }
      gpointer slot;
      if (g_hash_table_lookup_extended (index, op, NULL, &slot))
        {
          g_array_index (counts, OpCount, GPOINTER_TO_UINT (slot)).count++;
          continue;
        }
      OpCount c = { op, 1, node->op == PL_OP_OPAQUE && node->body == NULL };
      g_hash_table_insert (index, (gpointer) op, GUINT_TO_POINTER (counts->len));
      g_array_append_val (counts, c);
    }
  g_array_sort (counts, compare_op_counts);
  return counts;
}

static void
print_values (const char *title, GPtrArray *values)
{
  printf ("%s: %u\n", title, values->len);
  for (guint i = 0; i < values->len; i++)
    {
      const PlValue *v = g_ptr_array_index (values, i);
      if (v == NULL)
        continue;
      g_autofree char *shape = pl_shape_to_string (&v->shape);
      const char *dt = v->dtype == PL_DTYPE_UNDEFINED ? "?" : pl_dtype_name (v->dtype);
      printf ("  %s: %s%s\n", v->name, dt, shape);
    }
}

static void
print_memory (const PlGraph *g, int64_t sym_size)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlMemoryProfile) p = pl_memory_profile (g, sym_size, &error);
  if (p == NULL)
    {
      printf ("peak memory: unknown (%s)\n", error->message);
      return;
    }
  g_autofree char *peak = format_bytes (p->peak_bytes);
  g_autofree char *inputs = format_bytes (p->input_bytes);
  printf ("peak memory: %s", peak);
  if (p->peak_step >= 0)
    {
      const PlNode *at = p->order[p->peak_step];
      printf (" at step %d of %d (%s '%s')", p->peak_step + 1, p->n_steps,
              at->op_type != NULL ? at->op_type : pl_op_name (at->op), at->name);
    }
  printf ("\n");
  printf ("input memory: %s\n", inputs);
  if (p->assumed_sizes)
    printf ("note: symbolic or unknown dims (and unknown dtypes as 4 bytes) were taken as %"
            G_GINT64_FORMAT "; see --sym-size\n", sym_size);
}

int
pl_cli_info (int argc, char **argv)
{
  gint64 sym_size = 1;
  const GOptionEntry entries[] = {
    { "sym-size", 's', 0, G_OPTION_ARG_INT64, &sym_size,
      "Size assumed for symbolic and unknown dims in the memory estimate (default 1)", "N" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE",
    "Shows a summary of a graph: op counts, inputs and outputs, constants,\n"
    "and the peak memory of its schedule (activations; constants apart).", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (sym_size < 0)
    return pl_cli_fail ("--sym-size must be >= 0");

  g_autoptr (PlGraph) g = load_single (argc, argv);
  if (g == NULL)
    return 1;

  printf ("file: %s\n", argv[1]);
  printf ("graph: %s\n", g->name != NULL && g->name[0] != '\0' ? g->name : "(unnamed)");
  if (g->opset > 0)
    printf ("opset: %d\n", g->opset);
  else
    printf ("opset: unspecified\n");
  printf ("nodes: %u\n", g->nodes->len);

  GStringChunk *strings = g_string_chunk_new (256);
  g_autoptr (GArray) hist = op_histogram (g, strings);
  if (hist->len > 0)
    printf ("ops:\n");
  for (guint i = 0; i < hist->len; i++)
    {
      const OpCount *c = &g_array_index (hist, OpCount, i);
      printf ("  %-24s %d\n", c->op, c->count);
    }

  print_values ("inputs", g->inputs);
  print_values ("outputs", g->outputs);

  guint n_constants = 0;
  for (guint i = 0; i < g->values->len; i++)
    if (((const PlValue *) g_ptr_array_index (g->values, i))->constant != NULL)
      n_constants++;
  g_autofree char *params = format_bytes (pl_graph_param_bytes (g));
  printf ("constants: %u, parameters: %s\n", n_constants, params);

  print_memory (g, sym_size);

  GString *unknown = g_string_new (NULL);
  for (guint i = 0; i < hist->len; i++)
    {
      const OpCount *c = &g_array_index (hist, OpCount, i);
      if (c->opaque)
        g_string_append_printf (unknown, "%s%s (%d)", unknown->len > 0 ? ", " : "", c->op, c->count);
    }
  if (unknown->len > 0)
    printf ("unknown ops (shown, not executable): %s\n", unknown->str);
  g_string_free (unknown, TRUE);
  g_string_chunk_free (strings);
  return 0;
}

/* --- print -------------------------------------------------------------------- */

int
pl_cli_print (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE",
    "Prints a graph in the .graph text format.", NULL);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  g_autoptr (PlGraph) g = load_single (argc, argv);
  if (g == NULL)
    return 1;
  g_autofree char *text = pl_text_print (g);
  fputs (text, stdout);
  return fflush (stdout) == 0 ? 0 : pl_cli_fail ("cannot write to standard output");
}

/* --- convert ------------------------------------------------------------------ */

int
pl_cli_convert (int argc, char **argv)
{
  g_autofree char *output = NULL;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
      "Where to write: .graph (text), .onnx or .dot (Graphviz)", "OUT" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE [-o] OUT",
    "Converts a graph; the format follows OUT's extension.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  /* OUT may also be the second positional argument. */
  if (output == NULL && argc == 3)
    {
      output = g_strdup (argv[2]);
      argc = 2;
    }
  if (output == NULL)
    return pl_cli_fail ("missing -o OUT (see '%s --help')", argv[0]);

  const char *ext = strrchr (output, '.');
  if (ext == NULL || strchr (ext, '/') != NULL
      || (strcmp (ext, ".graph") != 0 && strcmp (ext, ".onnx") != 0 && strcmp (ext, ".dot") != 0))
    return pl_cli_fail ("%s: unknown output format (use .graph, .onnx or .dot)", output);

  g_autoptr (PlGraph) g = load_single (argc, argv);
  if (g == NULL)
    return 1;

  g_autoptr (GError) error = NULL;
  bool ok;
  if (strcmp (ext, ".graph") == 0)
    ok = pl_text_save (g, output, &error);
  else if (strcmp (ext, ".onnx") == 0)
    ok = pl_onnx_save (g, output, &error);
  else
    ok = pl_dot_save (g, output, &error);
  if (!ok)
    return pl_cli_fail_error (error);
  return 0;
}
