// SPDX-License-Identifier: GPL-2.0
/*
 * Spans: uprobe programs attached at each span site's entry and return
 * time each call with the thread's own scheduler ledger and counters, into
 * per-thread aggregates (span_agg) and per-call records (span_events). The
 * span clock is kept at switches by sched.bpf.c; both are linked into one
 * object and share its maps (khbpf.bpf.h).
 */
#include "khbpf.bpf.h"
#include "group.bpf.h"

/*
 * The span programs get `current` from bpf_get_current_task_btf(), a
 * trusted BTF pointer: its fields are plain loads (still CO-RE relocated),
 * no bpf_probe_read_kernel() call each. That is most of a span's cost.
 * Kernels without that helper give an untyped pointer, read with
 * bpf_probe_read_kernel() (BPF_CORE_READ) instead.
 */
#define CUR_READ(task, field) (have_task_btf ? (task)->field : BPF_CORE_READ(task, field))

static __always_inline struct task_struct *current_task(void)
{
	if (have_task_btf)
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

/*
 * Sites attached per file (span_filter: a set that grows, whose new
 * processes share the parent's mappings) are hit by every process that maps
 * the file; only the set's members are measured. With task storage, one
 * that has none at all ends here after one load.
 */
static __always_inline bool span_member(struct task_struct *task)
{
	struct khbpf_task_state *st;
	__u64 key = (__u64)task;

	if (!span_filter)
		return true;
	/*
	 * serve without a set: every task (a uprobe runs in a user task, never
	 * pid 0), or those of its --cgroup filters. Not is_target(): its plain
	 * loads need the trusted pointer kernels before 5.11 do not give here.
	 */
	if (!set_mode)
		return !nr_cgroup_filters || in_cgroup_filter(task);
	if (have_task_btf)
		return member_state(task) != NULL;
	/* No BTF pointer (kernels before 5.11, and so no task storage): the hash, read by copy. */
	st = bpf_map_lookup_elem(&task_state_h, &key);
	return st && (st->member & KHBPF_MEMBER) && st->tid == (__u32)BPF_CORE_READ(task, pid) &&
	       st->start_time == BPF_CORE_READ(task, start_time);
}

static __always_inline void span_mark_member(struct task_struct *task)
{
	struct khbpf_task_state *st = member_state(task);

	if (st)
		st->member |= KHBPF_MEMBER_SPANS;
}

static __always_inline __u64 switches(struct task_struct *task)
{
	return CUR_READ(task, nvcsw) + CUR_READ(task, nivcsw);
}

/*
 * The current thread's ledger and counter readings and the time, taken
 * together. A uprobe program can be preempted (it only disables migration),
 * so a reading that a context switch cut in two is taken again.
 */
static __always_inline __u64 ledger_now(struct task_struct *task, struct khbpf_span_clock *ck,
					struct khbpf_span_ledger *l, struct khbpf_vreading *hw,
					bool start)
{
	__u64 now = 0, before;
	struct khbpf_ctr_read r;
	bool skewed;
	int i, j, ok;

	for (i = 0; i < READ_TRIES; i++) {
		before = switches(task);
		now = bpf_ktime_get_ns();
		if (start) {
			/* The thread's first open span starts its clock here. */
			ck->switched_in = now;
		} else if (ck->switched_out > ck->switched_in) {
			/* Running, yet the last thing seen was a switch-out. */
			ck->clock_gaps++;
			__sync_fetch_and_add(&span_clock_gaps, 1);
			ck->switched_in = now;
		}
		l->on_cpu_ns = ck->oncpu_acc + (now > ck->switched_in ? now - ck->switched_in : 0);
		for (j = 0; j < KHBPF_NR_COUNTERS; j++) {
			if (j >= nr_counters)
				break;
			ok = counter_read(j, &r);
			if (start)
				khbpf_vctr_in(&ck->ctr[j], &r, ok);
			khbpf_vctr_now(&ck->ctr[j], &r, ok, &hw[j]);
		}
		skewed = read_skewed(now);
		if (bpf_core_field_exists(task->sched_info))
			l->run_delay_ns = CUR_READ(task, sched_info.run_delay);
		else
			l->run_delay_ns = 0;
		l->nvcsw = CUR_READ(task, nvcsw);
		l->nivcsw = CUR_READ(task, nivcsw);
		l->migrations = CUR_READ(task, se.nr_migrations);
		l->offcpu_ns = ck->offcpu_ns;
		l->blocked = ck->blocked;
		if (switches(task) == before && !skewed)
			break;
	}
	if (skewed)
		__sync_fetch_and_add(&span_counter_skews, 1);
	for (j = 0; skewed && j < KHBPF_NR_COUNTERS; j++) {
		hw[j].ok = 0;
		if (start)
			ck->ctr[j].in_valid = 0;
	}
	return now;
}

static __always_inline __u64 sub0(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/*
 * Kernels without attach cookies (before bpf_get_attach_cookie) keep the
 * VMA tree as an rbtree (the maple tree came later): the probed address's
 * mapping gives its file and offset, which span_site_metric maps to the
 * metric. Walked down from the root, at most SITE_WALK_MAX levels.
 */
struct mm_struct___rb {
	struct rb_root mm_rb;
} __attribute__((preserve_access_index));

struct vm_area_struct___rb {
	unsigned long vm_start;
	unsigned long vm_end;
	struct rb_node vm_rb;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

#define SITE_WALK_MAX 64
#define SITE_PAGE_SHIFT 12

/*
 * The metric of the site at user address ip for the program of role (a
 * KHBPF_SITE_*); 0 and *ok false when unknown. *slot (when not NULL) is
 * then its keyed argument's slot.
 */
static __always_inline __u32 site_metric(struct task_struct *task, __u64 ip, bool *ok, __u32 role,
					 __u32 *slot)
{
	struct mm_struct___rb *mm = (void *)BPF_CORE_READ(task, mm);
	struct vm_area_struct___rb *vma = NULL;
	struct khbpf_site_key key = {};
	struct khbpf_site_val *m;
	struct rb_node *node;
	__u64 off_rb, start, end;
	__u32 i;

	*ok = false;
	if (!bpf_core_field_exists(mm->mm_rb) ||
	    !bpf_core_field_exists(((struct vm_area_struct___rb *)0)->vm_rb))
		return 0;
	off_rb = bpf_core_field_offset(struct vm_area_struct___rb, vm_rb);
	node = BPF_CORE_READ(mm, mm_rb.rb_node);
	for (i = 0; i < SITE_WALK_MAX && node; i++) {
		struct vm_area_struct___rb *v = (void *)((char *)node - off_rb);

		start = BPF_CORE_READ(v, vm_start);
		end = BPF_CORE_READ(v, vm_end);
		if (ip < start) {
			node = BPF_CORE_READ(node, rb_left);
		} else if (ip >= end) {
			node = BPF_CORE_READ(node, rb_right);
		} else {
			vma = v;
			break;
		}
	}
	if (!vma)
		return 0;
	key.ino = BPF_CORE_READ(vma, vm_file, f_inode, i_ino);
	key.offset = ip - start + (BPF_CORE_READ(vma, vm_pgoff) << SITE_PAGE_SHIFT);
	m = bpf_map_lookup_elem(&span_site_metric, &key);
	if (!m && key.offset) {
		/* Just past an int3, should a kernel report that. */
		key.offset--;
		m = bpf_map_lookup_elem(&span_site_metric, &key);
	}
	if (!m || role > KHBPF_SITE_HIT || m->metric[role & 1] == KHBPF_SITE_NONE)
		return 0;
	*ok = true;
	if (slot)
		*slot = m->slot[role & 1];
	return m->metric[role & 1];
}

/* The register at offset off of the probed thread's saved registers. */
static __always_inline bool reg_read(struct pt_regs *ctx, __u32 off, __u64 *v)
{
	if (off > sizeof(struct pt_regs) - sizeof(*v))
		return false;
	return !bpf_probe_read_kernel(v, sizeof(*v), (void *)ctx + off);
}

/* A site's keyed argument, as its spec says: sized and extended like the C type. */
static __always_inline bool arg_read(struct pt_regs *ctx, const struct khbpf_arg_spec *a, __u64 *v)
{
	__u64 r = 0;

	switch (a->type) {
	case KHBPF_ARG_IMM:
		*v = (__u64)a->val_off;
		return true;
	case KHBPF_ARG_REG:
		if (!reg_read(ctx, a->reg_off, &r))
			return false;
		break;
	case KHBPF_ARG_DEREF: {
		void *addr = NULL;
		long e;

		if (!reg_read(ctx, a->reg_off, (__u64 *)&addr))
			return false;
		addr += a->val_off;
		/* Constant sizes: what the verifier checks against r. */
		switch (a->size) {
		case 1:
			e = bpf_probe_read_user(&r, 1, addr);
			break;
		case 2:
			e = bpf_probe_read_user(&r, 2, addr);
			break;
		case 4:
			e = bpf_probe_read_user(&r, 4, addr);
			break;
		case 8:
			e = bpf_probe_read_user(&r, 8, addr);
			break;
		default:
			return false;
		}
		if (e)
			return false;
		break;
	}
	default:
		return false;
	}
	switch (a->size) {
	case 1:
		r = a->is_signed ? (__u64)(__s64)(__s8)r : (__u8)r;
		break;
	case 2:
		r = a->is_signed ? (__u64)(__s64)(__s16)r : (__u16)r;
		break;
	case 4:
		r = a->is_signed ? (__u64)(__s64)(__s32)r : (__u32)r;
		break;
	}
	*v = r;
	return true;
}

/*
 * What a call of metric counts under (--key): metric itself when it is not
 * keyed; else the metric id of the key read at this site (slot: its
 * argument spec, 1-based; 0 none), made at the key's first call while the
 * metric has fewer than its bound; else its "(other)".
 */
static __always_inline __u32 keyed_metric(struct pt_regs *ctx, __u32 metric, __u32 slot)
{
	__u32 zero = 0, other = KHBPF_OTHER_METRIC_BASE + metric, idx, id;
	struct khbpf_key_conf *kc;
	struct khbpf_arg_spec *a;
	struct khbpf_key *k;
	__u32 *found, *cnt;
	__u64 v = 0, *t;
	long n;

	if (!keys_enabled)
		return metric;
	kc = bpf_map_lookup_elem(&span_key_conf, &metric);
	if (!kc || kc->kind == KHBPF_KEY_NONE)
		return metric;
	idx = slot - 1;
	a = slot ? bpf_map_lookup_elem(&span_site_args, &idx) : NULL;
	k = bpf_map_lookup_elem(&key_scratch, &zero);
	if (!a || !k || !arg_read(ctx, a, &v)) {
		__sync_fetch_and_add(&span_key_unreadable, 1);
		return other;
	}
	__builtin_memset(k, 0, sizeof(*k));
	k->metric = metric;
	k->kind = kc->kind;
	if (kc->kind == KHBPF_KEY_STR) {
		n = bpf_probe_read_user_str(k->bytes, sizeof(k->bytes), (void *)v);
		if (n <= 0) {
			__sync_fetch_and_add(&span_key_unreadable, 1);
			return other;
		}
		if (n == sizeof(k->bytes))
			k->kind |= KHBPF_KEY_F_TRUNCATED;
	} else {
		__builtin_memcpy(k->bytes, &v, sizeof(v));
	}
	found = bpf_map_lookup_elem(&span_key_ids, k);
	if (found)
		return *found;
	/*
	 * A new key. The count is raised first and read after: two CPUs racing
	 * for the last place may both give it up, never both take it.
	 */
	cnt = bpf_map_lookup_elem(&span_key_count, &metric);
	if (!cnt)
		return other;
	__sync_fetch_and_add(cnt, 1);
	if (*cnt > kc->max_keys) {
		__sync_fetch_and_add(&span_key_other_calls, 1);
		return other;
	}
	/* Programs do not nest on a CPU: its own tickets need no atomic fetch. */
	t = bpf_map_lookup_elem(&key_tickets, &zero);
	if (!t)
		return other;
	id = KHBPF_KEY_METRIC_BASE + bpf_get_smp_processor_id() + (__u32)(*t)++ * nr_slot_cpus;
	if (!bpf_map_update_elem(&span_key_ids, k, &id, BPF_NOEXIST))
		return id;
	/* Another CPU made it meanwhile, or the table is full. */
	found = bpf_map_lookup_elem(&span_key_ids, k);
	if (found)
		return *found;
	__sync_fetch_and_add(&span_key_table_full, 1);
	return other;
}

/* The attach cookie's high half, or without cookies the site's own: its argument slot. */
static __always_inline __u32 site_slot(struct pt_regs *ctx, __u32 site_slot)
{
	if (!keys_enabled)
		return 0;
	if (have_cookie)
		return (__u32)(bpf_get_attach_cookie(ctx) >> 32);
	return site_slot;
}

/*
 * A new thread slot, 1.., unique in the window. Without atomic fetch, from
 * this CPU's tickets: a uprobe program never runs inside another on the
 * same CPU (trace_call_bpf()'s bpf_prog_active), so the per-CPU count needs
 * no atomic. A slot past KHBPF_SPAN_MAX_SLOT fails the caller.
 */
static __always_inline __u64 new_slot(bool fetch)
{
	__u64 *t, n;
	__u32 zero = 0;

	if (fetch)
		return __sync_fetch_and_add(&span_threads, 1) + 1;
	t = bpf_map_lookup_elem(&slot_tickets, &zero);
	if (!t)
		return KHBPF_SPAN_MAX_SLOT + 1ULL;
	n = (*t)++;
	__sync_fetch_and_add(&span_threads, 1);
	return (__u64)bpf_get_smp_processor_id() + 1 + n * nr_slot_cpus;
}

/* Attached per span site with the metric index as the uprobe's cookie. */
static __always_inline int span_enter(struct pt_regs *ctx, bool fetch)
{
	struct task_struct *task = current_task();
	struct khbpf_span_clock *ck;
	struct khbpf_span_state *ss;
	struct khbpf_span_frame *f;
	__u32 depth, metric, slot = 0;
	bool start;

	if (!span_member(task))
		return 0;
	ss = span_state_get(task, true);
	if (!ss) {
		__sync_fetch_and_add(&span_state_failures, 1);
		return 0;
	}
	if (!ss->slot) {
		__u64 slot = new_slot(fetch);

		if (slot > KHBPF_SPAN_MAX_SLOT) {
			__sync_fetch_and_add(&span_state_failures, 1);
			return 0;
		}
		ss->slot = slot;
		/* A set's switches look for a span clock only on threads that have one. */
		if (set_mode && have_task_btf)
			span_mark_member(task);
	}
	if (have_cookie) {
		metric = (__u32)bpf_get_attach_cookie(ctx);
	} else {
		bool ok;

		/*
		 * The probed address: on 5.10 (x86-64) the handlers see the
		 * instruction pointer at it; one byte past it (the int3) is
		 * tried too.
		 */
		metric = site_metric(task, PT_REGS_IP(ctx), &ok, KHBPF_SITE_SPAN, &slot);
		if (!ok) {
			/* Not pushed, like an overflow: its return pops the count. */
			ss->overflow++;
			__sync_fetch_and_add(&span_site_unresolved, 1);
			return 0;
		}
	}
	ck = &ss->clock;
	depth = ss->depth;
	if (depth >= KHBPF_SPAN_DEPTH || ss->overflow) {
		/* Pushed nowhere; the matching return pops the overflow count. */
		ss->overflow++;
		__sync_fetch_and_add(&span_depth_overflow, 1);
		return 0;
	}
	/*
	 * First open span: start the thread's clock. switched_in stays 0 until
	 * set, so a switch in between is not charged to it (span_clock_out).
	 */
	start = ck->spans_open++ == 0;
	f = &ss->frames[depth & (KHBPF_SPAN_DEPTH - 1)];
	f->span_id = ((__u64)ss->slot << KHBPF_SPAN_SEQ_BITS) |
		     (++ss->seq & ((1ULL << KHBPF_SPAN_SEQ_BITS) - 1));
	f->child_ns = 0;
	f->metric = metric;
	f->agg_metric = keyed_metric(ctx, metric, site_slot(ctx, slot));
	f->start_ns = ledger_now(task, ck, &f->at_start, f->hw, start);
	f->clock_gaps = (__u32)ck->clock_gaps;
	f->wake_seq = (__u32)ck->wake_seq;
	ss->depth = depth + 1;
	return 0;
}

static __always_inline void span_aggregate(__u32 tid, __u32 metric, __u64 incl, __u64 excl,
					   const struct khbpf_span_ledger *l, __u32 flags,
					   const struct khbpf_span_hw *hw)
{
	__u32 i, any = 0;
	struct khbpf_span_key key = { .tid = tid, .metric = metric };
	struct khbpf_span_agg *a;

	a = bpf_map_lookup_elem(&span_agg, &key);
	if (!a) {
		__u32 zero = 0;
		struct khbpf_span_agg *z = bpf_map_lookup_elem(&span_agg_zero, &zero);

		if (z)
			bpf_map_update_elem(&span_agg, &key, z, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&span_agg, &key);
		if (!a) {
			__sync_fetch_and_add(&span_agg_overflow, 1);
			return;
		}
	}
	/* One writer per key: the thread itself. */
	a->calls++;
	a->inclusive_ns += incl;
	a->exclusive_ns += excl;
	if (flags & KHBPF_SPAN_F_CLOCK_GAP)
		a->clock_gap_calls++;
	else
		a->ledger.on_cpu_ns += l->on_cpu_ns;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		if (hw[i].status == KHBPF_VCTR_OK) {
			any = 1;
			a->hw_sum[i] += hw[i].end - hw[i].begin;
		}
	}
	a->hw_calls += any;
	a->ledger.run_delay_ns += l->run_delay_ns;
	a->ledger.nvcsw += l->nvcsw;
	a->ledger.nivcsw += l->nivcsw;
	a->ledger.migrations += l->migrations;
	a->ledger.offcpu_ns += l->offcpu_ns;
	for (i = 0; i < KHBPF_BLOCK_CAUSES; i++) {
		a->ledger.blocked.ns[i] += l->blocked.ns[i];
		a->ledger.blocked.count[i] += l->blocked.count[i];
	}
	a->hist[khbpf_rq_slot(incl)]++;
}

/*
 * serve: the series of p's group for metric (the call's agg_metric), made
 * at its first call; when span_series is full, base's spill.
 */
static __always_inline struct khbpf_span_agg *span_series_of(struct task_struct *p, __u32 metric,
							     __u32 base)
{
	struct khbpf_span_series_key key = { .metric = metric };
	struct khbpf_span_agg *a, *z;
	__u32 zero = 0;

	group_key_of(p, &key.group);
	a = bpf_map_lookup_elem(&span_series, &key);
	if (a)
		return a;
	z = bpf_map_lookup_elem(&span_agg_zero, &zero);
	if (z && !bpf_map_update_elem(&span_series, &key, z, BPF_NOEXIST))
		__sync_fetch_and_add(&span_series_made, 1);
	/* Made meanwhile on another CPU, or the map is full. */
	a = bpf_map_lookup_elem(&span_series, &key);
	if (a)
		return a;
	__sync_fetch_and_add(&span_series_overflow, 1);
	return bpf_map_lookup_elem(&span_series_spill, &base);
}

/*
 * serve: a finished call into its group's series, which other CPUs add to
 * at once: every add atomic. Without --blocked the ledger's blocked time
 * is all zero and not added.
 */
static __always_inline void span_series_add(struct task_struct *p, __u32 metric, __u32 base,
					    __u64 incl, __u64 excl,
					    const struct khbpf_span_ledger *l, __u32 flags)
{
	struct khbpf_span_agg *a = span_series_of(p, metric, base);
	__u32 i;

	if (!a)
		return;
	__sync_fetch_and_add(&a->calls, 1);
	__sync_fetch_and_add(&a->inclusive_ns, incl);
	__sync_fetch_and_add(&a->exclusive_ns, excl);
	if (flags & KHBPF_SPAN_F_CLOCK_GAP)
		__sync_fetch_and_add(&a->clock_gap_calls, 1);
	else
		__sync_fetch_and_add(&a->ledger.on_cpu_ns, l->on_cpu_ns);
	__sync_fetch_and_add(&a->ledger.run_delay_ns, l->run_delay_ns);
	__sync_fetch_and_add(&a->ledger.nvcsw, l->nvcsw);
	__sync_fetch_and_add(&a->ledger.nivcsw, l->nivcsw);
	__sync_fetch_and_add(&a->ledger.migrations, l->migrations);
	__sync_fetch_and_add(&a->ledger.offcpu_ns, l->offcpu_ns);
	if (blocked_enabled) {
		for (i = 0; i < KHBPF_BLOCK_CAUSES; i++) {
			if (!l->blocked.count[i])
				continue;
			__sync_fetch_and_add(&a->ledger.blocked.ns[i], l->blocked.ns[i]);
			__sync_fetch_and_add(&a->ledger.blocked.count[i], l->blocked.count[i]);
		}
	}
	__sync_fetch_and_add(&a->hist[khbpf_rq_slot(incl)], 1);
}

/*
 * The span's wakeups (those since its entry the clock's ring still holds,
 * newest first) to its metric's wakers; returns how many there are.
 */
static __always_inline __u32 span_wakers_add(struct khbpf_span_clock *ck, __u64 seq, __u64 since,
					     __u32 metric)
{
	__u32 n = (__u32)seq - (__u32)since;
	struct khbpf_span_waker_key key = { .metric = metric };
	struct khbpf_span_waker_val *v, zero = {};
	struct khbpf_span_wake *w;
	__u32 i;

	if (n > KHBPF_WAKE_LOG) {
		__sync_fetch_and_add(&span_wakes_unlisted, n - KHBPF_WAKE_LOG);
		n = KHBPF_WAKE_LOG;
	}
	for (i = 0; i < KHBPF_WAKE_LOG; i++) {
		if (i >= n)
			break;
		w = &ck->wake_log[(seq - 1 - i) & (KHBPF_WAKE_LOG - 1)];
		key.kind = KHBPF_WAKE_KIND(w->waker);
		key.waker_tid = KHBPF_WAKE_TID(w->waker);
		v = bpf_map_lookup_elem(&span_wakers, &key);
		if (!v) {
			bpf_map_update_elem(&span_wakers, &key, &zero, BPF_NOEXIST);
			v = bpf_map_lookup_elem(&span_wakers, &key);
			if (!v) {
				__sync_fetch_and_add(&span_wakers_overflow, 1);
				continue;
			}
		}
		/* A metric's calls run on many threads at once. */
		__sync_fetch_and_add(&v->ns, w->ns);
		__sync_fetch_and_add(&v->count, 1);
		v->waker_tgid = w->tgid;
	}
	return n;
}

/*
 * A span's end: at a function's return (a uretprobe), or at a USDT DONE
 * site (at_site, a plain uprobe on the probe's nop).
 */
static __always_inline int span_exit(struct pt_regs *ctx, bool fetch, bool at_site)
{
	struct task_struct *task = current_task();
	__u32 metric;
	struct khbpf_vreading now_hw[KHBPF_NR_COUNTERS] = {};
	struct khbpf_span_hw hw[KHBPF_NR_COUNTERS] = {};
	struct khbpf_span_ledger now_l, l;
	struct khbpf_span_event *e;
	struct khbpf_span_clock *ck;
	struct khbpf_span_state *ss;
	struct khbpf_span_frame *f;
	__u64 now, incl, excl, parent_id = 0, wake_since, wake_seq;
	__u32 depth, idx, i, flags = 0, wakes = 0;
	__u64 rec;

	if (!span_member(task))
		return 0;
	ss = span_state_get(task, false);
	if (!ss) {
		/* A DONE on a thread that never opened a span (a return cannot be). */
		if (at_site)
			__sync_fetch_and_add(&span_unmatched, 1);
		return 0;
	}
	ck = &ss->clock;
	if (ss->overflow) {
		ss->overflow--;
		return 0;
	}
	depth = ss->depth;
	if (!depth || depth > KHBPF_SPAN_DEPTH) {
		__sync_fetch_and_add(&span_unmatched, 1);
		return 0;
	}
	/*
	 * Without cookies a return does not know its metric: it closes the
	 * innermost frame (a frame skipped by longjmp then ends at the next
	 * return instead of being unwound). A DONE site is at a known address,
	 * whose mapping says its metric, as at entry.
	 */
	if (have_cookie) {
		metric = (__u32)bpf_get_attach_cookie(ctx);
	} else if (at_site) {
		bool ok;

		metric = site_metric(task, PT_REGS_IP(ctx), &ok, KHBPF_SITE_SPAN, NULL);
		if (!ok) {
			__sync_fetch_and_add(&span_site_unresolved, 1);
			return 0;
		}
	} else {
		metric = ss->frames[(depth - 1) & (KHBPF_SPAN_DEPTH - 1)].metric;
	}
	/* Returns come LIFO; a frame skipped by longjmp is closed here, uncounted. */
	idx = depth - 1;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		if (ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)].metric == metric || idx == 0)
			break;
		idx--;
	}
	if (ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)].metric != metric) {
		__sync_fetch_and_add(&span_unmatched, 1);
		return 0;
	}
	if (idx != depth - 1)
		__sync_fetch_and_add(&span_unwound, depth - 1 - idx);
	f = &ss->frames[idx & (KHBPF_SPAN_DEPTH - 1)];
	now = ledger_now(task, ck, &now_l, now_hw, false);
	if ((__u32)ck->clock_gaps != f->clock_gaps)
		flags |= KHBPF_SPAN_F_CLOCK_GAP;
	for (i = 0; i < KHBPF_NR_COUNTERS; i++) {
		if (i >= nr_counters)
			break;
		hw[i].begin = f->hw[i].value;
		hw[i].end = now_hw[i].value;
		hw[i].status = khbpf_vctr_status(&f->hw[i], &now_hw[i]);
	}
	incl = sub0(now, f->start_ns);
	excl = sub0(incl, f->child_ns);
	l.on_cpu_ns = sub0(now_l.on_cpu_ns, f->at_start.on_cpu_ns);
	l.run_delay_ns = sub0(now_l.run_delay_ns, f->at_start.run_delay_ns);
	l.nvcsw = sub0(now_l.nvcsw, f->at_start.nvcsw);
	l.nivcsw = sub0(now_l.nivcsw, f->at_start.nivcsw);
	l.migrations = sub0(now_l.migrations, f->at_start.migrations);
	/* Sums that only grow while the frame is open: plain differences, no branch each. */
	l.offcpu_ns = now_l.offcpu_ns - f->at_start.offcpu_ns;
	for (i = 0; i < KHBPF_BLOCK_CAUSES; i++) {
		l.blocked.ns[i] = now_l.blocked.ns[i] - f->at_start.blocked.ns[i];
		l.blocked.count[i] = now_l.blocked.count[i] - f->at_start.blocked.count[i];
	}
	/*
	 * With blocked time timed, the span's time off-CPU is the sum of its
	 * stretches on the runqueue clock (sched.bpf.c), the clock of
	 * run_delay: on-CPU is the rest of the span, so that on-CPU, run
	 * delay, blocked and unattributed add up to it exactly.
	 */
	if (blocked_enabled)
		l.on_cpu_ns = sub0(incl, l.offcpu_ns);
	if (idx > 0) {
		struct khbpf_span_frame *p = &ss->frames[(idx - 1) & (KHBPF_SPAN_DEPTH - 1)];

		p->child_ns += incl;
		parent_id = p->span_id;
	}
	ss->depth = idx;
	ck->spans_open = ck->spans_open > depth - idx ? ck->spans_open - (depth - idx) : 0;
	if (!ck->spans_open)
		ck->switched_in = 0;

	if (group_by) {
		/* serve: its group's series, and no record. */
		span_series_add(task, f->agg_metric, f->metric, incl, excl, &l, flags);
		return 0;
	}
	span_aggregate(CUR_READ(task, pid), f->agg_metric, incl, excl, &l, flags, hw);
	/* One look at the ring's end: a preemption in between may add to it. */
	wake_since = f->wake_seq;
	wake_seq = ck->wake_seq;
	if (wakers_enabled && (__u32)wake_seq != (__u32)wake_since)
		wakes = span_wakers_add(ck, wake_seq, wake_since, f->agg_metric);

	if (fetch) {
		rec = __sync_fetch_and_add(&span_records, 1);
	} else {
		/* Others may add in between: the kernel's cap is then a few off, the loader's is exact. */
		__sync_fetch_and_add(&span_records, 1);
		rec = span_records - 1;
	}
	if (rec >= max_spans) {
		__sync_fetch_and_add(&span_sampled_out, 1);
		return 0;
	}
	/* Each size a constant, as the verifier wants it. */
	if (wakes)
		e = bpf_ringbuf_reserve(&span_events,
					nr_counters ? sizeof(*e) + sizeof(struct khbpf_span_wakes) :
						      KHBPF_SPAN_EVENT_NOHW_SIZE +
							      sizeof(struct khbpf_span_wakes),
					0);
	else
		e = bpf_ringbuf_reserve(&span_events,
					nr_counters ? sizeof(*e) : KHBPF_SPAN_EVENT_NOHW_SIZE, 0);
	if (!e) {
		__sync_fetch_and_add(&span_ringbuf_drops, 1);
		return 0;
	}
	e->span_id = f->span_id;
	e->parent_span_id = parent_id;
	e->start_ns = f->start_ns;
	e->inclusive_ns = incl;
	e->exclusive_ns = excl;
	e->tid = CUR_READ(task, pid);
	e->metric = f->agg_metric;
	e->depth = idx;
	e->flags = flags;
	e->ledger = l;
	if (nr_counters)
		__builtin_memcpy(e->hw, hw, sizeof(hw));
	if (wakes) {
		struct khbpf_span_wakes *wk =
			(void *)e + (nr_counters ? sizeof(*e) : KHBPF_SPAN_EVENT_NOHW_SIZE);

		wk->nr = wakes;
		wk->pad = 0;
		wk->unlisted = (__u32)wake_seq - (__u32)wake_since - wakes;
		for (i = 0; i < KHBPF_WAKE_LOG; i++) {
			if (i < wakes)
				wk->wake[i] =
					ck->wake_log[(wake_seq - 1 - i) & (KHBPF_WAKE_LOG - 1)];
			else
				__builtin_memset(&wk->wake[i], 0, sizeof(wk->wake[i]));
		}
	}
	/*
	 * Waking the reader costs more than the rest of the span (an irq_work
	 * and a wakeup per record); wake it every span_wakeup_mask + 1 records
	 * (the loader's choice: an eighth of the buffer), the loader also
	 * drains on its timer and at the end.
	 */
	bpf_ringbuf_submit(e, (rec & span_wakeup_mask) == span_wakeup_mask ? BPF_RB_FORCE_WAKEUP :
									     BPF_RB_NO_WAKEUP);
	return 0;
}

/*
 * Weak: on kernels without them (before 6.10) libbpf leaves the calls
 * unresolved, and have_preempt_kfuncs false keeps them unreached. Declared
 * in this one part only: bpftool's linker cannot merge a kfunc extern
 * that two objects declare.
 */
extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;

/*
 * Each program's body is a subprogram called with preemption disabled
 * (have_preempt_kfuncs, see sched.bpf.c): every write to its stack is made
 * inside the call, after bpf_preempt_disable().
 */
#define NO_PREEMPT(call)                       \
	({                                     \
		int __ret;                     \
                                               \
		if (have_preempt_kfuncs)       \
			bpf_preempt_disable(); \
		__ret = (call);                \
		if (have_preempt_kfuncs)       \
			bpf_preempt_enable();  \
		__ret;                         \
	})

static __noinline int span_enter_fetch(struct pt_regs *ctx)
{
	return span_enter(ctx, true);
}

static __noinline int span_exit_fetch(struct pt_regs *ctx)
{
	return span_exit(ctx, true, false);
}

static __noinline int span_close_fetch(struct pt_regs *ctx)
{
	return span_exit(ctx, true, true);
}

static __noinline int span_enter_nofetch(struct pt_regs *ctx)
{
	return span_enter(ctx, false);
}

static __noinline int span_exit_nofetch(struct pt_regs *ctx)
{
	return span_exit(ctx, false, false);
}

static __noinline int span_close_nofetch(struct pt_regs *ctx)
{
	return span_exit(ctx, false, true);
}

SEC("uprobe")
int BPF_KPROBE(khbpf_span_enter)
{
	return NO_PREEMPT(span_enter_fetch(ctx));
}

SEC("uretprobe")
int BPF_KRETPROBE(khbpf_span_exit)
{
	return NO_PREEMPT(span_exit_fetch(ctx));
}

SEC("uprobe")
int BPF_KPROBE(khbpf_span_enter_nofetch)
{
	return NO_PREEMPT(span_enter_nofetch(ctx));
}

SEC("uretprobe")
int BPF_KRETPROBE(khbpf_span_exit_nofetch)
{
	return NO_PREEMPT(span_exit_nofetch(ctx));
}

/*
 * A --usdt probe's site: one more hit of its probe (the cookie, else the
 * site's metric) by this thread, its key's only writer. The body runs with
 * preemption disabled like the span programs' (have_preempt_kfuncs): its
 * stack (the key, a string key's buffer) is large enough for the per-CPU
 * private stack, and without the guard a second thread's hit on the same
 * CPU rewrote a preempted hit's key (7.2, loaded: one hit in about 35 runs
 * counted under another thread, or lost as an insert that found the key
 * already there).
 */
static __noinline int usdt_hit(struct pt_regs *ctx)
{
	struct task_struct *task = current_task();
	struct khbpf_span_key key = {};
	__u64 *n, one = 1;
	__u32 slot = 0, base;

	if (!span_member(task))
		return 0;
	key.tid = CUR_READ(task, pid);
	if (have_cookie) {
		key.metric = (__u32)bpf_get_attach_cookie(ctx);
	} else {
		bool ok;

		key.metric = site_metric(task, PT_REGS_IP(ctx), &ok, KHBPF_SITE_HIT, &slot);
		if (!ok) {
			__sync_fetch_and_add(&span_site_unresolved, 1);
			return 0;
		}
	}
	base = key.metric;
	key.metric = keyed_metric(ctx, key.metric, site_slot(ctx, slot));
	if (group_by) {
		/* serve: a hit is a call of its group's series. */
		struct khbpf_span_agg *a = span_series_of(task, key.metric, base);

		if (a)
			__sync_fetch_and_add(&a->calls, 1);
		return 0;
	}
	n = bpf_map_lookup_elem(&usdt_hits, &key);
	if (n)
		(*n)++;
	else if (bpf_map_update_elem(&usdt_hits, &key, &one, BPF_NOEXIST))
		__sync_fetch_and_add(&usdt_hits_lost, 1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(khbpf_usdt_hit)
{
	return NO_PREEMPT(usdt_hit(ctx));
}

/*
 * The DONE site of a USDT pair (--usdt-span): a uprobe on the probe's nop
 * that ends the span its START site opened (khbpf_span_enter there).
 */
SEC("uprobe")
int BPF_KPROBE(khbpf_span_close)
{
	return NO_PREEMPT(span_close_fetch(ctx));
}

SEC("uprobe")
int BPF_KPROBE(khbpf_span_close_nofetch)
{
	return NO_PREEMPT(span_close_nofetch(ctx));
}

/*
 * serve: one record per open frame, with the series it will close into
 * (span_series_add()'s key: its group now, its metric or key id), for the
 * gauges of calls in progress. Any task: frames exist only where a span
 * site let the task in (span_member()).
 */
SEC("iter/task")
int khbpf_iter_open_series(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct khbpf_open_series o = {};
	struct khbpf_span_state *ss;
	__u32 i, depth;

	if (!task || !group_by)
		return 0;
	ss = span_state_get(task, false);
	if (!ss)
		return 0;
	group_key_of(task, &o.key.group);
	depth = ss->depth;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		if (i >= depth)
			break;
		o.key.metric = ss->frames[i].agg_metric;
		o.start_ns = ss->frames[i].start_ns;
		if (bpf_seq_write(seq, &o, sizeof(o)))
			__sync_fetch_and_add(&iter_write_errors, 1);
	}
	return 0;
}

/* Spans still open: one record per open frame, for the window's end. */
SEC("iter/task")
int khbpf_iter_open_spans(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct khbpf_span_state *ss;
	struct khbpf_span_event e = {};
	__u32 i, depth;

	if (!task || !is_target(task))
		return 0;
	ss = span_state_get(task, false);
	if (!ss)
		return 0;
	depth = ss->depth;
	for (i = 0; i < KHBPF_SPAN_DEPTH; i++) {
		struct khbpf_span_frame *f = &ss->frames[i];

		if (i >= depth)
			break;
		e.span_id = f->span_id;
		e.parent_span_id = i ? ss->frames[(i - 1) & (KHBPF_SPAN_DEPTH - 1)].span_id : 0;
		e.start_ns = f->start_ns;
		e.tid = task->pid;
		e.metric = f->agg_metric;
		e.depth = i;
		if (bpf_seq_write(seq, &e, sizeof(e)))
			__sync_fetch_and_add(&iter_write_errors, 1);
	}
	return 0;
}
