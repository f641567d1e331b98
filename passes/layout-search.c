/* layout-search.c — see layout-search.h. */
#define G_LOG_DOMAIN "passlab"
#include "layout-search.h"
