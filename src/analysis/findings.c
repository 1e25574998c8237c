/* findings: storage, ranking and JSON form of findings. */
#include "findings.h"
#include "analysis.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

static const char *dup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

int findings_dimension_known(const char *dimension)
{
	static const char *const known[] = { "cpu", "memory", "gpu", "interconnect", "io",
					     "concurrency" };
	for (size_t i = 0; dimension && i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(dimension, known[i]))
			return 1;
	return 0;
}

void findings_add_time(struct findings *fs, struct finding *f, double stake_s, double wall_s)
{
	f->impact_s = stake_s;
	f->impact_bytes = -1;
	f->impact_pct = wall_s > 0 ? 100.0 * stake_s / wall_s : 0;
	findings_add(fs, f);
}

void findings_add(struct findings *fs, const struct finding *f)
{
	if (fs->n == fs->alloc) {
		fs->alloc = fs->alloc ? fs->alloc * 2 : 8;
		fs->v = xrealloc(fs->v, fs->alloc * sizeof(*fs->v));
	}
	struct finding *d = &fs->v[fs->n++];
	*d = *f;
	d->id = dup_or_empty(f->id);
	d->title = dup_or_empty(f->title);
	d->dimension = dup_or_empty(f->dimension);
	d->location = dup_or_empty(f->location);
	d->evidence = dup_or_empty(f->evidence);
	d->diagnosis = dup_or_empty(f->diagnosis);
	d->next_step = dup_or_empty(f->next_step);
	d->validation = dup_or_empty(f->validation);
	d->also = NULL;
	d->impact_unscaled_s = 0;
	d->time_pct = d->bytes_pct = -1;
}

static void finding_release(struct finding *f)
{
	free((char *)f->id);
	free((char *)f->title);
	free((char *)f->dimension);
	free((char *)f->location);
	free((char *)f->evidence);
	free((char *)f->diagnosis);
	free((char *)f->next_step);
	free((char *)f->validation);
	json_decref(f->also);
}

void findings_release(struct findings *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		finding_release(&fs->v[i]);
	free(fs->v);
	memset(fs, 0, sizeof(*fs));
}

/* Findings quote outside text (a command line, say): invalid UTF-8 would make
 * jansson refuse the string, and with it the whole finding. */
static json_t *text_json(const char *s)
{
	return report_string(s, strlen(s));
}

static int by_impact(const void *a, const void *b)
{
	const struct finding *x = a, *y = b;
	if (x->impact_pct != y->impact_pct)
		return x->impact_pct < y->impact_pct ? 1 : -1;
	return strcmp(x->title, y->title);
}

/* The cause a location names: without its trailing ":LINE" and without the
 * directories of its file, so "py_build.py:build_table:17" and
 * "/src/app/py_build.py:build_table:12" are one function. */
const char *findings_cause(const char *loc, size_t *len)
{
	size_t n = strlen(loc), k = n;
	while (k > 0 && loc[k - 1] >= '0' && loc[k - 1] <= '9')
		k--;
	if (k < n && k > 0 && loc[k - 1] == ':')
		n = k - 1;
	const char *base = loc;
	for (size_t i = 0; i < n; i++)
		if (loc[i] == '/')
			base = loc + i + 1;
	*len = n - (size_t)(base - loc);
	return base;
}

/* A finding that shows its code allocates or touches memory: what a guessed
 * location (FINDING_BLAMES_GUESS) needs beside it to be the same cause. */
static int about_memory(const struct finding *f)
{
	return f->blames_code == FINDING_BLAMES_CODE &&
	       (!strncmp(f->id, "memory.", 7) || !strcmp(f->id, "cpu.fresh_memory") ||
		!strcmp(f->id, "asyncio.fanout_memory"));
}

static int same_cause(const struct finding *a, const struct finding *b)
{
	if (!a->blames_code || !b->blames_code)
		return 0;
	if ((a->blames_code == FINDING_BLAMES_GUESS && !about_memory(b)) ||
	    (b->blames_code == FINDING_BLAMES_GUESS && !about_memory(a)))
		return 0;
	size_t na, nb;
	const char *ca = findings_cause(a->location, &na), *cb = findings_cause(b->location, &nb);
	return na && na == nb && !memcmp(ca, cb, na);
}

/* How much a finding's words say about its cause: a hot function (0) says
 * less than an RSS step or a CPU-bound phase there (1), which says less than
 * what its time went to (2: fresh memory, system calls; a phase's wait),
 * which says less than the run's top off-CPU wait there (3: it knows the
 * call and the state), which says less than a named pattern (4: a peak
 * site, a blocked event loop, an oversized pool, a lock wait). */
static int specificity(const struct finding *f)
{
	static const char *const cost_classes[] = { "cpu.fresh_memory", "cpu.syscalls",
						    "cpu.memory_copies", "cpu.system_code",
						    "phase.io_bound", NULL };
	if (!strcmp(f->id, "cpu.hotspot"))
		return 0;
	if (!strcmp(f->id, "memory.rss_jump") || !strcmp(f->id, "concurrency.idle_thread") ||
	    !strcmp(f->id, "phase.cpu_bound") || !strcmp(f->id, "gpu.host_bound"))
		return 1;
	for (size_t i = 0; cost_classes[i]; i++)
		if (!strcmp(f->id, cost_classes[i]))
			return 2;
	if (!strcmp(f->id, "cpu.off_cpu") || !strcmp(f->id, "cpu.main_thread_waits"))
		return 3;
	return 4;
}

/* The share of the run a finding's seconds stand for (its impact_pct when
 * its stake is time alone), and its bytes' share. */
static double time_pct(const struct finding *f)
{
	return f->impact_s < 0 ? -1 : f->impact_bytes < 0 ? f->impact_pct : f->time_pct;
}

static double bytes_pct(const struct finding *f)
{
	return f->impact_bytes < 0 ? -1 : f->impact_s < 0 ? f->impact_pct : f->bytes_pct;
}

/* into ends with the words of the more specific of the two (of the one with
 * more at stake between equals); from's title and evidence join its evidence.
 * Time at stake: the more specific finding's estimate (a hot function's is a
 * rougher one of the same time), the larger between equals; bytes: the larger. */
static void merge_into(struct finding *into, struct finding *from)
{
	if (specificity(from) > specificity(into)) {
		struct finding t = *into;
		*into = *from;
		*from = t;
	}
	struct strbuf ev = STRBUF_INIT;
	strbuf_addf(&ev, "%s; also at this code: %s (%s)", into->evidence, from->title,
		    from->evidence);
	free((char *)into->evidence);
	into->evidence = strbuf_detach(&ev);
	if (!into->also)
		into->also = json_array();
	json_t *o = json_object();
	json_object_set_new(o, "id", text_json(from->id));
	json_object_set_new(o, "title", text_json(from->title));
	json_array_append_new(into->also, o);
	if (from->also)
		json_array_extend(into->also, from->also);
	double tp = time_pct(into), bp = bytes_pct(into);
	if (into->impact_s < 0 || (specificity(from) == specificity(into) &&
				   from->impact_s > into->impact_s)) {
		if (from->impact_s >= 0) {
			into->impact_s = from->impact_s;
			tp = time_pct(from);
		}
	}
	if (from->impact_bytes > into->impact_bytes) {
		into->impact_bytes = from->impact_bytes;
		bp = bytes_pct(from);
	}
	into->time_pct = tp;
	into->bytes_pct = bp;
	into->impact_pct = tp > bp ? tp : bp;
}

int findings_has(const struct findings *fs, const char *id)
{
	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->v[i].id, id))
			return 1;
	return 0;
}

void findings_merge(struct findings *fs)
{
	if (fs->n > 1)
		qsort(fs->v, fs->n, sizeof(*fs->v), by_impact);
	for (size_t i = 0; i < fs->n; i++) {
		for (size_t j = i + 1; j < fs->n;) {
			if (!same_cause(&fs->v[i], &fs->v[j])) {
				j++;
				continue;
			}
			merge_into(&fs->v[i], &fs->v[j]);
			finding_release(&fs->v[j]);
			memmove(&fs->v[j], &fs->v[j + 1], (fs->n - j - 1) * sizeof(*fs->v));
			fs->n--;
		}
	}
}

void findings_rank(struct findings *fs, double wall_s, size_t keep)
{
	double sum_s = 0;
	for (size_t i = 0; i < fs->n; i++)
		sum_s += fs->v[i].impact_s > 0 ? fs->v[i].impact_s : 0;
	if (wall_s > 0 && sum_s > wall_s) {
		/* Stakes overlap (a hotspot inside a wait for the GIL, a slow phase
		 * around a hotspot): shared out in proportion, they claim at most the
		 * whole run together, and each keeps its own estimate beside. */
		double k = wall_s / sum_s;
		for (size_t i = 0; i < fs->n; i++) {
			struct finding *f = &fs->v[i];
			if (f->impact_s <= 0)
				continue;
			double bp = bytes_pct(f);
			f->impact_unscaled_s = f->impact_s;
			f->impact_s *= k;
			f->time_pct = 100.0 * f->impact_s / wall_s;
			f->bytes_pct = bp;
			f->impact_pct = f->time_pct > bp ? f->time_pct : bp;
		}
	}
	if (fs->n > 1)
		qsort(fs->v, fs->n, sizeof(*fs->v), by_impact);
	while (fs->n > keep)
		finding_release(&fs->v[--fs->n]);
}

json_t *findings_to_json(const struct findings *fs)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < fs->n; i++) {
		const struct finding *f = &fs->v[i];
		json_t *impact = json_object();
		if (f->impact_s >= 0)
			json_object_set_new(impact, "seconds", json_real(f->impact_s));
		if (f->impact_bytes >= 0) /* past 2^63 only from a damaged recording */
			json_object_set_new(impact, "bytes",
					    f->impact_bytes < 0x1p63
						? json_integer((json_int_t)f->impact_bytes)
						: json_real(f->impact_bytes));
		json_object_set_new(impact, "share_pct", json_real(f->impact_pct));
		if (f->impact_unscaled_s > 0)
			json_object_set_new(impact, "unscaled_seconds",
					    json_real(f->impact_unscaled_s));
		json_t *o = json_object();
		json_object_set_new(o, "rank", json_integer((json_int_t)i + 1));
		json_object_set_new(o, "id", text_json(f->id));
		json_object_set_new(o, "title", text_json(f->title));
		json_object_set_new(o, "dimension", text_json(f->dimension));
		json_object_set_new(o, "location", text_json(f->location));
		json_object_set_new(o, "evidence", text_json(f->evidence));
		json_object_set_new(o, "diagnosis", text_json(f->diagnosis));
		json_object_set_new(o, "next_step", text_json(f->next_step));
		json_object_set_new(o, "validation", text_json(f->validation));
		json_object_set_new(o, "impact", impact);
		if (f->also)
			json_object_set_new(o, "also", json_incref(f->also));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* 1 when the interim note text names id at a location with loc's cause. */
static int note_names(const char *text, const char *id, const char *loc)
{
	if (!id || !*id)
		return 0;
	size_t idlen = strlen(id), want_len, got_len;
	const char *want = findings_cause(loc, &want_len);
	for (const char *p = strchr(text, '['); p; p = strchr(p + 1, '[')) {
		if (strncmp(p + 1, id, idlen) || strncmp(p + 1 + idlen, "] ", 2))
			continue;
		const char *at = p + 1 + idlen + 2, *end = strchr(at, ';');
		char got_loc[1024];
		size_t n = end ? (size_t)(end - at) : strlen(at);
		if (n >= sizeof(got_loc))
			n = sizeof(got_loc) - 1;
		memcpy(got_loc, at, n);
		got_loc[n] = '\0';
		const char *got = findings_cause(got_loc, &got_len);
		if (got_len == want_len && !strncmp(got, want, want_len))
			return 1;
	}
	return 0;
}

/* "after phase NAME at 3.214 s: ..." -> NAME, as a new JSON string. */
static json_t *note_phase(const char *text)
{
	const char *from = "after phase ", *colon = strstr(text, " s: [");
	if (strncmp(text, from, strlen(from)) || !colon)
		return json_null();
	const char *name = text + strlen(from), *at = NULL;
	for (const char *p = strstr(name, " at "); p && p < colon; p = strstr(p + 1, " at "))
		at = p;
	return at ? json_stringn(name, (size_t)(at - name)) : json_null();
}

void findings_mark_known(json_t *findings, json_t *notes)
{
	size_t i, k;
	json_t *f, *n;
	json_array_foreach(findings, i, f) {
		const char *loc = json_string_value(json_object_get(f, "location"));
		json_array_foreach(notes, k, n) {
			const char *probe = json_string_value(json_object_get(n, "probe"));
			const char *text = json_string_value(json_object_get(n, "text"));
			if (!probe || strcmp(probe, "interim") || !text || !loc)
				continue;
			int named = note_names(text, json_string_value(json_object_get(f, "id")), loc);
			size_t a;
			json_t *also;
			json_array_foreach(json_object_get(f, "also"), a, also)
				named = named || note_names(text,
							    json_string_value(json_object_get(also, "id")),
							    loc);
			if (!named)
				continue;
			json_t *known = json_object();
			json_object_set(known, "at_s", json_object_get(n, "t_s"));
			json_object_set_new(known, "after_phase", note_phase(text));
			json_object_set_new(f, "known_mid_run", known);
			break;
		}
	}
}
