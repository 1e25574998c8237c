/* cpython: samples the threads of a CPython interpreter in another process
 * (see cpython.h), keeping the stack of a thread that cannot have run since
 * the last sample instead of walking it. The parts share cpython_proc.h:
 * cpython_open.c finds the interpreter, cpython_mem.c reads its memory,
 * cpython_walk.c walks a stack, cpython_names.c names the threads. */
#include "cpython_proc.h"
#include "../util/strbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CPY_MAX_CODES 65536	     /* cached code objects before the cache is dropped */
#define CPY_MAX_CODE_BYTES (64 << 20) /* line tables and names cached before the cache is dropped */

/* ---- keeping the stacks of threads that did not run ---- */

/* The GIL interp uses, read now; out->gil is 0 when it cannot be told. */
static void gil_read(struct cpython_proc *cp, uint64_t interp, struct cpython_gil_seen *out)
{
	const struct cpython_layout *l = &cp->lay;
	uint64_t gil = 0, holder, switches;
	memset(out, 0, sizeof(*out));
	if (l->gil_switch_number < 0 || l->gil_last_holder < 0)
		return;
	if (l->interp_gil >= 0) {
		if (cpy_rd_u64(cp, interp + (uint64_t)l->interp_gil, &gil))
			return;
	} else if (l->runtime_gil >= 0) {
		gil = cp->runtime + (uint64_t)l->runtime_gil;
	}
	if (!gil || cpy_rd_u64(cp, gil + (uint64_t)l->gil_last_holder, &holder) ||
	    cpy_rd_u64(cp, gil + (uint64_t)l->gil_switch_number, &switches))
		return;
	*out = (struct cpython_gil_seen){ .gil = gil, .holder = holder, .switches = switches };
}

/* The threads that may have run Python since the previous sample under the
 * GIL now (cpython_gil_ran), or -1: any of them. */
static int gil_ran_since(const struct cpython_proc *cp, const struct cpython_gil_seen *now,
			 uint64_t ran[2])
{
	if (!cp->nprev || cp->prev_code_gen != cp->code_gen || !now->gil)
		return -1;
	for (size_t i = 0; i < CPY_MAX_INTERPS; i++)
		if (cp->gils_prev[i].gil == now->gil)
			return cpython_gil_ran(&cp->gils_prev[i], now, ran);
	return -1;
}

/* The previous sample's read of the thread state k, when it is the same
 * thread with the same innermost frame and its stack was read whole; NULL
 * otherwise. The list keeps its order: look at index hint first. */
static const struct cpython_thread *prev_thread(const struct cpython_proc *cp,
						const struct thread_key *k, size_t hint)
{
	for (size_t j = 0; j < cp->nprev; j++) {
		size_t i = (hint + j) % cp->nprev;
		const struct thread_key *p = &cp->keys_prev[i];
		if (p->tstate != k->tstate)
			continue;
		if (p->pthread != k->pthread || p->native != k->native || p->top != k->top ||
		    !cp->threads_prev[i].ok)
			return NULL;
		return &cp->threads_prev[i];
	}
	return NULL;
}

/* The last sample becomes the previous one; the buffers it leaves are
 * written by this one. */
static void sample_swap(struct cpython_proc *cp, size_t nlast)
{
	struct cpython_thread *t = cp->threads;
	cp->threads = cp->threads_prev;
	cp->threads_prev = t;
	struct cpython_frame *f = cp->frames;
	cp->frames = cp->frames_prev;
	cp->frames_prev = f;
	size_t a = cp->aframes;
	cp->aframes = cp->aframes_prev;
	cp->aframes_prev = a;
	struct thread_key *k = cp->keys;
	cp->keys = cp->keys_prev;
	cp->keys_prev = k;
	memcpy(cp->gils_prev, cp->gils, sizeof(cp->gils));
	memset(cp->gils, 0, sizeof(cp->gils));
	cp->nprev = nlast;
}

int cpython_sample(struct cpython_proc *cp, struct cpython_sample *out)
{
	const struct cpython_layout *l = &cp->lay;
	if (cp->ncodes > CPY_MAX_CODES || cp->code_bytes > CPY_MAX_CODE_BYTES)
		cpy_codes_drop(cp);
	if (!cp->threads) {
		cp->threads = xcalloc(CPY_MAX_THREADS, sizeof(*cp->threads));
		cp->threads_prev = xcalloc(CPY_MAX_THREADS, sizeof(*cp->threads_prev));
		cp->keys = xcalloc(CPY_MAX_THREADS, sizeof(*cp->keys));
		cp->keys_prev = xcalloc(CPY_MAX_THREADS, sizeof(*cp->keys_prev));
	}
	sample_swap(cp, cp->nlast);
	cp->nlast = 0;
	memset(out, 0, sizeof(*out));
	struct page_cache *pc = cp->pages;
	if (++pc->gen == 0) /* wrapped: 0 marks empty slots */
		pc->gen = 1;
	struct cpy_ahead_extra extra;
	cpy_walk_ahead_prepare(cp, &extra);
	cpy_pages_read_ahead(pc, cp->pid, &extra);
	cpy_walk_ahead_done(cp, &extra);
	uint64_t holder = 0;
	pc->noting = 1;
	pc->sampling = 1;
	cp->tids_fresh = 0;
	uint64_t interp;
	int r = cpy_rd_u64(cp, cp->runtime + (uint64_t)l->runtime_interp_head, &interp);
	if (r) {
		pc->noting = pc->sampling = 0;
		return r == -ESRCH || r == -EPERM ? -1 : 0;
	}
	uint64_t gil_holder = 0;
	int gil_known = 0;
	if (l->runtime_tstate_current >= 0)
		gil_known = !cpy_rd_u64(cp, cp->runtime + (uint64_t)l->runtime_tstate_current,
					&gil_holder);
	size_t nthreads = 0, nframes = 0;
	uint64_t pthreads[CPY_MAX_THREADS];
	uint8_t ts[1024];
	if (cp->tstate_read > sizeof(ts)) {
		pc->noting = pc->sampling = 0;
		return 0;
	}
	for (int ni = 0; interp && ni < CPY_MAX_INTERPS; ni++) {
		if (l->interp_gil >= 0) {
			uint64_t gil;
			int32_t locked;
			gil_known = 0;
			gil_holder = 0;
			if (!cpy_rd_u64(cp, interp + (uint64_t)l->interp_gil, &gil) && gil &&
			    !cpy_rd(cp, gil + (uint64_t)l->gil_locked, &locked, sizeof(locked)) &&
			    !cpy_rd_u64(cp, gil + (uint64_t)l->gil_last_holder, &gil_holder)) {
				gil_known = 1;
				if (!locked)
					gil_holder = 0;
			}
		}
		/* Read before any stack: a thread that did not hold it between
		 * the last sample's read and this one has the stack walked then. */
		gil_read(cp, interp, &cp->gils[ni]);
		if (!ni && gil_known)
			holder = gil_holder; /* its walk is read ahead next time */
		uint64_t ran[2];
		int nran = gil_ran_since(cp, &cp->gils[ni], ran);
		uint64_t t;
		if (cpy_rd_u64(cp, interp + (uint64_t)l->interp_tstate_head, &t))
			break;
		for (; t && nthreads < CPY_MAX_THREADS; t = get_u64(ts, l->tstate_next)) {
			if (cpy_rd(cp, t, ts, cp->tstate_read))
				break;
			struct cpython_thread *th = &cp->threads[nthreads];
			memset(th, 0, sizeof(*th));
			th->tstate = t;
			th->holds_gil = gil_known ? t == gil_holder : -1;
			struct thread_key *key = &cp->keys[nthreads];
			*key = (struct thread_key){
				.tstate = t,
				.pthread = get_u64(ts, l->tstate_thread_id),
				.native = l->tstate_native_thread_id >= 0
						  ? get_u64(ts, l->tstate_native_thread_id)
						  : 0,
			};
			int64_t top_off = l->tstate_cframe >= 0 ? l->tstate_cframe : l->tstate_frame;
			if (top_off >= 0)
				key->top = get_u64(ts, top_off);
			if (l->tstate_native_thread_id >= 0)
				th->tid = cpy_host_tid(cp, (pid_t)key->native);
			pthreads[nthreads] = key->pthread;
			th->first = nframes;
			const struct cpython_thread *kept =
				nran > 0 && t != ran[0] && (nran < 2 || t != ran[1])
					? prev_thread(cp, key, nthreads)
					: NULL;
			if (kept) {
				for (size_t i = 0; i < kept->n; i++)
					*cpy_frame_slot(cp, &nframes) =
						cp->frames_prev[kept->first + i];
				th->ok = 1;
				cp->kept++;
			} else {
				cpy_thread_walk(cp, t, th, &nframes);
			}
			th->n = nframes - th->first;
			nthreads++;
			if (get_u64(ts, l->tstate_next) == t)
				break;
		}
		if (cpy_rd_u64(cp, interp + (uint64_t)l->interp_next, &interp))
			break;
	}
	pc->noting = 0;
	pc->sampling = 0;
	if (l->tstate_native_thread_id < 0 && nthreads) {
		/* Until learnt, try again every 16th sample (a torn moment can fool it). */
		if (cp->pthread_tid_off < 0 && cp->tid_tries++ % 16 == 0)
			cpy_learn_pthread_tid_offset(cp, pthreads, nthreads);
		for (size_t i = 0; i < nthreads && cp->pthread_tid_off >= 0; i++) {
			int32_t tid;
			if (!cpy_rd(cp, pthreads[i] + (uint64_t)cp->pthread_tid_off, &tid,
				    sizeof(tid)))
				cp->threads[i].tid = cpy_host_tid(cp, tid);
		}
	}
	pid_t tids[CPY_MAX_THREADS];
	for (size_t i = 0; i < nthreads; i++)
		tids[i] = cp->threads[i].tid;
	cpy_names_update(cp, pthreads, tids, nthreads);
	if (l->tstate_native_thread_id < 0 && cp->pthread_tid_off >= 0)
		cpy_check_pthread_tid_offset(cp, pthreads, tids, nthreads);
	for (size_t i = 0; i < nthreads; i++) {
		const struct thread_name *tn = cpy_name_of_thread(cp, pthreads[i], tids[i]);
		cp->threads[i].name = tn && tn->name[0] ? tn->name : NULL;
	}
	cp->nlast = nthreads;
	cp->holder = holder;
	cp->prev_code_gen = cp->code_gen;
	out->threads = cp->threads;
	out->nthreads = nthreads;
	out->frames = cp->frames;
	out->nframes = nframes;
	return 0;
}

int cpython_frame_at(struct cpython_proc *cp, uint64_t code, uint64_t pos, uint64_t ident,
		     struct cpython_frame *out)
{
	if (cp->ncodes > CPY_MAX_CODES || cp->code_bytes > CPY_MAX_CODE_BYTES)
		cpy_codes_drop(cp);
	if (++cp->pages->gen == 0) /* read the code object now, not from a sample's pages */
		cp->pages->gen = 1;
	const struct code_entry *c = code ? cpy_code_get(cp, code) : NULL;
	if (!c || CPYTHON_CODE_IDENT(c->name, c->file) != ident)
		return -1; /* freed since, maybe another code object there now */
	*out = (struct cpython_frame){ .function = c->func_s, .file = c->file_s,
				       .line = cpy_code_line(cp, c, cpy_frame_addr(cp, code, pos)),
				       .code_id = (uint32_t)(c - cp->codes) };
	return 0;
}
