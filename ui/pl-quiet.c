/* pl-quiet.c — a window held still while a worker thread times kernels
 * (see pl-quiet.h). The frame clock's after-paint, on the main thread,
 * stamps each frame under a lock; the worker polls the stamp, so the wait
 * needs nothing from the main loop but its frames. */
#define G_LOG_DOMAIN "passlab"

#include "pl-quiet.h"

#define POLL_MS 10

struct _PlQuiet
{
  GdkFrameClock *clock;      /* NULL: nothing to watch */
  gulong         handler;
  GMutex         lock;
  gint64         last_frame; /* monotonic µs of the last frame drawn, 0: none */
  int            frames;     /* frames drawn since new */
  int            at_wait;    /* frames when the wait ended, -1: not yet */
  int            at_end;     /* frames when the timing ended, -1: not yet */
  double         waited_ms;
};

static void
on_after_paint (GdkFrameClock *clock, PlQuiet *q)
{
  g_mutex_lock (&q->lock);
  q->last_frame = g_get_monotonic_time ();
  q->frames++;
  g_mutex_unlock (&q->lock);
}

PlQuiet *
pl_quiet_new (GtkWidget *widget)
{
  PlQuiet *q = g_new0 (PlQuiet, 1);
  g_mutex_init (&q->lock);
  q->at_wait = q->at_end = -1;
  /* the window's clock: a panel on a page not shown has none of its own */
  GtkNative *native = widget ? gtk_widget_get_native (widget) : NULL;
  GdkFrameClock *clock = native ? gtk_widget_get_frame_clock (GTK_WIDGET (native)) : NULL;
  if (clock)
    {
      q->clock = g_object_ref (clock);
      q->handler = g_signal_connect (clock, "after-paint", G_CALLBACK (on_after_paint), q);
    }
  return q;
}

void
pl_quiet_free (PlQuiet *q)
{
  if (!q)
    return;
  if (q->clock)
    {
      /* a clock disposed with its window has dropped its handlers already */
      if (g_signal_handler_is_connected (q->clock, q->handler))
        g_signal_handler_disconnect (q->clock, q->handler);
      g_object_unref (q->clock);
    }
  g_mutex_clear (&q->lock);
  g_free (q);
}

void
pl_quiet_wait (PlQuiet *q, GCancellable *cancellable)
{
  gint64 start = g_get_monotonic_time ();
  for (;;)
    {
      g_mutex_lock (&q->lock);
      /* a frame queued just before the wait may not be drawn yet: quiet
       * counts from the wait's start too */
      gint64 since = MAX (q->last_frame, start);
      g_mutex_unlock (&q->lock);
      gint64 now = g_get_monotonic_time ();
      if (!q->clock || now - since >= PL_QUIET_MS * 1000 || now - start >= PL_QUIET_MAX_MS * 1000
          || g_cancellable_is_cancelled (cancellable))
        break;
      g_usleep (POLL_MS * 1000);
    }
  g_mutex_lock (&q->lock);
  q->at_wait = q->frames;
  q->waited_ms = (double) (g_get_monotonic_time () - start) / 1000.0;
  g_mutex_unlock (&q->lock);
}

void
pl_quiet_end (PlQuiet *q)
{
  g_mutex_lock (&q->lock);
  q->at_end = q->frames;
  g_mutex_unlock (&q->lock);
}

int
pl_quiet_frames (PlQuiet *q)
{
  g_mutex_lock (&q->lock);
  int n = q->at_wait >= 0 && q->at_end >= 0 ? q->at_end - q->at_wait : -1;
  g_mutex_unlock (&q->lock);
  return n;
}

double
pl_quiet_waited_ms (PlQuiet *q)
{
  g_mutex_lock (&q->lock);
  double ms = q->waited_ms;
  g_mutex_unlock (&q->lock);
  return ms;
}
