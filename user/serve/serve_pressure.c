// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/cglabels.h"
#include "host/cgroup.h"
#include "lib/fsutil.h"
#include "host/pressure.h"
#include "serve/promtext.h"
#include "serve/serve_groups.h"
#include "serve/serve_source.h"
#include "serve/serve_pressure.h"
#include "host/thermal.h"

#define NS_PER_US 1000ULL
#define MILLI_AS_NANO 1000000ULL

/*
 * The recorded totals of one scope; cgroup NULL for the host. A cgroup's
 * series carry the labels --labels finds in its path, as its groups' do.
 */
static int stall_series(struct promtext *p, const char *cgroup, const struct cglabels *labels,
			const struct pressure_sample *s)
{
	struct prom_label l[3 + CGLABELS_MAX_LABELS];
	struct cgpath_labels cv;
	size_t n = 0, nc;
	int r, k, err = 0;

	if (cgroup) {
		l[n++] = (struct prom_label){ "cgroup", cgroup };
		if (labels) {
			nc = cglabels__for_path(labels, cgroup, &cv, &l[n]);
			n += nc;
		}
	}
	for (r = 0; r < PSI__RESOURCES && !err; r++) {
		for (k = 0; k < PSI__KINDS && !err; k++) {
			struct ev_u64 v = s->total_us[r][k].ev;

			/* Beyond 584 years in microseconds: not exact in ns, so no series. */
			if (!v.recorded || v.value > UINT64_MAX / NS_PER_US)
				continue;
			l[n] = (struct prom_label){ "resource", psi_resource__name(r) };
			l[n + 1] = (struct prom_label){ "kind", psi_kind__name(k) };
			err = promtext__ns_as_seconds(p, l, n + 2, v.value * NS_PER_US);
		}
	}
	return err;
}

/* Each cgroup series of --by cgroup: its path under the cgroup v2 mount. */
static int cgroup_stalls(struct promtext *p, const struct serve_metrics_src *src)
{
	char mount[PATH_MAX], dir[PATH_MAX];
	struct serve_row *rows = NULL;
	struct pressure_sample s;
	size_t nr = 0, i;
	int err;

	if (src->group_by != KHBPF_GROUP_CGROUP || !src->groups ||
	    cgroup__v2_mount(src->root ?: "/", mount, sizeof(mount)))
		return 0;
	err = serve_groups__rows(src->groups, &rows, &nr);
	for (i = 0; i < nr && !err; i++) {
		const char *path = rows[i].cgroup;

		/* "(overflow)", "(cgroup id N)" and a label cut at its bound name no directory. */
		if (path[0] != '/' || strlen(path) >= SERVE_LABEL_MAX - 1 ||
		    snprintf(dir, sizeof(dir), "%s%s", mount, strcmp(path, "/") ? path : "") >=
			    (int)sizeof(dir))
			continue;
		pressure__sample(dir, true, !strcmp(path, "/"), &s, NULL, 0);
		err = stall_series(p, path, src->labels, &s);
	}
	free(rows);
	return err;
}

static int thermal_series(struct promtext *p, const struct serve_metrics_src *src)
{
	struct thermal_sample t;
	struct prom_label l[1];
	int err = 0;

	thermal__sample(src->root ?: "/", &t, NULL, 0);
	if (t.max_zone_millicelsius.ev.recorded &&
	    t.max_zone_millicelsius.ev.value <= UINT64_MAX / MILLI_AS_NANO) {
		err = promtext__family(p, "khbpf_thermal_max_zone_celsius", PROM_GAUGE, "celsius",
				       "Temperature of the hottest readable thermal zone "
				       "(/sys/class/thermal)");
		/* Thousandths as a decimal, exactly: the seconds writer's 10^-9 steps. */
		err = err   ?:
			      promtext__ns_as_seconds(
				      p, NULL, 0, t.max_zone_millicelsius.ev.value * MILLI_AS_NANO);
	}
	if (err || (!t.throttle_events.ev.recorded && !t.package_throttle_events.ev.recorded))
		return err;
	err = promtext__family(p, "khbpf_thermal_throttle_events", PROM_COUNTER, NULL,
			       "Thermal throttling events since boot (thermal_throttle): core "
			       "summed over online CPUs, package once per package");
	l[0] = (struct prom_label){ "kind", "core" };
	if (!err && t.throttle_events.ev.recorded)
		err = promtext__u64(p, l, 1, t.throttle_events.ev.value);
	l[0] = (struct prom_label){ "kind", "package" };
	if (!err && t.package_throttle_events.ev.recorded)
		err = promtext__u64(p, l, 1, t.package_throttle_events.ev.value);
	return err;
}

int serve_pressure__render(struct promtext *p, const struct serve_metrics_src *src)
{
	struct pressure_window host;
	int err;

	pressure_window__host(&host, src->root);
	pressure_window__read(&host, true);
	err = promtext__family(p, "khbpf_pressure_stalled_seconds", PROM_COUNTER, "seconds",
			       "Time tasks were stalled on a resource (PSI total=): kind some = at "
			       "least one task, full = all non-idle tasks; without a cgroup label, "
			       "the host");
	err = err ?: stall_series(p, NULL, NULL, &host.end);
	err = err ?: cgroup_stalls(p, src);
	return err ?: thermal_series(p, src);
}
