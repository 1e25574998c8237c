/* alloc_write: the end of the alloc probe's run: every call site the heap
 * kept is symbolized (its native frames, below the Python stack the agent read
 * or the nearest Python sample gave), the sites that share a stack are summed,
 * and alloc_sites, alloc_site_python, alloc_timeline, alloc_site_timeline, the
 * alloc_peak/alloc_leak/alloc_temp samples and meta alloc_* are written.
 * Part of the alloc probe (alloc.c's stop() calls it; alloc_probe.h). */
#include "probe.h"
#include "alloc_probe.h"
#include "alloc_heap.h"
#include "alloc_python.h"
#include "alloc_pystack.h"
#include "alloc_symbols.h"
#include "../agents/alloc/alloc_wire.h"
#include "../record/recorder.h"
#include "../record/stacks.h"
#include "../symbols/pyframes.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python frames kept above an allocation's native stack (outermost dropped). */
#define ALLOC_PY_FRAMES_MAX 128

/* ---- writing ---- */

/* Functions that only pass an allocation on: the call site is their caller. */
static int is_allocator_frame(const char *fn)
{
	static const char *const names[] = { "strdup", "__strdup", "strndup", "__strndup" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(fn, names[i]))
			return 1;
	/* Mangled (_Znwm, _ZnamRKSt9nothrow_t...) or demangled. */
	return !strncmp(fn, "_Znw", 4) || !strncmp(fn, "_Zna", 4) ||
	       !strncmp(fn, "operator new", 12);
}

struct site_out {
	int64_t node;
	pid_t pid;
	double allocations, allocated_bytes, peak_bytes, leaked_bytes, leaked_count, temp_count,
		temp_bytes;
	double peak_var, leaked_var, temp_count_var;
	double mmap_bytes;
	int py_methods; /* PY_METHOD_* of its Python frames */
};

enum { PY_METHOD_INPROCESS = 1, PY_METHOD_NEAREST = 2 };

static const char *const py_method_names[] = {
	NULL, "in-process stack", "nearest python sample",
	"in-process stack and nearest python sample",
};

/* Symbolizes every site and sums the sites that share a symbolized stack;
 * site_node[i] (nsites entries) gets heap site i's node, 0 for none. */
static size_t sites_symbolize(struct alloc_state *st, sqlite3 *db, struct stack_writer *sw,
			      struct site_out **out, int64_t *site_node)
{
	struct heap *h = &st->heap;
	struct alloc_symbolizer *sy = alloc_symbolizer_new();
	struct hashmap by_node = HASHMAP_INIT;
	struct site_out *v = xcalloc(h->nsites ? h->nsites : 1, sizeof(*v));
	size_t n = 0;
	int64_t frames[ALLOC_PY_FRAMES_MAX + ALLOC_WIRE_MAX_FRAMES];
	for (size_t i = 0; i < h->nsites; i++) {
		const struct heap_site *s = &h->sites[i];
		if (s->allocations <= 0)
			continue;
		const struct heap_space *sp = &h->spaces[s->space];
		size_t nf = 0;
		int skipping = 1;
		/* ips are innermost first; frames go outermost first. */
		int64_t inner[ALLOC_WIRE_MAX_FRAMES];
		size_t interp = SIZE_MAX; /* the innermost interpreter frame in inner */
		size_t eval = SIZE_MAX;	  /* the innermost bytecode loop (_PyEval_EvalFrameDefault) */
		for (uint32_t k = 0; k < s->nips && k < ALLOC_WIRE_MAX_FRAMES; k++) {
			struct alloc_symbol sym;
			alloc_symbolize(sy, sp->mods, sp->nmods, s->ips[k], &sym);
			if (skipping && is_allocator_frame(sym.function) && k + 1 < s->nips)
				continue;
			skipping = 0;
			struct frame_info fi = { sym.function, sym.file, sym.line, sym.module,
						 "native" };
			int64_t id = stack_frame(sw, &fi);
			if (id <= 0)
				continue;
			if (eval == SIZE_MAX && sym.function && strstr(sym.function, "EvalFrame"))
				eval = nf;
			if (interp == SIZE_MAX && pyframes_is_interpreter(sym.module))
				interp = nf;
			inner[nf++] = id;
		}
		size_t np = 0;
		if (s->py_node) {
			/* The Python stack of the nearest sample, then the native frames
			 * below the innermost bytecode loop (bytes_new, a C extension's
			 * function), else from the innermost interpreter function down. */
			np = alloc_python_path(db, s->py_node, frames, ALLOC_PY_FRAMES_MAX);
			if (np && eval != SIZE_MAX && eval > 0)
				nf = eval;
			else if (np && interp != SIZE_MAX)
				nf = interp + 1;
		}
		for (size_t k = 0; k < nf; k++)
			frames[np + k] = inner[nf - 1 - k];
		int64_t node = stack_intern(sw, frames, np + nf);
		if (node <= 0)
			continue;
		site_node[i] = node;
		int64_t *idx = hashmap_get(&by_node, &node, sizeof(node));
		struct site_out *o;
		if (idx) {
			o = &v[*idx];
		} else {
			hashmap_put(&by_node, &node, sizeof(node), (int64_t)n);
			o = &v[n++];
			o->node = node;
			o->pid = sp->pid;
		}
		o->allocations += s->allocations;
		o->allocated_bytes += s->allocated_bytes;
		o->peak_bytes += s->peak_bytes;
		o->leaked_bytes += s->leaked_bytes;
		o->leaked_count += s->leaked_count;
		o->temp_count += s->temp_count;
		o->temp_bytes += s->temp_bytes;
		o->peak_var += s->peak_var;
		o->leaked_var += s->leaked_var;
		o->temp_count_var += s->temp_count_var;
		o->mmap_bytes += s->mmap_bytes;
		if (np)
			o->py_methods |= alloc_pystacks_made(&st->pys, s->py_node) ? PY_METHOD_INPROCESS
										   : PY_METHOD_NEAREST;
	}
	alloc_symbolizer_free(sy);
	hashmap_release(&by_node);
	*out = v;
	return n;
}

static void sample(struct stack_writer *sw, int64_t t_ns, const struct site_out *o,
		   const char *source, double weight)
{
	int64_t w = llround(weight);
	if (w <= 0)
		return;
	struct sample_info si = { .t_ns = t_ns, .pid = o->pid, .tid = o->pid, .node = o->node,
				  .source = source, .weight = w, .on_cpu = -1, .gil = -1 };
	stack_sample(sw, &si);
}

/* alloc_site_timeline from the rows by heap site: sites that symbolized to
 * one node are summed. */
static void site_timeline_write(struct recorder *rec, sqlite3 *db, const int64_t *site_node,
				size_t nsites)
{
	sqlite3_stmt *ins = NULL;
	if (sqlite3_prepare_v2(db, "INSERT INTO alloc_site_node VALUES(?,?)", -1, &ins, NULL) !=
	    SQLITE_OK)
		return;
	for (size_t i = 0; i < nsites; i++) {
		if (site_node[i] <= 0)
			continue;
		sqlite3_bind_int64(ins, 1, (int64_t)i);
		sqlite3_bind_int64(ins, 2, site_node[i]);
		recorder_step(rec, ins);
	}
	sqlite3_finalize(ins);
	/* recorder_schema runs any statements, not only CREATEs. */
	recorder_schema(rec, "INSERT INTO alloc_site_timeline SELECT r.t_ns, m.node,"
			   " sum(r.allocations), sum(r.allocated_bytes), sum(r.freed_bytes)"
			   " FROM alloc_site_timeline_raw r JOIN alloc_site_node m ON m.site = r.site"
			   " GROUP BY r.t_ns, m.node ORDER BY r.t_ns;"
			   "DELETE FROM alloc_site_timeline_raw; DELETE FROM alloc_site_node;");
}

void alloc_write(struct alloc_state *st, struct probe_ctx *ctx, int64_t end_ns)
{
	struct heap *h = &st->heap;
	sqlite3 *db = recorder_db(ctx->rec);
	struct stack_writer *sw = recorder_stacks(ctx->rec);
	if (!db || !sw)
		return;
	struct site_out *v;
	int64_t *site_node = xcalloc(h->nsites ? h->nsites : 1, sizeof(*site_node));
	size_t n = sites_symbolize(st, db, sw, &v, site_node);
	sqlite3_stmt *ins = NULL;
	double leaked = 0;
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO alloc_sites VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &ins, NULL) == SQLITE_OK) {
		for (size_t i = 0; i < n; i++) {
			const struct site_out *o = &v[i];
			sqlite3_bind_int64(ins, 1, o->node);
			sqlite3_bind_int(ins, 2, o->pid);
			sqlite3_bind_double(ins, 3, o->allocations);
			sqlite3_bind_double(ins, 4, o->allocated_bytes);
			sqlite3_bind_double(ins, 5, o->peak_bytes);
			sqlite3_bind_double(ins, 6, o->leaked_bytes);
			sqlite3_bind_double(ins, 7, o->leaked_count);
			sqlite3_bind_double(ins, 8, o->temp_count);
			sqlite3_bind_double(ins, 9, o->temp_bytes);
			sqlite3_bind_double(ins, 10, sqrt(fmax(0, o->peak_var)));
			sqlite3_bind_double(ins, 11, sqrt(fmax(0, o->leaked_var)));
			sqlite3_bind_double(ins, 12, sqrt(fmax(0, o->temp_count_var)));
			sqlite3_bind_double(ins, 13, o->mmap_bytes);
			recorder_step(ctx->rec, ins);
			sample(sw, h->peak_t_ns, o, "alloc_peak", o->peak_bytes);
			sample(sw, end_ns, o, "alloc_leak", o->leaked_bytes);
			sample(sw, end_ns, o, "alloc_temp", o->temp_count);
			leaked += o->leaked_bytes;
		}
		sqlite3_finalize(ins);
	}
	/* How each site's Python frames were found (docs/memory.md). */
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO alloc_site_python VALUES(?,?)", -1, &ins,
			       NULL) == SQLITE_OK) {
		for (size_t i = 0; i < n; i++) {
			if (!v[i].py_methods)
				continue;
			sqlite3_bind_int64(ins, 1, v[i].node);
			sqlite3_bind_text(ins, 2, py_method_names[v[i].py_methods & 3], -1,
					  SQLITE_STATIC);
			recorder_step(ctx->rec, ins);
		}
		sqlite3_finalize(ins);
	}
	if (sqlite3_prepare_v2(db, "INSERT INTO alloc_timeline VALUES(?,?,?,?)", -1, &ins, NULL) ==
	    SQLITE_OK) {
		double live = 0;
		for (size_t i = 0; i < h->nbuckets && (int64_t)i * HEAP_BUCKET_NS <= end_ns; i++) {
			const struct heap_bucket *b = &h->buckets[i];
			/* A bucket no allocation or free fell in (the program was
			 * off the CPU for 100 ms, as on a busy machine) holds what
			 * the one before held, not nothing. */
			if (b->allocations > 0 || b->allocated_bytes > 0 || b->live_max_bytes > 0)
				live = b->live_max_bytes;
			sqlite3_bind_int64(ins, 1, (int64_t)i * HEAP_BUCKET_NS);
			sqlite3_bind_double(ins, 2, b->allocations);
			sqlite3_bind_double(ins, 3, b->allocated_bytes);
			sqlite3_bind_double(ins, 4, live);
			recorder_step(ctx->rec, ins);
		}
		sqlite3_finalize(ins);
	}
	free(v);
	site_timeline_write(ctx->rec, db, site_node, h->nsites);
	free(site_node);
	record_meta_int(ctx->rec, "alloc_processes", (int64_t)h->nspaces);
	record_meta_int(ctx->rec, "alloc_records", (int64_t)st->records);
	record_meta_int(ctx->rec, "alloc_peak_bytes", llround(h->peak_bytes));
	record_meta_int(ctx->rec, "alloc_peak_ns", h->peak_t_ns);
	record_meta_int(ctx->rec, "alloc_allocations", llround(h->allocations));
	record_meta_int(ctx->rec, "alloc_allocated_bytes", llround(h->allocated_bytes));
	record_meta_int(ctx->rec, "alloc_temporary_allocations", llround(h->temp_count));
	record_meta_int(ctx->rec, "alloc_leaked_bytes", llround(leaked));
	record_meta_int(ctx->rec, "alloc_unknown_frees", (int64_t)h->unknown_frees);
	record_meta_int(ctx->rec, "alloc_bad_streams", (int64_t)st->bad_streams);
	if (st->py_inprocess || st->pys.unresolved) {
		/* Allocations with the Python stack the agent read, and stacks that
		 * could not be resolved (docs/memory.md, Python). */
		record_meta_int(ctx->rec, "alloc_python_inprocess", (int64_t)st->py_inprocess);
		record_meta_int(ctx->rec, "alloc_python_unresolved", (int64_t)st->pys.unresolved);
	}
	record_meta_int(ctx->rec, "alloc_lost_stacks", (int64_t)st->lost_stacks);
	if (st->pymem_images) {
		char what[256];
		snprintf(what, sizeof(what),
			 "CPython's object allocators (PyMem domains MEM and OBJ) wrapped by the "
			 "agent in %llu process image%s, so each object is sampled while pymalloc "
			 "keeps serving it; nothing outlives the process",
			 (unsigned long long)st->pymem_images, st->pymem_images == 1 ? "" : "s");
		record_changelog(ctx->rec, "CPython allocators (in the process)", "wrapped", what,
				 NULL);
		record_meta_int(ctx->rec, "alloc_python_allocators_wrapped",
				(int64_t)st->pymem_images);
	}
	if (st->pymem_lost) {
		char what[256];
		snprintf(what, sizeof(what),
			 "in %llu process image%s CPython replaced the wrapped allocators with its "
			 "own (-X dev, or an embedder's configuration): the objects made after that "
			 "appear as pymalloc's arenas, not one by one",
			 (unsigned long long)st->pymem_lost, st->pymem_lost == 1 ? "" : "s");
		record_note(ctx->rec, end_ns, "alloc", "warning", what);
		record_meta_int(ctx->rec, "alloc_python_allocators_lost", (int64_t)st->pymem_lost);
	}
	if (st->py.nthreads) {
		/* Recorded allocations of threads with Python samples: with and
		 * without a sample within the gap (docs/memory.md, Python). */
		record_meta_int(ctx->rec, "alloc_python_attributed", (int64_t)st->py.matched);
		record_meta_int(ctx->rec, "alloc_python_unattributed", (int64_t)st->py.unmatched);
	}
	if (!h->nspaces)
		record_note(ctx->rec, end_ns, "alloc", "warning",
			    "the allocation agent sent nothing: the command is statically linked "
			    "or otherwise ignores LD_PRELOAD (setuid, a custom loader)");
}
