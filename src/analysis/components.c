/* components: a target of several processes (a launcher, a server and its
 * workers, a build's compilers) grouped into components, with what each
 * costs and does. Report key `components`; no finding of its own (the other
 * analyses' findings name the code).
 *
 * - A process's component is its program as the user would name it: a
 *   Python's script (`app.py`) or module (`-m http.server`), multiprocessing's
 *   helpers by role, any other program by its executable's name (`cc1`).
 *   A process that runs a multiprocessing Process (fork or spawn) is named by
 *   the function it runs: the program's own Python frame under
 *   multiprocessing's `_bootstrap`, most samples first (`worker_loop
 *   (app.py)`), so four workers forked from a server are one component apart
 *   from it.
 * - Per component: its processes, CPU time (the kernel's user + system of
 *   each process) and share of the target's, samples, peak RSS (the largest
 *   process's, and the sum of every process's peak), its top functions (the
 *   program's own frame of each on-CPU sample, frames.h's rule), the busiest
 *   process with its top function, and its time off the CPU with the
 *   program's own frames it waited in.
 * - `dominant`: the component with most CPU time, with its share.
 *
 * Present only for a target of two or more processes that ran code (CPU time
 * or samples); a wrapper's processes (program.h) are left out. */
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"
#include "analysis.h"
#include "frames.h"
#include "procstats.h"
#include "program.h"

#include <stdlib.h>
#include <string.h>

#define COMPONENTS_LISTED 12
#define PIDS_LISTED 10
#define FUNCS_LISTED 3
#define WAITS_LISTED 2
#define BUSY_MIN_NS 10000000LL /* a process that ran code: 10 ms of CPU */
#define MP_FILE "multiprocessing/process.py"

struct comp_proc {
	const struct procstat *ps;
	int64_t samples, off_ns;
	struct hashmap funcs;	/* "function\tfile" -> on-CPU samples */
	struct hashmap entries; /* the function a multiprocessing Process runs -> samples */
	struct hashmap waits;	/* "function\tfile" -> ns off the CPU */
	size_t comp;
};

struct component {
	char *name;
	size_t *procs, nprocs;
	int64_t cpu_ns, samples, off_ns, peak_rss, rss_sum;
	struct hashmap funcs, waits;
};

struct comp_an {
	struct analysis_ctx *ctx;
	struct comp_proc *procs;
	size_t nprocs;
	struct hashmap by_pid; /* pid -> index in procs */
	struct stack_set ss;
	size_t *path;
	int offcpu;
	int64_t off_sample_ns; /* what one Python sample off the CPU stands for; 0: native */
};

static int ends_with(const char *s, const char *tail)
{
	size_t n = s ? strlen(s) : 0, m = strlen(tail);
	return n >= m && !strcmp(s + n - m, tail);
}

static const char *base_name(const char *path, size_t len, size_t *out_len)
{
	const char *b = path;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			b = path + i + 1;
	*out_len = len - (size_t)(b - path);
	return b;
}

/* The program a command line runs, as its user would name it, into out. */
static void command_label(const char *cmd, struct strbuf *out)
{
	const char *p = cmd, *tok[8];
	size_t len[8], n = 0;
	while (*p && n < 8) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		tok[n] = p;
		while (*p && *p != ' ')
			p++;
		len[n] = (size_t)(p - tok[n]);
		n++;
	}
	if (!n) {
		strbuf_addstr(out, "[unknown]");
		return;
	}
	size_t bl;
	const char *b = base_name(tok[0], len[0], &bl);
	if (bl < 6 || strncmp(b, "python", 6)) {
		strbuf_add(out, b, bl);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		if (len[i] == 2 && !strncmp(tok[i], "-m", 2) && i + 1 < n) {
			strbuf_addstr(out, "-m ");
			strbuf_add(out, tok[i + 1], len[i + 1]);
			return;
		}
		if (len[i] == 2 && !strncmp(tok[i], "-c", 2)) {
			const char *code = tok[i + 1 < n ? i + 1 : i];
			if (strstr(code, "multiprocessing.resource_tracker"))
				strbuf_addstr(out, "multiprocessing resource tracker");
			else if (strstr(code, "multiprocessing.forkserver"))
				strbuf_addstr(out, "multiprocessing fork server");
			else if (strstr(code, "multiprocessing"))
				strbuf_addstr(out, "multiprocessing worker");
			else
				strbuf_addf(out, "%.*s -c", (int)bl, b);
			return;
		}
		if (tok[i][0] != '-') {
			size_t sl;
			const char *s = base_name(tok[i], len[i], &sl);
			strbuf_add(out, s, sl);
			return;
		}
	}
	strbuf_add(out, b, bl);
}

static void count(struct hashmap *m, const char *key, size_t len, int64_t by)
{
	int64_t *v = hashmap_get(m, key, len);
	if (v)
		*v += by;
	else
		hashmap_put(m, key, len, by);
}

/* The slot with the largest value (ties: the smaller key), or NULL. */
static const struct hashmap_slot *top_slot(const struct hashmap *m)
{
	const struct hashmap_slot *best = NULL;
	for (size_t i = 0; i < m->cap; i++) {
		const struct hashmap_slot *s = &m->slots[i];
		if (!s->key)
			continue;
		if (!best || s->value > best->value ||
		    (s->value == best->value &&
		     memcmp(s->key, best->key,
			    s->key_len < best->key_len ? s->key_len : best->key_len) < 0))
			best = s;
	}
	return best;
}

static void on_sample(void *arg, const struct stack_sample *smp)
{
	struct comp_an *c = arg;
	int64_t *i = hashmap_get(&c->by_pid, &smp->pid, sizeof(smp->pid));
	if (!i)
		return;
	struct comp_proc *p = &c->procs[*i];
	size_t n = stack_set_path(&c->ss, smp->node, c->path, STACK_DEPTH_MAX);
	/* A multiprocessing Process's stack starts with the frames its parent
	 * forked it from: its own code is what runs under _bootstrap, and the
	 * first own Python frame there names the function it runs. */
	size_t from = 0;
	for (size_t k = 0; k + 1 < n && !from; k++) {
		const struct stack_frame_rec *f = &c->ss.frames[c->path[k]];
		if (ends_with(f->file, MP_FILE) &&
		    (!strcmp(f->function, "_bootstrap") || ends_with(f->function, "._bootstrap")))
			from = k + 1;
	}
	for (size_t j = from; from && j < n; j++) {
		const struct stack_frame_rec *g = &c->ss.frames[c->path[j]];
		if (g->kind && !strcmp(g->kind, "python") && g->file &&
		    !frame_is_python_stdlib(g->file)) {
			count(&p->entries, g->function, strlen(g->function), 1);
			break;
		}
	}
	size_t own = from + frame_own_index(&c->ss, c->path + from, n - from);
	if (own >= n && from && n)
		own = n - 1; /* no code of its own under _bootstrap: the frame it waits in */
	struct strbuf key = STRBUF_INIT;
	if (own < n) {
		const struct stack_frame_rec *f = &c->ss.frames[c->path[own]];
		strbuf_addf(&key, "%s\t%s", f->function,
			    f->file	? f->file
			    : f->module ? f->module
					: "");
	}
	if (c->offcpu) {
		int64_t ns = c->off_sample_ns ? c->off_sample_ns : smp->weight;
		p->off_ns += ns;
		if (key.len)
			count(&p->waits, key.buf, key.len, ns);
		goto out;
	}
	p->samples++;
	if (key.len)
		count(&p->funcs, key.buf, key.len, 1);
out:
	strbuf_release(&key);
}

/* The on-CPU samples (offcpu 0), or the waits: the Python samples off the
 * CPU (blocked, or runnable and queued for a CPU: on a busy machine an idle
 * worker's few samples are mostly queued ones, and they name what it runs),
 * each worth a sampling period, else the native off-CPU intervals. */
static int samples_walk(struct comp_an *c, int offcpu, struct strbuf *err)
{
	int ret;
	c->offcpu = offcpu;
	if (offcpu) {
		ret = stack_set_load_filtered(c->ctx->db, "python", "on_cpu <> 1", &c->ss, err);
		int64_t hz = 0;
		if (!recording_meta_int(c->ctx->db, "python_rate_hz", &hz) && hz > 0)
			c->off_sample_ns = 1000000000LL / hz;
		if (!ret && (!c->ss.nleaves || !c->off_sample_ns)) {
			stack_set_release(&c->ss);
			c->ss = (struct stack_set)STACK_SET_INIT;
			c->off_sample_ns = 0;
			ret = stack_set_load(c->ctx->db, "offcpu", &c->ss, err);
		}
	} else {
		ret = stack_set_load_on_cpu(c->ctx->db, &c->ss, NULL, err);
	}
	if (!ret && c->ss.nleaves)
		ret = stack_set_each_sample_of(c->ctx->db, &c->ss, on_sample, c, err);
	stack_set_release(&c->ss);
	c->ss = (struct stack_set)STACK_SET_INIT;
	return ret;
}

static int64_t cpu_ns_of(const struct procstat *ps)
{
	return (ps->user_ns > 0 ? ps->user_ns : 0) + (ps->sys_ns > 0 ? ps->sys_ns : 0);
}

/* Adds every slot of from into to. */
static void merge(struct hashmap *to, const struct hashmap *from)
{
	for (size_t i = 0; i < from->cap; i++)
		if (from->slots[i].key)
			count(to, from->slots[i].key, from->slots[i].key_len, from->slots[i].value);
}

/* [{function, file, <unit>}] of the largest slots of m, at most max. */
static json_t *slots_json(const struct hashmap *m, size_t max, const char *unit, double scale,
			  int64_t total)
{
	json_t *arr = json_array();
	const struct hashmap_slot *taken[FUNCS_LISTED + WAITS_LISTED] = {NULL};
	for (size_t k = 0; k < max; k++) {
		const struct hashmap_slot *best = NULL;
		for (size_t i = 0; i < m->cap; i++) {
			const struct hashmap_slot *s = &m->slots[i];
			int seen = 0;
			for (size_t j = 0; j < k; j++)
				seen |= taken[j] == s;
			if (s->key && !seen && (!best || s->value > best->value))
				best = s;
		}
		if (!best)
			break;
		taken[k] = best;
		const char *tab = memchr(best->key, '\t', best->key_len);
		size_t fl = tab ? (size_t)(tab - best->key) : best->key_len;
		json_t *o = json_object();
		json_object_set_new(o, "function", report_string(best->key, fl));
		json_object_set_new(
		    o, "file", tab ? report_string(tab + 1, best->key_len - fl - 1) : json_null());
		json_object_set_new(o, unit,
				    scale == 1 ? json_integer(best->value)
					       : json_real((double)best->value * scale));
		if (total > 0)
			json_object_set_new(o, "share_pct",
					    json_real(100.0 * (double)best->value / (double)total));
		json_array_append_new(arr, o);
	}
	return arr;
}

static int by_cpu_desc(const void *a, const void *b)
{
	const struct component *x = a, *y = b;
	if (x->cpu_ns != y->cpu_ns)
		return x->cpu_ns > y->cpu_ns ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->name, y->name);
}

static json_t *component_json(struct comp_an *c, struct component *k, int64_t all_cpu_ns)
{
	json_t *o = json_object(), *pids = json_array();
	size_t busiest = k->procs[0];
	for (size_t i = 0; i < k->nprocs; i++) {
		struct comp_proc *p = &c->procs[k->procs[i]];
		if (i < PIDS_LISTED)
			json_array_append_new(pids, json_integer(p->ps->pid));
		int64_t a = cpu_ns_of(p->ps), b = cpu_ns_of(c->procs[busiest].ps);
		if (a > b || (a == b && p->samples > c->procs[busiest].samples))
			busiest = k->procs[i];
	}
	json_object_set_new(o, "name", report_string(k->name, strlen(k->name)));
	json_object_set_new(o, "processes", json_integer((json_int_t)k->nprocs));
	json_object_set_new(o, "pids", pids);
	json_object_set_new(o, "cpu_s", json_real((double)k->cpu_ns / 1e9));
	json_object_set_new(o, "cpu_pct",
			    all_cpu_ns > 0
				? json_real(100.0 * (double)k->cpu_ns / (double)all_cpu_ns)
				: json_null());
	json_object_set_new(o, "samples", json_integer(k->samples));
	json_object_set_new(o, "peak_rss_bytes",
			    k->peak_rss > 0 ? json_integer(k->peak_rss) : json_null());
	json_object_set_new(o, "rss_sum_bytes",
			    k->rss_sum > 0 ? json_integer(k->rss_sum) : json_null());
	json_object_set_new(o, "top_functions",
			    slots_json(&k->funcs, FUNCS_LISTED, "samples", 1, k->samples));
	json_object_set_new(o, "waiting_s", json_real((double)k->off_ns / 1e9));
	json_object_set_new(o, "waits", slots_json(&k->waits, WAITS_LISTED, "seconds", 1e-9, 0));
	struct comp_proc *bp = &c->procs[busiest];
	json_t *b = json_object();
	json_object_set_new(b, "pid", json_integer(bp->ps->pid));
	json_object_set_new(b, "cpu_s", json_real((double)cpu_ns_of(bp->ps) / 1e9));
	json_object_set_new(b, "share_pct",
			    k->cpu_ns > 0
				? json_real(100.0 * (double)cpu_ns_of(bp->ps) / (double)k->cpu_ns)
				: json_null());
	json_t *top = slots_json(&bp->funcs, 1, "samples", 1, bp->samples);
	json_t *f = json_array_get(top, 0);
	json_object_set(b, "function", f ? json_object_get(f, "function") : json_null());
	json_object_set(b, "file", f ? json_object_get(f, "file") : json_null());
	json_decref(top);
	json_object_set_new(o, "busiest", b);
	return o;
}

static void components_build(struct comp_an *c, struct component **out, size_t *nout)
{
	struct component *v = NULL;
	size_t n = 0;
	for (size_t i = 0; i < c->nprocs; i++) {
		struct comp_proc *p = &c->procs[i];
		struct strbuf name = STRBUF_INIT, label = STRBUF_INIT;
		command_label(p->ps->command, &label);
		const struct hashmap_slot *e = top_slot(&p->entries);
		if (e) {
			strbuf_add(&name, e->key, e->key_len);
			strbuf_addf(&name, " (%s)", label.buf);
		} else {
			strbuf_add(&name, label.buf, label.len);
		}
		size_t k = 0;
		while (k < n && strcmp(v[k].name, name.buf))
			k++;
		if (k == n) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = (struct component){.name = strbuf_detach(&name)};
		}
		strbuf_release(&name);
		strbuf_release(&label);
		struct component *m = &v[k];
		m->procs = xrealloc(m->procs, (m->nprocs + 1) * sizeof(*m->procs));
		m->procs[m->nprocs++] = i;
		m->cpu_ns += cpu_ns_of(p->ps);
		m->samples += p->samples;
		m->off_ns += p->off_ns;
		if (p->ps->peak_rss_bytes > 0) {
			m->rss_sum += p->ps->peak_rss_bytes;
			if (p->ps->peak_rss_bytes > m->peak_rss)
				m->peak_rss = p->ps->peak_rss_bytes;
		}
		merge(&m->funcs, &p->funcs);
		merge(&m->waits, &p->waits);
	}
	qsort(v, n, sizeof(*v), by_cpu_desc);
	*out = v;
	*nout = n;
}

static int components_run(struct analysis_ctx *ctx)
{
	struct comp_an c = {.ctx = ctx, .ss = STACK_SET_INIT};
	struct strbuf err = STRBUF_INIT;
	struct component *comps = NULL;
	size_t ncomps = 0, busy = 0;
	int ret = 0;
	if (!ctx->procs || ctx->procs->n < 2 || !recording_has_table(ctx->db, "samples"))
		goto out;
	c.procs = xcalloc(ctx->procs->n, sizeof(*c.procs));
	for (size_t i = 0; i < ctx->procs->n; i++) {
		const struct procstat *ps = &ctx->procs->v[i];
		if (ctx->program && ps->pid != ctx->program->pid &&
		    program_is_wrapper(ctx->program, ctx->procs, ps->pid, INT64_MAX))
			continue; /* a shell or a shim that started the program */
		c.procs[c.nprocs].ps = ps;
		hashmap_put(&c.by_pid, &ctx->procs->v[i].pid, sizeof(int64_t), (int64_t)c.nprocs);
		c.nprocs++;
	}
	c.path = xmalloc(STACK_DEPTH_MAX * sizeof(*c.path));
	if (samples_walk(&c, 0, &err) || samples_walk(&c, 1, &err)) {
		ret = -1;
		goto out;
	}
	for (size_t i = 0; i < c.nprocs; i++)
		busy += cpu_ns_of(c.procs[i].ps) >= BUSY_MIN_NS || c.procs[i].samples > 0;
	if (busy < 2)
		goto out;
	components_build(&c, &comps, &ncomps);
	int64_t all = 0;
	for (size_t k = 0; k < ncomps; k++)
		all += comps[k].cpu_ns;
	json_t *o = json_object(), *list = json_array();
	for (size_t k = 0; k < ncomps && k < COMPONENTS_LISTED; k++)
		json_array_append_new(list, component_json(&c, &comps[k], all));
	json_object_set_new(o, "dominant", report_string(comps[0].name, strlen(comps[0].name)));
	json_object_set_new(o, "dominant_cpu_pct",
			    all > 0 ? json_real(100.0 * (double)comps[0].cpu_ns / (double)all)
				    : json_null());
	json_object_set_new(o, "count", json_integer((json_int_t)ncomps));
	json_object_set_new(o, "list", list);
	json_object_set_new(ctx->report, "components", o);
out:
	for (size_t k = 0; k < ncomps; k++) {
		free(comps[k].name);
		free(comps[k].procs);
		hashmap_release(&comps[k].funcs);
		hashmap_release(&comps[k].waits);
	}
	free(comps);
	for (size_t i = 0; i < c.nprocs; i++) {
		hashmap_release(&c.procs[i].funcs);
		hashmap_release(&c.procs[i].entries);
		hashmap_release(&c.procs[i].waits);
	}
	free(c.procs);
	free(c.path);
	hashmap_release(&c.by_pid);
	strbuf_release(&err);
	return ret;
}

static const char *const components_provides[] = { "components", NULL };

const struct analysis_ops analysis_components = {
	.name = "components",
	.provides = components_provides,
	.run = components_run,
};
