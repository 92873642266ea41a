// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "host/cgroup.h"
#include "host/cpufreq.h"
#include "lib/fsutil.h"
#include "host/probe.h"
#include "khbpf/probe.h"
#include "probe.skel.h"
#include "host/topology.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#define TRACEFS_MAGIC_NR 0x74726163
#define UPROBE_SELFTEST_CALLS 3
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const check_names[PROBE_CHECK__COUNT] = {
	[PROBE_CHECK_KERNEL_BTF] = "kernel-btf",
	[PROBE_CHECK_CAPABILITIES] = "capabilities",
	[PROBE_CHECK_BPF_LOAD] = "bpf-load",
	[PROBE_CHECK_TP_SCHED_SWITCH] = "tp-btf-sched-switch",
	[PROBE_CHECK_TP_SCHED_WAKEUP] = "tp-btf-sched-wakeup",
	[PROBE_CHECK_TP_SCHED_WAKEUP_NEW] = "tp-btf-sched-wakeup-new",
	[PROBE_CHECK_TP_SCHED_MIGRATE_TASK] = "tp-btf-sched-migrate-task",
	[PROBE_CHECK_TP_SCHED_PROCESS_EXIT] = "tp-btf-sched-process-exit",
	[PROBE_CHECK_UPROBE] = "uprobe",
	[PROBE_CHECK_RINGBUF] = "ringbuf-map",
	[PROBE_CHECK_TASK_STORAGE] = "task-storage-map",
	[PROBE_CHECK_PERF_HARDWARE] = "perf-hardware-counters",
	[PROBE_CHECK_PERF_SOFTWARE] = "perf-software-cpu-clock",
	[PROBE_CHECK_TRACEFS] = "tracefs",
	[PROBE_CHECK_PROC_TASKS] = "proc-task-stats",
	[PROBE_CHECK_TOPOLOGY] = "sysfs-topology",
	[PROBE_CHECK_CPUFREQ] = "cpufreq",
	[PROBE_CHECK_CGROUP] = "cgroup",
};

const char *probe_check__name(enum probe_check_id id)
{
	return (unsigned int)id < PROBE_CHECK__COUNT ? check_names[id] : "invalid";
}

const char *probe_result__name(enum probe_result r)
{
	switch (r) {
	case PROBE_RESULT_OK:
		return "ok";
	case PROBE_RESULT_SKIPPED:
		return "skipped";
	default:
		return "failed";
	}
}

static void check_set(struct probe_check *c, enum probe_result r, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void check_set(struct probe_check *c, enum probe_result r, int err, const char *fmt, ...)
{
	va_list ap;

	c->result = r;
	c->err = err;
	c->detail[0] = '\0';
	if (!fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

enum collector_availability probe__perf_availability(int err, int paranoid, char *detail,
						     size_t size)
{
	char para[32] = "unknown";

	if (err >= 0) {
		if (size)
			detail[0] = '\0';
		return AVAIL_AVAILABLE;
	}
	if (paranoid != INT32_MIN)
		snprintf(para, sizeof(para), "%d", paranoid);
	switch (-err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		snprintf(
			detail, size,
			"perf_event_open: no hardware PMU events on this host (%s); run on bare metal or a VM with a virtual PMU",
			strerror(-err));
		return AVAIL_UNSUPPORTED;
	case EACCES:
	case EPERM:
		snprintf(
			detail, size,
			"perf_event_open denied: perf_event_paranoid=%s; run as root, grant CAP_PERFMON, or set kernel.perf_event_paranoid<=1 (the counts include kernel time)",
			para);
		return AVAIL_PERMISSION_DENIED;
	default:
		snprintf(detail, size, "perf_event_open failed: %s", strerror(-err));
		return AVAIL_UNAVAILABLE;
	}
}

enum collector_availability probe__bpf_availability(int err, bool have_btf, char *detail,
						    size_t size)
{
	if (!have_btf) {
		snprintf(
			detail, size,
			"kernel BTF missing (/sys/kernel/btf/vmlinux); boot a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		return AVAIL_UNSUPPORTED;
	}
	if (err >= 0) {
		if (size)
			detail[0] = '\0';
		return AVAIL_AVAILABLE;
	}
	switch (-err) {
	case EPERM:
	case EACCES:
		snprintf(
			detail, size,
			"bpf() denied (%s); run as root or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE",
			strerror(-err));
		return AVAIL_PERMISSION_DENIED;
	case ENOENT:
	case EOPNOTSUPP:
	case ENOSYS:
	case EINVAL:
		snprintf(
			detail, size,
			"kernel rejected the BPF program or attach point (%s); see the kernel features of `khbpf probe`, and the verifier's log with `khbpf -v probe`",
			strerror(-err));
		return AVAIL_UNSUPPORTED;
	default:
		snprintf(detail, size, "BPF load/attach failed: %s", strerror(-err));
		return AVAIL_UNAVAILABLE;
	}
}

__attribute__((noinline, used)) void khbpf_probe_uprobe_target(int arg)
{
	/* The asm keeps the call and the function body from being folded away. */
	__asm__ volatile("" : : "r"(arg) : "memory");
}

int probe__perf_paranoid(const char *root)
{
	char buf[32];
	char *end;
	long v;

	if (fsutil__read_file(root, "/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)) < 0)
		return INT32_MIN;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || v < INT32_MIN + 1 || v > INT32_MAX)
		return INT32_MIN;
	return (int)v;
}

static int perf_open(pid_t pid, uint32_t type, uint64_t config)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.config = config,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	long fd;

	fd = syscall(__NR_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

int probe__perf_hw_open(pid_t pid)
{
	int err = perf_open(pid, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);

	return err ?: perf_open(pid, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
}

static void probe_capabilities(struct probe_check *c, bool *bpf_caps)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};
	uint64_t eff;

	*bpf_caps = false;
	if (syscall(SYS_capget, &hdr, data)) {
		check_set(c, PROBE_RESULT_FAILED, -errno, "capget: %s", strerror(errno));
		return;
	}
	eff = (uint64_t)data[1].effective << 32 | data[0].effective;
#define HAS(cap) (!!(eff & (1ULL << (cap))))
	*bpf_caps = HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON));
	check_set(c, *bpf_caps ? PROBE_RESULT_OK : PROBE_RESULT_FAILED, 0,
		  "uid=%u CAP_SYS_ADMIN=%s CAP_BPF=%s CAP_PERFMON=%s CAP_SYS_RESOURCE=%s",
		  (unsigned int)geteuid(), HAS(CAP_SYS_ADMIN) ? "yes" : "no",
		  HAS(CAP_BPF) ? "yes" : "no", HAS(CAP_PERFMON) ? "yes" : "no",
		  HAS(CAP_SYS_RESOURCE) ? "yes" : "no");
#undef HAS
}

/* File offset of addr in its mapping of the running binary, from /proc/self/maps. */
static int self_file_offset(const void *addr, char *path, size_t path_size, size_t *offset)
{
	uintptr_t a = (uintptr_t)addr;
	char line[PATH_MAX + 128];
	FILE *f;
	int err = -ENOENT;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &pgoff, &pos) <
			    4 ||
		    !pos)
			continue;
		if (a < start || a >= end || perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (line[pos] != '/' ||
		    snprintf(path, path_size, "%s", line + pos) >= (int)path_size)
			break;
		*offset = a - start + pgoff;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

struct tp_check {
	enum probe_check_id check;
	int hit;
	const char *tracepoint;
};

static const struct tp_check tp_checks[] = {
	{ PROBE_CHECK_TP_SCHED_SWITCH, PROBE_HIT_SCHED_SWITCH, "sched_switch" },
	{ PROBE_CHECK_TP_SCHED_WAKEUP, PROBE_HIT_SCHED_WAKEUP, "sched_wakeup" },
	{ PROBE_CHECK_TP_SCHED_WAKEUP_NEW, PROBE_HIT_SCHED_WAKEUP_NEW, "sched_wakeup_new" },
	{ PROBE_CHECK_TP_SCHED_MIGRATE_TASK, PROBE_HIT_SCHED_MIGRATE_TASK, "sched_migrate_task" },
	{ PROBE_CHECK_TP_SCHED_PROCESS_EXIT, PROBE_HIT_SCHED_PROCESS_EXIT, "sched_process_exit" },
};

static struct bpf_program *tp_program(struct probe_bpf *skel, int hit)
{
	switch (hit) {
	case PROBE_HIT_SCHED_SWITCH:
		return skel->progs.probe_sched_switch;
	case PROBE_HIT_SCHED_WAKEUP:
		return skel->progs.probe_sched_wakeup;
	case PROBE_HIT_SCHED_WAKEUP_NEW:
		return skel->progs.probe_sched_wakeup_new;
	case PROBE_HIT_SCHED_MIGRATE_TASK:
		return skel->progs.probe_sched_migrate_task;
	default:
		return skel->progs.probe_sched_process_exit;
	}
}

/*
 * Make every watched event happen: sleep (switch + wakeup), then fork a child
 * (wakeup_new) that moves itself to another CPU (migrate) and exits.
 */
static void provoke_scheduler_events(void)
{
	cpu_set_t set;
	pid_t child;
	int i;

	for (i = 0; i < 3; i++)
		usleep(1000);
	child = fork();
	if (child == 0) {
		int cpu = sched_getcpu();
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		int target = n > 1 ? (cpu + 1) % (int)n : cpu;

		CPU_ZERO(&set);
		CPU_SET(target, &set);
		sched_setaffinity(0, sizeof(set), &set);
		usleep(1000);
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
}

static void probe_bpf(struct probe_report *r, bool have_btf)
{
	struct probe_check *load = &r->checks[PROBE_CHECK_BPF_LOAD];
	struct bpf_link *links[ARRAY_SIZE(tp_checks)] = {};
	struct bpf_link *ulink = NULL;
	struct probe_bpf *skel = NULL;
	char path[PATH_MAX] = "/proc/self/exe";
	size_t i, off = 0;
	int err, tp_err = 0;

	skel = probe_bpf__open();
	if (!skel) {
		err = -errno;
		check_set(load, PROBE_RESULT_FAILED, err, "open BPF object: %s", strerror(-err));
		goto cleanup_skip;
	}
	skel->bss->probe_tgid = (uint32_t)getpid();
	err = probe_bpf__load(skel);
	if (err) {
		check_set(load, PROBE_RESULT_FAILED, err, "load BPF programs: %s", strerror(-err));
		goto cleanup_skip;
	}
	check_set(load, PROBE_RESULT_OK, 0, "tp_btf and uprobe programs verified");

	for (i = 0; i < ARRAY_SIZE(tp_checks); i++) {
		struct probe_check *c = &r->checks[tp_checks[i].check];

		links[i] = bpf_program__attach(tp_program(skel, tp_checks[i].hit));
		if (!links[i]) {
			err = -errno;
			tp_err = tp_err ? tp_err : err;
			check_set(c, PROBE_RESULT_FAILED, err, "attach tp_btf/%s: %s",
				  tp_checks[i].tracepoint, strerror(-err));
		}
	}

	err = self_file_offset((const void *)khbpf_probe_uprobe_target, path, sizeof(path), &off);
	if (!err) {
		ulink = bpf_program__attach_uprobe(skel->progs.probe_uprobe, false, getpid(), path,
						   off);
		if (!ulink)
			err = -errno;
	}
	if (err)
		check_set(&r->checks[PROBE_CHECK_UPROBE], PROBE_RESULT_FAILED, err,
			  "attach uprobe to %s: %s", path, strerror(-err));

	provoke_scheduler_events();
	for (i = 0; i < UPROBE_SELFTEST_CALLS; i++)
		khbpf_probe_uprobe_target((int)i);

	for (i = 0; i < ARRAY_SIZE(tp_checks); i++) {
		struct probe_check *c = &r->checks[tp_checks[i].check];
		uint64_t n = skel->bss->hits[tp_checks[i].hit];

		if (!links[i])
			continue;
		c->observed = n;
		/* A single-CPU host cannot migrate: attached is all it can prove. */
		if (n || (tp_checks[i].hit == PROBE_HIT_SCHED_MIGRATE_TASK &&
			  sysconf(_SC_NPROCESSORS_ONLN) < 2))
			check_set(c, PROBE_RESULT_OK, 0, "attached; %" PRIu64 " events observed",
				  n);
		else
			check_set(c, PROBE_RESULT_FAILED, -ENODATA,
				  "attached, but no event observed after provoking one");
	}
	if (ulink) {
		uint64_t n = skel->bss->hits[PROBE_HIT_UPROBE];

		r->checks[PROBE_CHECK_UPROBE].observed = n;
		if (n == UPROBE_SELFTEST_CALLS)
			check_set(&r->checks[PROBE_CHECK_UPROBE], PROBE_RESULT_OK, 0,
				  "attached; %" PRIu64 " of %d calls observed", n,
				  UPROBE_SELFTEST_CALLS);
		else
			check_set(&r->checks[PROBE_CHECK_UPROBE], PROBE_RESULT_FAILED, -ENODATA,
				  "attached, but observed %" PRIu64 " of %d calls", n,
				  UPROBE_SELFTEST_CALLS);
	}

	bpf_link__destroy(ulink);
	for (i = ARRAY_SIZE(links); i-- > 0;)
		bpf_link__destroy(links[i]);
	probe_bpf__destroy(skel);
	(void)have_btf;
	return;

cleanup_skip:
	for (i = 0; i < ARRAY_SIZE(tp_checks); i++)
		check_set(&r->checks[tp_checks[i].check], PROBE_RESULT_SKIPPED, err,
			  "BPF object did not load");
	check_set(&r->checks[PROBE_CHECK_UPROBE], PROBE_RESULT_SKIPPED, err,
		  "BPF object did not load");
	probe_bpf__destroy(skel);
	(void)tp_err;
}

static void probe_map_type(struct probe_check *c, enum bpf_map_type type)
{
	int ret = libbpf_probe_bpf_map_type(type, NULL);

	if (ret == 1)
		check_set(c, PROBE_RESULT_OK, 0, "supported");
	else if (ret == 0)
		check_set(c, PROBE_RESULT_FAILED, -EOPNOTSUPP, "not supported by this kernel");
	else
		check_set(c, PROBE_RESULT_FAILED, ret, "probe failed: %s", strerror(-ret));
}

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

int probe__run(struct probe_report *r, const struct probe_opts *opts)
{
	const char *root = opts && opts->root ? opts->root : "/";
	bool verbose = opts && opts->verbose;
	enum collector_availability av;
	struct host_topology topo = {};
	struct collector_capability *cap;
	libbpf_print_fn_t old_print = NULL;
	char detail[256], path[PATH_MAX];
	struct cpu_frequency_sample freq;
	enum ev_gap freq_gap;
	bool have_btf, bpf_caps;
	enum cgroup_mode cgmode;
	struct statfs sfs;
	struct utsname u;
	struct btf *btf;
	int err, perr, i;
	DIR *d;

	memset(r, 0, sizeof(*r));
	r->kernel_release[0] = '\0';
	if (!uname(&u))
		snprintf(r->kernel_release, sizeof(r->kernel_release), "%s", u.release);
	r->perf_event_paranoid = probe__perf_paranoid(root);

	btf = btf__load_vmlinux_btf();
	err = libbpf_get_error(btf) ? -errno : 0;
	have_btf = !err;
	if (have_btf)
		check_set(&r->checks[PROBE_CHECK_KERNEL_BTF], PROBE_RESULT_OK, 0,
			  "/sys/kernel/btf/vmlinux (%u types)", btf__type_cnt(btf));
	else
		check_set(&r->checks[PROBE_CHECK_KERNEL_BTF], PROBE_RESULT_FAILED, err,
			  "no kernel BTF: %s", strerror(-err));
	btf__free(have_btf ? btf : NULL);

	probe_capabilities(&r->checks[PROBE_CHECK_CAPABILITIES], &bpf_caps);

	/* Failures below are reported as checks; libbpf's own log would repeat them. */
	if (!verbose)
		old_print = libbpf_set_print(silent_print);
	/* Without CAP_BPF a map probe fails for lack of privilege, not support. */
	if (bpf_caps) {
		probe_map_type(&r->checks[PROBE_CHECK_RINGBUF], BPF_MAP_TYPE_RINGBUF);
		probe_map_type(&r->checks[PROBE_CHECK_TASK_STORAGE], BPF_MAP_TYPE_TASK_STORAGE);
	} else {
		check_set(&r->checks[PROBE_CHECK_RINGBUF], PROBE_RESULT_SKIPPED, -EPERM,
			  "probing map types needs CAP_BPF");
		check_set(&r->checks[PROBE_CHECK_TASK_STORAGE], PROBE_RESULT_SKIPPED, -EPERM,
			  "probing map types needs CAP_BPF");
	}
	probe_bpf(r, have_btf);
	/* The same detection the collector makes its choices from. */
	kfeatures__detect(&r->features, bpf_caps);
	if (!verbose)
		libbpf_set_print(old_print);

	perr = probe__perf_hw_open(0);
	av = probe__perf_availability(perr, r->perf_event_paranoid, detail, sizeof(detail));
	check_set(&r->checks[PROBE_CHECK_PERF_HARDWARE],
		  perr ? PROBE_RESULT_FAILED : PROBE_RESULT_OK, perr, "%s",
		  perr ? detail : "cycles and instructions open");
	cap = &r->collectors[0];
	collector_capability__set(cap, COLLECTOR_HARDWARE_COUNTERS, av, "%s", detail);

	err = perf_open(0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
	check_set(&r->checks[PROBE_CHECK_PERF_SOFTWARE],
		  err ? PROBE_RESULT_FAILED : PROBE_RESULT_OK, err, "%s",
		  err ? strerror(-err) : "cpu-clock opens");

	/* Scheduler collector: BTF, load, and all five tracepoints firing. */
	err = r->checks[PROBE_CHECK_BPF_LOAD].err;
	for (i = PROBE_CHECK_TP_SCHED_SWITCH; !err && i <= PROBE_CHECK_TP_SCHED_PROCESS_EXIT; i++)
		err = r->checks[i].err;
	av = probe__bpf_availability(err, have_btf, detail, sizeof(detail));
	if (av == AVAIL_UNAVAILABLE && err == -ENODATA)
		snprintf(
			detail, sizeof(detail),
			"scheduler tracepoints attached but did not fire; check `khbpf probe` checks");
	collector_capability__set(&r->collectors[1], COLLECTOR_SCHEDULER_ACTIVITY, av, "%s",
				  detail);

	err = r->checks[PROBE_CHECK_BPF_LOAD].err;
	if (!err)
		err = r->checks[PROBE_CHECK_UPROBE].err;
	av = probe__bpf_availability(err, have_btf, detail, sizeof(detail));
	if (av == AVAIL_UNAVAILABLE && err == -ENODATA)
		snprintf(detail, sizeof(detail), "uprobe attached but missed calls; %.200s",
			 r->checks[PROBE_CHECK_UPROBE].detail);
	collector_capability__set(&r->collectors[2], COLLECTOR_SPAN_PROBES, av, "%s", detail);

	/* Per-thread CPU census reads /proc/PID/task/TID/schedstat. */
	err = fsutil__path(path, sizeof(path), root, "/proc/%d/task", (int)getpid());
	err = err < 0 ? err : 0;
	d = err ? NULL : opendir(path);
	if (d) {
		closedir(d);
		err = fsutil__path(path, sizeof(path), root, "/proc/%d/task/%d/schedstat",
				   (int)getpid(), (int)gettid());
		err = err < 0 ? err : (access(path, R_OK) ? -errno : 0);
	} else if (!err) {
		err = -errno;
	}
	check_set(&r->checks[PROBE_CHECK_PROC_TASKS], err ? PROBE_RESULT_FAILED : PROBE_RESULT_OK,
		  err, err ? "%s: %s" : "%s readable", path, err ? strerror(-err) : "");
	if (!err)
		collector_capability__set(&r->collectors[3], COLLECTOR_THREAD_UTILIZATION,
					  AVAIL_AVAILABLE, NULL);
	else
		collector_capability__set(
			&r->collectors[3], COLLECTOR_THREAD_UTILIZATION,
			err == -EACCES || err == -EPERM ? AVAIL_PERMISSION_DENIED :
							  AVAIL_UNSUPPORTED,
			"cannot read per-thread schedstat (%s); mount /proc and enable CONFIG_SCHED_INFO",
			strerror(-err));

	err = host_topology__read(&topo, root);
	r->logical_cpus = topo.logical_cpus;
	r->physical_cores = topo.physical_cores;
	r->packages = topo.packages;
	r->numa_nodes = topo.numa_nodes;
	r->llc_groups = topo.nr_llc_groups;
	if (!err && topo.logical_cpus) {
		check_set(&r->checks[PROBE_CHECK_TOPOLOGY], PROBE_RESULT_OK, 0,
			  "%u logical CPUs, %u LLC groups", topo.logical_cpus, topo.nr_llc_groups);
		collector_capability__set(&r->collectors[4], COLLECTOR_CPU_TOPOLOGY,
					  AVAIL_AVAILABLE, NULL);
	} else {
		err = err ? err : -ENOENT;
		check_set(&r->checks[PROBE_CHECK_TOPOLOGY], PROBE_RESULT_FAILED, err,
			  "/sys/devices/system/cpu: %s", strerror(-err));
		collector_capability__set(
			&r->collectors[4], COLLECTOR_CPU_TOPOLOGY, AVAIL_UNAVAILABLE,
			"cannot read CPU topology from sysfs (%s); mount /sys", strerror(-err));
	}
	host_topology__free(&topo);

	err = cpufreq__sample(root, 0, &freq, &freq_gap);
	if (!err)
		check_set(&r->checks[PROBE_CHECK_CPUFREQ], PROBE_RESULT_OK, 0,
			  "%u CPUs, %" PRIu64 "-%" PRIu64 " kHz", freq.cpu_count, freq.min_khz,
			  freq.max_khz);
	else
		check_set(&r->checks[PROBE_CHECK_CPUFREQ], PROBE_RESULT_FAILED, err,
			  "frequency samples will be the gap '%s' (no readable scaling_cur_freq)",
			  ev_gap__name(freq_gap));

	cgmode = cgroup_mode__detect(root);
	r->cgroup_mode = cgroup_mode__name(cgmode);
	check_set(&r->checks[PROBE_CHECK_CGROUP],
		  cgmode == CGROUP_MODE_UNKNOWN ? PROBE_RESULT_FAILED : PROBE_RESULT_OK, 0,
		  "cgroup %s", r->cgroup_mode);

	err = fsutil__path(path, sizeof(path), root, "/sys/kernel/tracing");
	if (err >= 0 && !statfs(path, &sfs) && sfs.f_type == TRACEFS_MAGIC_NR)
		check_set(&r->checks[PROBE_CHECK_TRACEFS], PROBE_RESULT_OK, 0, "mounted at %s",
			  path);
	else
		check_set(
			&r->checks[PROBE_CHECK_TRACEFS], PROBE_RESULT_SKIPPED, -ENOENT,
			"not mounted (not needed for tp_btf or uprobes); mount -t tracefs nodev /sys/kernel/tracing");
	return 0;
}
