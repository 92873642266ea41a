// SPDX-License-Identifier: MIT
/* Which entries of a bounded kernel table leave after a window. See serve_sweep.h. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "serve/serve_sweep.h"

#define NS_PER_SEC UINT64_C(1000000000)
#define DEFAULT_MAX_AGE_NS (300 * NS_PER_SEC)
#define EVICT_HIGH(max) ((uint64_t)(max)*9 / 10)
#define EVICT_LOW(max) ((uint64_t)(max)*3 / 4)

uint64_t serve_sweep__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void serve_sweep__mark(struct sweep_mark *m, const struct sweep_mark *old, uint64_t activity,
		       uint64_t now)
{
	if (old && old->activity == activity) {
		*m = *old;
		return;
	}
	m->activity = activity;
	m->changed_mono = now;
}

struct idle {
	uint64_t since;
	size_t i;
};

static int idle_cmp(const void *a, const void *b)
{
	const struct idle *x = a, *y = b;

	return x->since < y->since ? -1 : x->since > y->since;
}

int serve_sweep__decide(const struct sweep_mark *const *marks, size_t nr, uint64_t now,
			uint64_t max_age, uint64_t max, uint8_t *verdict)
{
	struct idle *order;
	size_t i, live = 0, n;

	max_age = max_age ?: DEFAULT_MAX_AGE_NS;
	for (i = 0; i < nr; i++) {
		verdict[i] = now - marks[i]->changed_mono >= max_age ? SWEEP_AGED : SWEEP_KEEP;
		live += verdict[i] == SWEEP_KEEP;
	}
	if (live <= EVICT_HIGH(max))
		return 0;
	order = calloc(live, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0, n = 0; i < nr; i++)
		if (verdict[i] == SWEEP_KEEP)
			order[n++] = (struct idle){ marks[i]->changed_mono, i };
	qsort(order, live, sizeof(*order), idle_cmp);
	for (n = 0; live - n > EVICT_LOW(max); n++)
		verdict[order[n].i] = SWEEP_EVICT;
	free(order);
	return 0;
}
