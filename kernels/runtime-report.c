/* runtime-report.c — a run report as JSON, and as a Chrome-trace / Perfetto
 * timeline: one complete ("X") event per launch of the last run, a counter
 * ("C") track of the memory in use, and metadata naming the tracks. Load the
 * trace in chrome://tracing or https://ui.perfetto.dev. */
#define G_LOG_DOMAIN "passlab"
#include "runtime.h"

#include <math.h>

void
pl_run_report_free (PlRunReport *r)
{
  if (!r)
    return;
  for (int i = 0; i < r->n_kernels; i++)
    {
      g_free (r->kernels[i].name);
      g_free (r->kernels[i].ops);
      g_free (r->kernels[i].kind);
      g_free (r->kernels[i].note);
    }
  for (int i = 0; i < r->n_events; i++)
    g_free (r->events[i].name);
  g_free (r->kernels);
  g_free (r->events);
  g_free (r->memory);
  g_free (r->device);
  g_free (r);
}

/* A JSON string literal. */
static void
json_string (GString *s, const char *text)
{
  g_string_append_c (s, '"');
  for (const unsigned char *p = (const unsigned char *) (text ? text : ""); *p; p++)
    {
      if (*p == '"' || *p == '\\')
        g_string_append_printf (s, "\\%c", *p);
      else if (*p == '\n')
        g_string_append (s, "\\n");
      else if (*p < 0x20)
        g_string_append_printf (s, "\\u%04x", *p);
      else
        g_string_append_c (s, (char) *p);
    }
  g_string_append_c (s, '"');
}

static void
json_number (GString *s, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (!isfinite (v))
    v = 0;
  g_string_append (s, g_ascii_formatd (buf, sizeof buf, "%.6g", v));
}

char *
pl_run_report_json (const PlRunReport *r)
{
  GString *s = g_string_new ("{\"backend\": ");
  json_string (s, pl_backend_name (r->backend));
  g_string_append (s, ", \"device\": ");
  json_string (s, r->device);
  g_string_append_printf (s, ", \"emulated\": %s", r->emulated ? "true" : "false");
  g_string_append_printf (s, ", \"repeats\": %d, \"total_ms\": ", r->repeats);
  json_number (s, r->total_ms);
  g_string_append_printf (s, ", \"peak_bytes\": %" G_GINT64_FORMAT ", \"arena_bytes\": %" G_GINT64_FORMAT
                          ", \"param_bytes\": %" G_GINT64_FORMAT, r->peak_bytes, r->arena_bytes, r->param_bytes);
  g_string_append_printf (s, ", \"host_peak_bytes\": %" G_GINT64_FORMAT ", \"host_pool_bytes\": %" G_GINT64_FORMAT
                          ", \"device_budget\": %" G_GINT64_FORMAT ", \"workspace_bytes\": %" G_GINT64_FORMAT
                          ", \"copies\": %d, \"copy_bytes\": %" G_GINT64_FORMAT ", \"copy_ms\": ",
                          r->host_peak_bytes, r->host_pool_bytes, r->device_budget, r->workspace_bytes, r->n_copies,
                          r->copy_bytes);
  json_number (s, r->copy_ms);
  g_string_append (s, ", \"wait_ms\": ");
  json_number (s, r->wait_ms);
  g_string_append (s, ", \"kernels\": [");
  for (int i = 0; i < r->n_kernels; i++)
    {
      const PlKernelTiming *k = &r->kernels[i];
      g_string_append (s, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
      json_string (s, k->name);
      g_string_append_printf (s, ", \"node_id\": %u, \"ops\": ", k->node_id);
      json_string (s, k->ops);
      g_string_append_printf (s, ", \"n_ops\": %d, \"kind\": ", k->n_ops);
      json_string (s, k->kind);
      g_string_append_printf (s, ", \"library\": %s, \"fallback\": %s, \"launches\": %d, \"median_ms\": ",
                              k->library ? "true" : "false", k->fallback ? "true" : "false", k->n_launches);
      json_number (s, k->median_ms);
      g_string_append (s, ", \"min_ms\": ");
      json_number (s, k->min_ms);
      g_string_append_printf (s, ", \"bytes\": %" G_GINT64_FORMAT ", \"flops\": %" G_GINT64_FORMAT ", \"gbps\": ",
                              k->bytes, k->flops);
      json_number (s, k->gbps);
      if (k->note)
        {
          g_string_append (s, ", \"note\": ");
          json_string (s, k->note);
        }
      g_string_append_c (s, '}');
    }
  g_string_append (s, "],\n \"memory\": [");
  for (int i = 0; i < r->n_memory; i++)
    {
      g_string_append (s, i ? ", [" : "[");
      json_number (s, r->memory[i].t_ms);
      g_string_append_printf (s, ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", r->memory[i].bytes,
                              r->memory[i].host_bytes);
    }
  g_string_append (s, "]}\n");
  return g_string_free (s, FALSE);
}

char *
pl_run_report_trace_json (const PlRunReport *r)
{
  int tid = r->backend == PL_BACKEND_CUDA ? 2 : 1;
  GString *s = g_string_new ("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  g_string_append (s, "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": ");
  g_autofree char *pname = g_strdup_printf ("passlab %s", pl_backend_name (r->backend));
  json_string (s, pname);
  g_string_append_printf (s, "}},\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, "
                          "\"args\": {\"name\": \"kernels\"}}", tid);
  for (int i = 0; i < r->n_events; i++)
    {
      const PlTraceEvent *ev = &r->events[i];
      const PlKernelTiming *k = ev->kernel >= 0 && ev->kernel < r->n_kernels ? &r->kernels[ev->kernel] : NULL;
      g_string_append (s, ",\n  {\"name\": ");
      json_string (s, ev->name);
      g_string_append (s, ", \"cat\": ");
      json_string (s, k ? k->kind : "kernel");
      g_string_append (s, ", \"ph\": \"X\", \"ts\": ");
      json_number (s, ev->start_ms * 1000.0);
      g_string_append (s, ", \"dur\": ");
      json_number (s, ev->dur_ms * 1000.0);
      g_string_append_printf (s, ", \"pid\": 1, \"tid\": %d, \"args\": {", tid);
      if (k)
        {
          g_string_append (s, "\"ops\": ");
          json_string (s, k->ops);
          g_string_append_printf (s, ", \"bytes\": %" G_GINT64_FORMAT ", \"fallback\": %s", k->bytes,
                                  k->fallback ? "true" : "false");
        }
      g_string_append (s, "}}");
    }
  for (int i = 0; i < r->n_memory; i++)
    {
      g_string_append (s, ",\n  {\"name\": \"memory\", \"ph\": \"C\", \"pid\": 1, \"ts\": ");
      json_number (s, r->memory[i].t_ms * 1000.0);
      g_string_append_printf (s, ", \"args\": {\"bytes\": %" G_GINT64_FORMAT ", \"host_bytes\": %" G_GINT64_FORMAT "}}",
                              r->memory[i].bytes, r->memory[i].host_bytes);
    }
  g_string_append (s, "\n]}\n");
  return g_string_free (s, FALSE);
}
