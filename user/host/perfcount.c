// SPDX-License-Identifier: MIT
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/perfcount.h"

struct perfcount {
	size_t nr_events;
	size_t nr_tids;
	int *fds; /* nr_tids * nr_events; -1 where the open failed */
	int *open_err; /* per event: first open error, 0 when some fd opened */
	struct perfcount_event events[PERFCOUNT_MAX_EVENTS];
};

const struct perfcount_event perfcount_hw_events[8] = {
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
};

enum ev_gap perfcount__errno_gap(int err)
{
	switch (-err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return EV_GAP_UNSUPPORTED;
	case EACCES:
	case EPERM:
		return EV_GAP_PERMISSION_DENIED;
	default:
		return EV_GAP_UNAVAILABLE;
	}
}

int perfcount__open(struct perfcount **out, const pid_t *tids, size_t nr_tids,
		    const struct perfcount_opts *opts)
{
	struct perfcount *p;
	size_t t, e;

	*out = NULL;
	if (!opts || opts->nr_events > PERFCOUNT_MAX_EVENTS || !nr_tids)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->nr_events = opts->nr_events;
	p->nr_tids = nr_tids;
	memcpy(p->events, opts->events, opts->nr_events * sizeof(*opts->events));
	p->fds = malloc(nr_tids * (opts->nr_events ? opts->nr_events : 1) * sizeof(int));
	p->open_err = calloc(opts->nr_events ? opts->nr_events : 1, sizeof(int));
	if (!p->fds || !p->open_err) {
		perfcount__destroy(p);
		return -ENOMEM;
	}
	for (e = 0; e < p->nr_events; e++) {
		bool any = false;

		for (t = 0; t < nr_tids; t++) {
			struct perf_event_attr attr = {
				.size = sizeof(attr),
				.type = p->events[e].type,
				.config = p->events[e].config,
				.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
					       PERF_FORMAT_TOTAL_TIME_RUNNING,
				.inherit = 1,
				.exclude_hv = 1,
				.disabled = opts->enable_on_exec,
				.enable_on_exec = opts->enable_on_exec,
			};
			long fd = syscall(__NR_perf_event_open, &attr, tids[t], -1, -1,
					  PERF_FLAG_FD_CLOEXEC);
			int *slot = &p->fds[t * p->nr_events + e];

			if (fd < 0) {
				*slot = -1;
				/* A thread that exited meanwhile is not the event's fault. */
				if (errno != ESRCH && !p->open_err[e])
					p->open_err[e] = -errno;
				continue;
			}
			*slot = (int)fd;
			any = true;
		}
		if (any)
			p->open_err[e] = 0;
		else if (!p->open_err[e])
			p->open_err[e] = -ESRCH;
	}
	*out = p;
	return 0;
}

int perfcount__read(struct perfcount *p, struct perfcount_value *values, size_t nr)
{
	size_t t, e;

	if (nr < p->nr_events)
		return -EINVAL;
	for (e = 0; e < p->nr_events; e++) {
		struct perfcount_value *v = &values[e];
		uint64_t sum = 0;
		bool any = false;

		memset(v, 0, sizeof(*v));
		if (p->open_err[e]) {
			v->err = p->open_err[e];
			v->reason = perfcount__errno_gap(v->err);
			continue;
		}
		for (t = 0; t < p->nr_tids; t++) {
			uint64_t buf[3]; /* value, time_enabled, time_running */
			int fd = p->fds[t * p->nr_events + e];

			if (fd < 0)
				continue;
			if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
				v->err = -errno ?: -EIO;
				break;
			}
			if (buf[2] < buf[1])
				v->multiplexed = true;
			sum = sum > UINT64_MAX - buf[0] ? UINT64_MAX : sum + buf[0];
			any = true;
		}
		if (v->err) {
			v->reason = EV_GAP_UNAVAILABLE;
		} else if (v->multiplexed || !any) {
			/* A scaled estimate is not a measurement. */
			v->reason = EV_GAP_UNAVAILABLE;
		} else {
			v->recorded = true;
			v->value = sum;
		}
	}
	return 0;
}

int perfcount__open_cpu(const struct perfcount_event *ev, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = ev->type,
		.config = ev->config,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
		.exclude_hv = 1,
	};
	long fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

void perfcount__destroy(struct perfcount *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; p->fds && i < p->nr_tids * p->nr_events; i++)
		if (p->fds[i] >= 0)
			close(p->fds[i]);
	free(p->fds);
	free(p->open_err);
	free(p);
}

static struct sev_u64 field(const struct perfcount_value *v)
{
	return v->recorded ? sev_u64__recorded(v->value, EV_SRC_PERF_EVENT_OPEN) :
			     sev_u64__gap(EV_SRC_PERF_EVENT_OPEN, v->reason);
}

void perfcount__counter_set(struct counter_set *out, const struct perfcount_value *values)
{
	struct counter_sample start, end;

	/* Counters start at zero when opened: the start sample is all zeros. */
	memset(&end, 0, sizeof(end));
	end.cycles = field(&values[0]);
	end.instructions = field(&values[1]);
	end.cache_references = field(&values[2]);
	end.cache_misses = field(&values[3]);
	end.branch_instructions = field(&values[4]);
	end.branch_misses = field(&values[5]);
	end.stalled_cycles_frontend = field(&values[6]);
	end.stalled_cycles_backend = field(&values[7]);
	end.stalled_cycles_memory = sev_u64__gap(EV_SRC_PERF_EVENT_OPEN, EV_GAP_UNSUPPORTED);
	start = end;
	start.cycles = sev_u64__recorded(0, EV_SRC_PERF_EVENT_OPEN);
	start.instructions = start.cycles;
	start.cache_references = start.cycles;
	start.cache_misses = start.cycles;
	start.branch_instructions = start.cycles;
	start.branch_misses = start.cycles;
	start.stalled_cycles_frontend = start.cycles;
	start.stalled_cycles_backend = start.cycles;
	counter_set__between(out, &start, &end);
}
