/* cpu_stacks: the cpu probe's stacks. Addresses are made stable as samples
 * are read (a module and offset, a kernel address, or a process's anonymous
 * memory), stacks interned as raw frames and samples queued; each flush
 * symbolizes the new stacks (a JIT's perf map read again for an address it
 * does not name yet) and writes the samples to the recording. */
#include "cpu_probe.h"
#include "../record/stacks.h"
#include "../symbols/symbolize.h"
#include "../util/strbuf.h"

#include <string.h>

void cpu_raw_resolve(struct cpu_state *cs, struct cpu_proc *pr, uint64_t pc,
		     struct raw_frame *out)
{
	struct map_entry *e = (struct map_entry *)maps_find(&pr->maps, pc);
	if (!e || !e->path[0]) {
		*out = (struct raw_frame){ RAW_ANON, (int32_t)pr->pid, pc };
		return;
	}
	if (e->tag < 0)
		e->tag = symbolizer_module(cs->sym, e->path, pr->pid);
	if (e->tag < 0) {
		*out = (struct raw_frame){ RAW_ANON, (int32_t)pr->pid, pc };
		return;
	}
	*out = (struct raw_frame){ e->tag, 0, pc - e->start + e->pgoff };
}

/* Reads pid's perf map again when it was not read for CPU_JIT_RELOAD_NS.
 * 1 when it did. */
static int jit_reread(struct cpu_state *cs, pid_t pid)
{
	int64_t now = clock_mono_ns();
	int64_t *at = hashmap_get(&cs->jit_read, &pid, sizeof(pid));
	if (at && now - *at < CPU_JIT_RELOAD_NS)
		return 0;
	hashmap_put(&cs->jit_read, &pid, sizeof(pid), now);
	symbolizer_jit_load(cs->sym, pid);
	return 1;
}

/* Frame ids (outermost first) for one raw frame, cached unless it is an
 * anonymous address no perf map names yet. */
static size_t frame_ids(struct cpu_state *cs, const struct raw_frame *rf, int64_t *ids,
			size_t max)
{
	int64_t *hit = hashmap_get(&cs->frame_cache, rf, sizeof(*rf));
	if (hit) {
		size_t n = (size_t)(*hit & 0xff), at = (size_t)(*hit >> 8);
		if (n > max)
			n = max;
		memcpy(ids, &cs->frame_pool[at], n * sizeof(*ids));
		return n;
	}
	struct sym_frame sf[SYMBOLIZER_MAX_INLINE + 1];
	size_t n;
	const char *module = NULL;
	int unresolved = 0;
	if (rf->module == RAW_KERNEL) {
		symbolizer_kernel(cs->sym, rf->addr, &sf[0], &module);
		n = 1;
	} else if (rf->module == RAW_ANON) {
		symbolizer_jit(cs->sym, (pid_t)rf->pid, rf->addr, &sf[0], &module);
		if (!strcmp(module, "[anon]") && jit_reread(cs, (pid_t)rf->pid))
			symbolizer_jit(cs->sym, (pid_t)rf->pid, rf->addr, &sf[0], &module);
		unresolved = !strcmp(module, "[anon]");
		n = 1;
	} else {
		n = symbolizer_lookup(cs->sym, rf->module, rf->addr, sf, SYMBOLIZER_MAX_INLINE + 1);
		module = symbolizer_module_path(cs->sym, rf->module);
	}
	int64_t got[SYMBOLIZER_MAX_INLINE + 1];
	for (size_t i = 0; i < n; i++) {
		/* sf is innermost first; ids go outermost first. */
		const struct sym_frame *f = &sf[n - 1 - i];
		struct frame_info fi = {
			.function = f->function,
			.file = f->file,
			.line = f->line,
			.module = module,
			.kind = rf->module == RAW_KERNEL ? "kernel" : f->inlined ? "inlined" : "native",
		};
		got[i] = stack_frame(cs->sw, &fi);
	}
	if (unresolved) { /* named later, perhaps */
		cs->unresolved = 1;
		n = n > max ? max : n;
		memcpy(ids, got, n * sizeof(*ids));
		return n;
	}
	if (cs->npool + n > cs->allocpool) {
		cs->allocpool = cs->allocpool ? 2 * cs->allocpool : 4096;
		while (cs->allocpool < cs->npool + n)
			cs->allocpool *= 2;
		cs->frame_pool = xrealloc(cs->frame_pool, cs->allocpool * sizeof(*cs->frame_pool));
	}
	memcpy(&cs->frame_pool[cs->npool], got, n * sizeof(*got));
	hashmap_put(&cs->frame_cache, rf, sizeof(*rf), (int64_t)((cs->npool << 8) | n));
	cs->npool += n;
	if (n > max)
		n = max;
	memcpy(ids, got, n * sizeof(*ids));
	return n;
}

static void name_thread(struct cpu_state *cs, pid_t pid, pid_t tid)
{
	const char *name = thread_names_first_use(&cs->names, pid, tid);
	if (name)
		stack_thread_name(cs->sw, pid, tid, name);
}

/* Queues one sample whose frames (innermost first) are raw[0..n). Its stack is
 * interned as raw frames now; symbolizing waits for cpu_flush_pending, so a slow
 * first look at a big library never keeps the rings from being read. */
uint32_t cpu_intern_raw_stack(struct cpu_state *cs, const struct raw_frame *raw, size_t n)
{
	uint32_t stack = CPU_EMPTY_STACK;
	if (n) {
		int64_t *hit = hashmap_get(&cs->stack_cache, raw, n * sizeof(*raw));
		if (hit) {
			stack = (uint32_t)*hit;
		} else if (cs->nstacks < CPU_EMPTY_STACK) {
			if (cs->nstacks == cs->allocstacks) {
				cs->allocstacks = cs->allocstacks ? 2 * cs->allocstacks : 1024;
				cs->stacks = xrealloc(cs->stacks, cs->allocstacks * sizeof(*cs->stacks));
			}
			if (cs->nraw + n > cs->allocraw) {
				cs->allocraw = cs->allocraw ? 2 * cs->allocraw : 16384;
				while (cs->allocraw < cs->nraw + n)
					cs->allocraw *= 2;
				cs->raw = xrealloc(cs->raw, cs->allocraw * sizeof(*cs->raw));
			}
			memcpy(&cs->raw[cs->nraw], raw, n * sizeof(*raw));
			cs->stacks[cs->nstacks] = (struct raw_stack){ cs->nraw, n, -1 };
			cs->nraw += n;
			stack = (uint32_t)cs->nstacks++;
			hashmap_put(&cs->stack_cache, raw, n * sizeof(*raw), stack);
		}
	}
	return stack;
}

void cpu_push_pending(struct cpu_state *cs, const struct pending_sample *ps)
{
	/* Inherited events follow children too; --no-subprocesses keeps the first. */
	if (cs->only_pid && ps->pid != cs->only_pid) {
		cs->dropped_subprocess_samples++;
		return;
	}
	if (cs->npending == cs->allocpending) {
		cs->allocpending = cs->allocpending ? 2 * cs->allocpending : 4096;
		cs->pending = xrealloc(cs->pending, cs->allocpending * sizeof(*cs->pending));
	}
	cs->pending[cs->npending++] = *ps;
	if (!ps->state)
		stack_sample_taken(cs->sw);
	name_thread(cs, ps->pid, ps->tid);
}

static int64_t symbolize_stack(struct cpu_state *cs, const struct raw_stack *rs)
{
	int64_t ids[CPU_MAX_OUT_FRAMES];
	size_t nids = 0;
	for (size_t i = rs->n; i-- > 0 && nids < CPU_MAX_OUT_FRAMES;)
		nids += frame_ids(cs, &cs->raw[rs->at + i], ids + nids, CPU_MAX_OUT_FRAMES - nids);
	return stack_intern(cs->sw, ids, nids);
}

int64_t cpu_stack_node(struct cpu_state *cs, uint32_t stack)
{
	if (stack == CPU_EMPTY_STACK || stack >= cs->nstacks)
		return 0;
	struct raw_stack *rs = &cs->stacks[stack];
	if (rs->node >= 0)
		return rs->node;
	cs->unresolved = 0;
	int64_t node = symbolize_stack(cs, rs);
	if (!cs->unresolved)
		rs->node = node;
	return node;
}

/* Rows written at once (stack_samples). */
#define CPU_ROWS_BATCH 64

/* Writes queued samples in order, symbolizing new stacks until budget_ns is
 * spent (< 0: no limit; a single library load is never cut short). */
void cpu_flush_pending(struct cpu_state *cs, int64_t budget_ns)
{
	int64_t deadline = budget_ns < 0 ? INT64_MAX : clock_mono_ns() + budget_ns;
	struct sample_info rows[CPU_ROWS_BATCH];
	size_t nrows = 0, i = 0;
	for (; i < cs->npending; i++) {
		const struct pending_sample *ps = &cs->pending[i];
		int64_t node = 0;
		if (ps->stack != CPU_EMPTY_STACK) {
			if (cs->stacks[ps->stack].node < 0 && clock_mono_ns() > deadline)
				break;
			node = cpu_stack_node(cs, ps->stack);
		}
		rows[nrows++] = (struct sample_info){ .t_ns = ps->t_ns, .pid = ps->pid,
						      .tid = ps->tid, .node = node,
						      .source = ps->state ? "offcpu" : "cpu",
						      .weight = ps->weight, .on_cpu = !ps->state,
						      .gil = -1 };
		if (nrows == CPU_ROWS_BATCH) {
			stack_samples(cs->sw, rows, nrows);
			nrows = 0;
		}
		if (ps->state) {
			struct perf_weighted w = { ps->pid, ps->tid, ps->t_ns, ps->weight,
						   ps->state, ps->stack };
			perf_layer_written(cs->perf, &w, node);
		} else {
			cs->samples++;
		}
	}
	stack_samples(cs->sw, rows, nrows);
	if (i && i < cs->npending)
		memmove(cs->pending, cs->pending + i, (cs->npending - i) * sizeof(*cs->pending));
	cs->npending -= i;
}
