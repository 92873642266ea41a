// SPDX-License-Identifier: MIT
/* What to do about each gap and unavailable collector: the renderers' hints. */
#include <stdbool.h>
#include <string.h>

#include "lib/evidence.h"
#include "report/report.h"

/* '*' matches any run of characters; everything else matches itself. */
static bool glob_match(const char *pat, const char *s)
{
	for (; *pat; pat++, s++) {
		if (*pat == '*') {
			for (;; s++) {
				if (glob_match(pat + 1, s))
					return true;
				if (!*s)
					return false;
			}
		}
		if (*pat != *s)
			return false;
	}
	return !*s;
}

#define ANY_GAP EV_GAP__COUNT

static const struct gap_hint {
	const char *path;
	enum ev_gap reason; /* ANY_GAP: every reason */
	const char *hint;
} gap_hints[] = {
	{ "*.stalled_cycles_memory", EV_GAP_UNSUPPORTED,
	  "Linux has no perf event for memory stall cycles: always a gap on Linux" },
	{ "hardware.value.counters.*_milli", ANY_GAP,
	  "a ratio of two counters: a gap when either is one, or when the divisor is zero; fix the counters" },
	{ "hardware.value.counters.*", EV_GAP_UNSUPPORTED,
	  "this host exposes no PMU; run on bare metal or a VM with a virtual PMU (vPMU)" },
	{ "hardware.value.counters.*", EV_GAP_PERMISSION_DENIED,
	  "run khbpf as root, grant CAP_PERFMON, or set kernel.perf_event_paranoid to 2 or less" },
	{ "hardware.value.counters.*", EV_GAP_UNAVAILABLE,
	  "the PMU was time-shared (multiplexed) or unreadable: khbpf gives gaps, not estimates; collect with fewer perf users on the host" },
	{ "hardware.value.span_aggregation", EV_GAP_COLLECTOR_DISABLED,
	  "no span probes were attached; annotate functions with KHBPF_SPAN or pass --span" },
	{ "hardware.value.utilization.frequency_availability", EV_GAP_UNSUPPORTED,
	  "no cpufreq in sysfs (usual in VMs); run on bare metal for CPU frequency samples" },
	{ "hardware.value.utilization.*_milli", EV_GAP_UNAVAILABLE,
	  "a ratio with a zero divisor or a gapped input: nothing more to fix than that input" },
	{ "*_milli", EV_GAP_UNAVAILABLE,
	  "a ratio: a gap when its numerator or divisor is one, or the divisor is zero; nothing to fix beyond those inputs" },
	{ "hardware.value.topology.cpu_quota_milli", EV_GAP_UNAVAILABLE,
	  "the target's cgroups set no CPU quota (unbounded): nothing to fix" },
	{ "hardware.value.topology.affinity_cpus", EV_GAP_UNAVAILABLE,
	  "read at the window's end, after the target had exited: nothing to fix (attach to a live process to get it)" },
	{ "hardware.value.topology.*", EV_GAP_UNSUPPORTED,
	  "this host's sysfs has no CPU topology; run where /sys/devices/system/cpu is complete" },
	{ "*bpf_detail", EV_GAP_PERMISSION_DENIED,
	  "BPF was not allowed: run khbpf as root or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE" },
	{ "*scheduler_detail", EV_GAP_PERMISSION_DENIED,
	  "BPF was not allowed: run khbpf as root or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE" },
	{ "*_detail", EV_GAP_COLLECTOR_DISABLED,
	  "--no-bpf was given; collect without it for every runqueue wait on its own" },
	{ "*_detail", EV_GAP_UNSUPPORTED,
	  "this kernel cannot run khbpf's BPF programs (BTF, tp_btf, task storage); see 'khbpf probe'" },
	{ "hardware.value.scheduler.*", EV_GAP_UNAVAILABLE,
	  "process totals need every thread, and /proc cannot see threads that end inside the window; run as root so BPF counts them all" },
	{ "threads[*].*", EV_GAP_UNAVAILABLE,
	  "the thread was not seen at both ends of the window (/proc cannot see threads that end inside it); run as root so BPF records every thread" },
	{ "events.spans[*].parent_span_id", EV_GAP_UNAVAILABLE,
	  "a root span: no span on its thread encloses it; nothing to fix" },
	{ "open_spans[*].parent_span_id", EV_GAP_UNAVAILABLE,
	  "a root span: no span on its thread encloses it; nothing to fix" },
	{ "events.spans[*].task_id", ANY_GAP,
	  "not observable from the kernel: khbpf sees threads, not the program's own task ids; nothing to fix" },
	{ "events.spans[*].worker_id", ANY_GAP,
	  "not observable from the kernel: khbpf sees threads, not the program's own worker ids; nothing to fix" },
	{ "events.spans[*].hardware*", EV_GAP_UNSUPPORTED,
	  "per-span counters need a PMU; run on bare metal or a VM with a virtual PMU (vPMU)" },
	{ "events.spans[*].hardware*", EV_GAP_COLLECTOR_DISABLED,
	  "--counter-events=none was given; collect without it" },
	{ "events.spans[*].hardware*", EV_GAP_UNAVAILABLE,
	  "the counter was multiplexed or could not be read with the clock while the span was open (see loss.span_counter_reads_skewed)" },
	{ "events.spans[*].scheduler.on_cpu_ns", EV_GAP_UNAVAILABLE,
	  "a switch-in was missed while the span was open (loss.span_clock_missed_switch_ins)" },
	{ "events.availability", EV_GAP_COLLECTOR_DISABLED,
	  "no span sites: annotate functions with KHBPF_SPAN or pass --span [OBJECT:]SYMBOL" },
	{ "events.availability", EV_GAP_PERMISSION_DENIED,
	  "uprobes need CAP_BPF and CAP_PERFMON: run khbpf as root" },
	{ "events.availability", EV_GAP_UNSUPPORTED,
	  "this kernel cannot run khbpf's uprobe programs; see 'khbpf probe'" },
	{ "overhead.*", EV_GAP_COLLECTOR_DISABLED,
	  "collect with --bpf-stats to time khbpf's own BPF programs" },
	{ "pressure.*.cpu_full_*", EV_GAP_UNSUPPORTED,
	  "the system's cpu full (host and root cgroup) is a constant 0 in the kernel, and kernels before 5.13 have no cpu full line: not a measurement; nothing to fix" },
	{ "pressure.cgroup.*", EV_GAP_UNSUPPORTED,
	  "the target's cgroup has no PSI: no cgroup v2, or PSI off for it (pressure.cgroup.detail says which)" },
	{ "pressure.*", EV_GAP_UNSUPPORTED,
	  "no pressure stall information: a kernel without CONFIG_PSI, or booted with psi=0; boot one with it" },
	{ "pressure.*", ANY_GAP,
	  "the scope's detail (pressure.host.detail, pressure.cgroup.detail) names the file and the cause" },
	{ "thermal.*", EV_GAP_UNSUPPORTED,
	  "no thermal zones or thermal_throttle in sysfs (usual in VMs; thermal.detail says which); run on bare metal for thermal evidence" },
	{ "thermal.*", ANY_GAP, "thermal.detail names what could not be read" },
	{ "*.blocked", EV_GAP_COLLECTOR_DISABLED,
	  "off by default: --blocked measures it (--wakers also names who woke each wait)" },
	{ "*.blocked", EV_GAP_UNSUPPORTED,
	  "--blocked was given, but this kernel's BPF cannot time blocked stretches; see 'khbpf probe'" },
	{ "processes[*].title.*", EV_GAP_UNSUPPORTED,
	  "a kernel thread: it has no command line (ps shows its comm in brackets); nothing to fix" },
	{ "processes[*].title.*", EV_GAP_PERMISSION_DENIED,
	  "/proc/PID/cmdline was refused (/proc mounted with hidepid): run khbpf as root" },
	{ "processes[*].title.at_end*", EV_GAP_UNAVAILABLE,
	  "the process had ended (or was a zombie) at the window's end: its title at its join is kept; nothing to fix" },
	{ "processes[*].title.at_join*", EV_GAP_UNAVAILABLE,
	  "read at the loader's first tick after the process joined: one forked in the window that ended before it has none; a shorter --interval reads more" },
	{ "target.exit", EV_GAP_UNAVAILABLE,
	  "still running at the window's end (attach and serve never reap their target): nothing to fix" },
	{ "processes[*].exit", EV_GAP_UNAVAILABLE,
	  "still running at the window's end: nothing to fix" },
	{ "target.exe", EV_GAP_PERMISSION_DENIED,
	  "/proc/PID/exe of another user's process needs root" },
};

static const char *const reason_hints[EV_GAP__COUNT] = {
	[EV_GAP_UNAVAILABLE] =
		"it exists but could not be read this time; check the collectors' details and the loss counters, then collect again",
	[EV_GAP_LEGACY_V1_NOT_RECORDED] =
		"the producer did not record this field; collect again with a current khbpf",
	[EV_GAP_COLLECTOR_DISABLED] =
		"not collected in this run: docs/evidence.md names, for each field, the option that collects it",
	[EV_GAP_PERMISSION_DENIED] =
		"run khbpf as root, or grant CAP_BPF and CAP_PERFMON (see 'khbpf probe')",
	[EV_GAP_UNSUPPORTED] =
		"this host, kernel or CPU does not provide it; collect on one that does (see 'khbpf probe')",
};

const char *report__gap_hint(const char *path, enum ev_gap reason)
{
	size_t i;

	for (i = 0; i < sizeof(gap_hints) / sizeof(gap_hints[0]); i++) {
		const struct gap_hint *h = &gap_hints[i];

		if ((h->reason == ANY_GAP || h->reason == reason) && glob_match(h->path, path))
			return h->hint;
	}
	return reason < EV_GAP__COUNT ? reason_hints[reason] : reason_hints[EV_GAP_UNAVAILABLE];
}

const char *report__availability_hint(const char *availability)
{
	int i;

	for (i = 0; availability && i < AVAIL__COUNT; i++)
		if (!strcmp(availability, collector_availability__name(i)))
			return reason_hints[collector_availability__gap(i)];
	return reason_hints[EV_GAP_UNAVAILABLE];
}

enum report_gap_kind report__gap_kind(const struct report_gap *g)
{
	if (g->hint && strstr(g->hint, "nothing to fix"))
		return REPORT_GAP_NOTHING_TO_FIX;
	if (g->reason == EV_GAP_UNSUPPORTED || g->reason == EV_GAP_LEGACY_V1_NOT_RECORDED)
		return REPORT_GAP_HOST_CANNOT;
	return REPORT_GAP_FIXABLE;
}
