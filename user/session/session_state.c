// SPDX-License-Identifier: MIT
/* What every part of a session shares beyond its state: its progress log. */
#include <stdarg.h>
#include <stdio.h>

#include "session/session_state.h"

void session__logf(const struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->opts.log)
		return;
	va_start(ap, fmt);
	vfprintf(s->opts.log, fmt, ap);
	va_end(ap);
}
