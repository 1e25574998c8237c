/* gpu_nvtx: GPU time per NVTX range and per NVTX phase (gpu_nvtx.h). */
#include "gpu_nvtx.h"
#include "../record/reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"
#include "analysis.h"

#include <stdlib.h>
#include <string.h>

static void work_add(struct gpu_work *to, const struct gpu_work *w)
{
	to->kernel_ns += w->kernel_ns;
	to->copy_ns += w->copy_ns;
	to->kernels += w->kernels;
	to->copies += w->copies;
}

static int launch_by_thread_start(const void *p, const void *q)
{
	const struct gpu_launch *x = p, *y = q;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Plain scans joined in a hash map by (pid, corr): SQL's join and sort of a
 * million kernels took seconds. */
static int launches_scan(sqlite3 *db, struct gpu_launches *l, struct hashmap *by_corr,
			 const char *sql, int what)
{
	sqlite3_stmt *st;
	size_t alloc = l->n;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t key[2] = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
		int64_t *at = hashmap_get(by_corr, key, sizeof(key));
		if (what == 2) { /* the call */
			struct gpu_launch *x = at ? &l->v[*at] : NULL;
			if (x && x->tid < 0) {
				x->tid = x->held_tid = sqlite3_column_int64(st, 2);
				x->start_ns = sqlite3_column_int64(st, 3);
				x->end_ns = sqlite3_column_int64(st, 4);
			}
			continue;
		}
		if (!at) {
			if (l->n == alloc) {
				alloc = alloc ? 2 * alloc : 1024;
				l->v = xrealloc(l->v, alloc * sizeof(*l->v));
			}
			l->v[l->n] = (struct gpu_launch){key[0], -1, 0, 0, -1, 0, {0}};
			at = hashmap_put(by_corr, key, sizeof(key), (int64_t)l->n++);
		}
		struct gpu_work w = {0};
		int64_t ns = sqlite3_column_int64(st, 2);
		if (what == 0)
			w = (struct gpu_work){.kernel_ns = ns, .kernels = 1};
		else
			w = (struct gpu_work){.copy_ns = ns, .copies = 1};
		work_add(&l->v[*at].work, &w);
		work_add(&l->all, &w);
	}
	sqlite3_finalize(st);
	return 0;
}

/* A kernel whose call was not recorded (launched through the driver API, as
 * cuBLAS does) ran on its stream in launch order: when the recorded launches
 * before and after it there were made by one thread, it was launched by that
 * thread between those two calls, and counts as such. */
static void launches_infer(sqlite3 *db, struct gpu_launches *l, const struct hashmap *by_corr)
{
	sqlite3_stmt *st;
	int64_t group[3] = { -1, -1, -1 }, prev = -1; /* pid, device, stream; attributed */
	int64_t *run = NULL;			       /* unattributed since prev */
	size_t nrun = 0, alloc = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT pid, corr, device, stream FROM gpu_kernels"
			       " WHERE end_ns >= start_ns ORDER BY pid, device, stream, start_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t key[2] = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) };
		int64_t g[3] = { key[0], sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3) };
		int64_t *at = hashmap_get(by_corr, key, sizeof(key));
		if (!at)
			continue;
		if (memcmp(g, group, sizeof(g))) {
			memcpy(group, g, sizeof(g));
			prev = -1;
			nrun = 0;
		}
		struct gpu_launch *x = &l->v[*at];
		if (x->tid < 0 || x->inferred) {
			if (nrun == alloc) {
				alloc = alloc ? 2 * alloc : 64;
				run = xrealloc(run, alloc * sizeof(*run));
			}
			run[nrun++] = *at;
			continue;
		}
		const struct gpu_launch *p = prev >= 0 ? &l->v[prev] : NULL;
		for (size_t i = 0; p && i < nrun; i++) {
			struct gpu_launch *u = &l->v[run[i]];
			if (u->tid >= 0 || p->tid != x->tid || x->start_ns < p->end_ns)
				continue;
			u->tid = u->held_tid = p->tid;
			u->start_ns = p->end_ns;
			u->end_ns = x->start_ns;
			u->inferred = 1;
		}
		nrun = 0;
		prev = *at;
	}
	sqlite3_finalize(st);
	free(run);
}

int gpu_launches_load(sqlite3 *db, struct gpu_launches *l)
{
	struct hashmap by_corr = HASHMAP_INIT;
	int rc = -1;
	*l = (struct gpu_launches)GPU_LAUNCHES_INIT;
	if (!recording_has_table(db, "gpu_kernels") || !recording_has_table(db, "gpu_copies") ||
	    !recording_has_table(db, "gpu_api"))
		return -1;
	if (launches_scan(db, l, &by_corr,
			  "SELECT pid, corr, end_ns - start_ns FROM gpu_kernels"
			  " WHERE end_ns >= start_ns",
			  0) ||
	    launches_scan(db, l, &by_corr,
			  "SELECT pid, corr, end_ns - start_ns FROM gpu_copies"
			  " WHERE end_ns >= start_ns",
			  1) ||
	    launches_scan(db, l, &by_corr, "SELECT pid, corr, tid, start_ns, end_ns FROM gpu_api",
			  2))
		goto out;
	launches_infer(db, l, &by_corr);
	if (l->n) /* qsort's array may not be NULL */
		qsort(l->v, l->n, sizeof(*l->v), launch_by_thread_start);
	rc = 0;
out:
	hashmap_release(&by_corr);
	if (rc)
		gpu_launches_release(l);
	return rc;
}

void gpu_launches_release(struct gpu_launches *l)
{
	free(l->v);
	*l = (struct gpu_launches)GPU_LAUNCHES_INIT;
}

/* The keys of w into o, the share of all's time as gpu_pct (null without
 * any GPU time); self names the self keys (gpu_self_kernel_s, ...). */
static void work_json(json_t *o, const struct gpu_work *w, const struct gpu_work *all, int self)
{
	int64_t all_ns = all->kernel_ns + all->copy_ns;
	json_object_set_new(o, self ? "gpu_self_kernel_s" : "gpu_kernel_s",
			    json_real((double)w->kernel_ns / 1e9));
	json_object_set_new(o, self ? "gpu_self_copy_s" : "gpu_copy_s",
			    json_real((double)w->copy_ns / 1e9));
	json_object_set_new(o, self ? "self_kernels" : "kernels", json_integer(w->kernels));
	json_object_set_new(o, self ? "self_copies" : "copies", json_integer(w->copies));
	json_object_set_new(
	    o, self ? "gpu_self_pct" : "gpu_pct",
	    all_ns > 0 ? json_real(100.0 * (double)(w->kernel_ns + w->copy_ns) / (double)all_ns)
		       : json_null());
}

struct range {
	int64_t pid, tid, start_ns, end_ns, depth;
	size_t name; /* into names */
};

struct name_sums {
	struct gpu_work total, self;
	size_t last_launch; /* the launch it was last credited (+1; 0 none) */
};

struct attribution {
	struct range *r; /* sorted by pid, tid, start_ns, depth */
	size_t nr;
	struct name_sums *names;
	size_t nnames;
	struct hashmap index; /* domain NUL name -> names index */
	struct gpu_work inside, outside, unattributed;
	struct gpu_work other_thread; /* of inside: held by another thread's ranges */
	struct gpu_work inferred;     /* of inside and outside: no call recorded (launches_infer) */
};

/* A name's key in attribution.index: domain NUL name. */
static void key_set(struct strbuf *key, const char *domain, const char *name)
{
	strbuf_reset(key);
	strbuf_addstr(key, domain ? domain : "");
	strbuf_addch(key, '\0');
	strbuf_addstr(key, name ? name : "");
}

static size_t name_intern(struct attribution *a, const char *domain, const char *name,
			  size_t *alloc)
{
	struct strbuf key = STRBUF_INIT;
	key_set(&key, domain, name);
	int64_t *at = hashmap_get(&a->index, key.buf, key.len);
	size_t i = at ? (size_t)*at : a->nnames;
	if (!at) {
		if (a->nnames == *alloc) {
			*alloc = *alloc ? 2 * *alloc : 64;
			a->names = xrealloc(a->names, *alloc * sizeof(*a->names));
		}
		a->names[a->nnames++] = (struct name_sums){0};
		hashmap_put(&a->index, key.buf, key.len, (int64_t)i);
	}
	strbuf_release(&key);
	return i;
}

static int ranges_load(sqlite3 *db, struct attribution *a)
{
	sqlite3_stmt *st;
	size_t alloc = 0, names_alloc = 0;
	if (!recording_has_table(db, "nvtx_ranges") ||
	    sqlite3_prepare_v2(db,
			       "SELECT pid, tid, start_ns, end_ns, depth, domain, name FROM"
			       " nvtx_ranges WHERE type != 'mark' AND end_ns >= start_ns"
			       " ORDER BY pid, tid, start_ns, depth",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (a->nr == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			a->r = xrealloc(a->r, alloc * sizeof(*a->r));
		}
		struct range *r = &a->r[a->nr++];
		r->pid = sqlite3_column_int64(st, 0);
		r->tid = sqlite3_column_int64(st, 1);
		r->start_ns = sqlite3_column_int64(st, 2);
		r->end_ns = sqlite3_column_int64(st, 3);
		r->depth = sqlite3_column_int64(st, 4);
		r->name = name_intern(a, (const char *)sqlite3_column_text(st, 5),
				      (const char *)sqlite3_column_text(st, 6), &names_alloc);
	}
	sqlite3_finalize(st);
	return 0;
}

/* A sweep of launches over the ranges of their group (their thread, or
 * with by_thread 0 their process), both in (group, start) order. */
struct sweep {
	const struct range **r;
	size_t nr, j;
	const struct range **open; /* started before the last launch, not ended */
	size_t nopen;
	const struct range **held; /* of them, those holding the last launch */
	size_t nheld;
	int by_thread;
};

/* <0, 0, >0 as the range's group comes before, is, or comes after the
 * launch's. */
static int group_cmp(const struct sweep *s, int64_t pid, int64_t tid, const struct gpu_launch *x)
{
	if (pid != x->pid)
		return pid < x->pid ? -1 : 1;
	if (!s->by_thread || tid == x->tid)
		return 0;
	return tid < x->tid ? -1 : 1;
}

/* Moves s to launch x (prev: the launch before it in the order, or NULL)
 * and fills s->held. */
static void sweep_to(struct sweep *s, const struct gpu_launch *x, const struct gpu_launch *prev)
{
	if (!prev || group_cmp(s, prev->pid, prev->tid, x))
		s->nopen = 0;
	while (s->j < s->nr && group_cmp(s, s->r[s->j]->pid, s->r[s->j]->tid, x) < 0)
		s->j++;
	while (s->j < s->nr && !group_cmp(s, s->r[s->j]->pid, s->r[s->j]->tid, x) &&
	       s->r[s->j]->start_ns <= x->start_ns)
		s->open[s->nopen++] = s->r[s->j++];
	size_t kept = 0; /* later calls start later: a range ended before is done */
	s->nheld = 0;
	for (size_t k = 0; k < s->nopen; k++) {
		if (s->open[k]->end_ns < x->start_ns)
			continue;
		s->open[kept++] = s->open[k];
		if (x->end_ns <= s->open[k]->end_ns)
			s->held[s->nheld++] = s->open[k];
	}
	s->nopen = kept;
}

/* Credits launch i (x) to the ranges in held (at least one). */
static void launch_credit(struct attribution *a, const struct range *const *held, size_t n,
			  size_t i, const struct gpu_launch *x)
{
	const struct range *inner = NULL;
	for (size_t k = 0; k < n; k++) {
		const struct range *r = held[k];
		struct name_sums *s = &a->names[r->name];
		if (s->last_launch != i + 1) {
			work_add(&s->total, &x->work);
			s->last_launch = i + 1;
		}
		if (!inner || r->start_ns > inner->start_ns ||
		    (r->start_ns == inner->start_ns && r->depth > inner->depth))
			inner = r;
	}
	work_add(&a->names[inner->name].self, &x->work);
	work_add(&a->inside, &x->work);
}

static int launch_by_pid_start(const void *p, const void *q)
{
	const struct gpu_launch *x = *(const struct gpu_launch *const *)p,
				*y = *(const struct gpu_launch *const *)q;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int range_by_pid_start(const void *p, const void *q)
{
	const struct range *x = *(const struct range *const *)p,
			   *y = *(const struct range *const *)q;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* First, each launch against the ranges of its own thread; then the ones
 * none of those holds against every range of their process: held by the
 * ranges of one other thread alone (PyTorch's backward pass launches from
 * autograd's thread while the caller waits in its range), they are that
 * thread's; else (no range, or several threads' ranges) outside. Sets each
 * launch's held_tid. */
static void attribute(struct attribution *a, struct gpu_launches *l)
{
	struct sweep s = {.nr = a->nr, .by_thread = 1};
	const struct gpu_launch **left = xcalloc(l->n + 1, sizeof(*left)), *prev = NULL;
	size_t nleft = 0;
	s.r = xcalloc(a->nr + 1, sizeof(*s.r));
	s.open = xcalloc(a->nr + 1, sizeof(*s.open));
	s.held = xcalloc(a->nr + 1, sizeof(*s.held));
	for (size_t k = 0; k < a->nr; k++)
		s.r[k] = &a->r[k];
	for (size_t i = 0; i < l->n; i++) {
		struct gpu_launch *x = &l->v[i];
		x->held_tid = x->tid;
		if (x->tid < 0) {
			work_add(&a->unattributed, &x->work);
			continue;
		}
		if (x->inferred)
			work_add(&a->inferred, &x->work);
		sweep_to(&s, x, prev);
		prev = x;
		if (s.nheld)
			launch_credit(a, s.held, s.nheld, i, x);
		else
			left[nleft++] = x;
	}
	qsort(left, nleft, sizeof(*left), launch_by_pid_start);
	qsort(s.r, s.nr, sizeof(*s.r), range_by_pid_start);
	s = (struct sweep){.r = s.r, .nr = s.nr, .open = s.open, .held = s.held};
	for (size_t k = 0; k < nleft; k++) {
		const struct gpu_launch *x = left[k];
		sweep_to(&s, x, k ? left[k - 1] : NULL);
		size_t one = s.nheld > 0;
		for (size_t h = 1; h < s.nheld && one; h++)
			one = s.held[h]->tid == s.held[0]->tid;
		if (one) {
			launch_credit(a, s.held, s.nheld, (size_t)(x - l->v), x);
			work_add(&a->other_thread, &x->work);
			l->v[x - l->v].held_tid = s.held[0]->tid;
		} else {
			work_add(&a->outside, &x->work);
		}
	}
	free(left);
	free(s.r);
	free(s.open);
	free(s.held);
}

static void attribution_release(struct attribution *a)
{
	free(a->r);
	free(a->names);
	hashmap_release(&a->index);
}

/* Loads the launches and the ranges and attributes them. 0, or -1 without
 * either (l and a released). */
static int attribution_run(sqlite3 *db, struct gpu_launches *l, struct attribution *a)
{
	*a = (struct attribution){.index = HASHMAP_INIT};
	if (gpu_launches_load(db, l))
		return -1;
	if (ranges_load(db, a)) {
		attribution_release(a);
		gpu_launches_release(l);
		return -1;
	}
	attribute(a, l);
	return 0;
}

void gpu_nvtx_ranges_add(sqlite3 *db, json_t *ranges, json_t *gpu)
{
	struct gpu_launches l;
	struct attribution a;
	struct strbuf key = STRBUF_INIT;
	if (attribution_run(db, &l, &a))
		return;
	size_t i;
	json_t *o;
	json_array_foreach(ranges, i, o)
	{
		const char *domain = json_string_value(json_object_get(o, "domain"));
		const char *name = json_string_value(json_object_get(o, "name"));
		key_set(&key, domain, name);
		int64_t *at = hashmap_get(&a.index, key.buf, key.len);
		static const struct name_sums none;
		const struct name_sums *s = at ? &a.names[*at] : &none;
		work_json(o, &s->total, &l.all, 0);
		work_json(o, &s->self, &l.all, 1);
	}
	json_t *sum = json_object(), *part;
	const struct gpu_work *parts[] = {&a.inside, &a.other_thread, &a.outside, &a.unattributed,
					  &a.inferred};
	const char *keys[] = {"inside", "other_thread", "outside", "unattributed", "inferred"};
	for (size_t k = 0; k < 5; k++) {
		work_json(part = json_object(), parts[k], &l.all, 0);
		json_object_set_new(sum, keys[k], part);
	}
	json_object_set_new(gpu, "nvtx_launches", sum);
	strbuf_release(&key);
	attribution_release(&a);
	gpu_launches_release(&l);
}

static int by_start(const void *x, const void *y)
{
	const struct gpu_launch *a = x, *b = y;
	return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

void gpu_nvtx_phases_add(sqlite3 *db, const struct phase *v, size_t n, json_t *arr)
{
	struct gpu_launches l;
	struct attribution a;
	if (!n || attribution_run(db, &l, &a))
		return;
	size_t m = 0; /* the launches whose call was recorded, by start */
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].tid >= 0)
			l.v[m++] = l.v[i];
	if (m)
		qsort(l.v, m, sizeof(*l.v), by_start);
	for (size_t p = 0; p < n; p++) {
		struct gpu_work w = {0};
		size_t lo = 0, hi = m; /* the first call starting in the phase */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (l.v[mid].start_ns < v[p].start_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < m && l.v[k].start_ns <= v[p].end_ns; k++)
			if (l.v[k].end_ns <= v[p].end_ns &&
			    (!v[p].tid || l.v[k].held_tid == v[p].tid))
				work_add(&w, &l.v[k].work);
		json_t *o = json_array_get(arr, p);
		if (o)
			work_json(o, &w, &l.all, 0);
	}
	attribution_release(&a);
	gpu_launches_release(&l);
}
