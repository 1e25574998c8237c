/* stackread: loads one source's samples, summed per stack, with their frames. */
#include "stackread.h"
#include "reader.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* A name column, cut at STACK_NAME_MAX bytes (on a character boundary, with
 * U+2026 after) so a hostile recording cannot make every view copy megabytes
 * per frame. */
static char *dup_col(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	if (!s)
		return NULL;
	size_t n = (size_t)sqlite3_column_bytes(st, i);
	if (n <= STACK_NAME_MAX)
		return xstrdup((const char *)s);
	n = STACK_NAME_MAX;
	while (n && (s[n] & 0xc0) == 0x80)
		n--;
	char *cut = xmalloc(n + 4);
	memcpy(cut, s, n);
	memcpy(cut + n, "\xe2\x80\xa6", 4);
	return cut;
}

static void add_key_field(struct strbuf *key, const char *s)
{
	strbuf_addstr(key, s ? s : "\x01");
	strbuf_addch(key, '\0');
}

static int load_frames(sqlite3 *db, struct stack_set *ss, struct hashmap *ids)
{
	sqlite3_stmt *st;
	struct hashmap funcs = HASHMAP_INIT;
	struct strbuf key = STRBUF_INIT;
	size_t alloc = 16;
	if (sqlite3_prepare_v2(db, "SELECT id, function, file, line, module, kind FROM frames", -1,
			       &st, NULL) != SQLITE_OK)
		return -1;
	ss->frames = xcalloc(alloc, sizeof(*ss->frames));
	ss->frames[0].function = xstrdup("[unknown]");
	ss->nframes = 1;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (ss->nframes == alloc) {
			alloc *= 2;
			ss->frames = xrealloc(ss->frames, alloc * sizeof(*ss->frames));
		}
		struct stack_frame_rec *f = &ss->frames[ss->nframes];
		memset(f, 0, sizeof(*f));
		f->function = dup_col(st, 1);
		if (!f->function)
			f->function = xstrdup("[unknown]");
		f->file = dup_col(st, 2);
		f->line = sqlite3_column_int(st, 3);
		if (f->line < 0)
			f->line = 0;
		f->module = dup_col(st, 4);
		f->kind = dup_col(st, 5);
		int64_t id = sqlite3_column_int64(st, 0);
		hashmap_put(ids, &id, sizeof(id), (int64_t)ss->nframes);
		ss->nframes++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return -1;
	/* Group frames into functions. */
	ss->funcs = xcalloc(ss->nframes, sizeof(*ss->funcs));
	for (size_t i = 0; i < ss->nframes; i++) {
		struct stack_frame_rec *f = &ss->frames[i];
		strbuf_reset(&key);
		add_key_field(&key, f->function);
		add_key_field(&key, f->file);
		add_key_field(&key, f->module);
		int64_t *found = hashmap_get(&funcs, key.buf, key.len);
		if (found) {
			f->func = (size_t)*found;
			continue;
		}
		f->func = ss->nfuncs;
		ss->funcs[ss->nfuncs] =
		    (struct stack_func){ f->function, f->file, f->module, f->kind };
		hashmap_put(&funcs, key.buf, key.len, (int64_t)ss->nfuncs++);
	}
	hashmap_release(&funcs);
	strbuf_release(&key);
	return 0;
}

static int load_nodes(sqlite3 *db, struct stack_set *ss, const struct hashmap *frame_ids,
		      struct hashmap *ids)
{
	sqlite3_stmt *st;
	size_t alloc = 16;
	int64_t *parent_ids = xcalloc(alloc, sizeof(*parent_ids));
	if (sqlite3_prepare_v2(db, "SELECT id, parent, frame FROM stack_nodes", -1, &st, NULL) !=
	    SQLITE_OK) {
		free(parent_ids);
		return -1;
	}
	ss->nodes = xcalloc(alloc, sizeof(*ss->nodes));
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (ss->nnodes == alloc) {
			alloc *= 2;
			ss->nodes = xrealloc(ss->nodes, alloc * sizeof(*ss->nodes));
			parent_ids = xrealloc(parent_ids, alloc * sizeof(*parent_ids));
		}
		int64_t id = sqlite3_column_int64(st, 0), frame = sqlite3_column_int64(st, 2);
		int64_t *fi = hashmap_get(frame_ids, &frame, sizeof(frame));
		ss->nodes[ss->nnodes].frame = fi ? (size_t)*fi : 0;
		parent_ids[ss->nnodes] = sqlite3_column_int64(st, 1);
		hashmap_put(ids, &id, sizeof(id), (int64_t)ss->nnodes);
		ss->nnodes++;
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < ss->nnodes; i++) {
		int64_t *pi =
		    parent_ids[i] ? hashmap_get(ids, &parent_ids[i], sizeof(int64_t)) : NULL;
		ss->nodes[i].parent = pi ? (size_t)*pi + 1 : 0;
	}
	free(parent_ids);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The wrapper's samples (temp.wrapper_spans, made by analysis/program.c
 * when the launched command was a wrapper) are none of the program's. */
static void add_wrapper_filter(sqlite3 *db, struct strbuf *sql)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM temp.wrapper_spans LIMIT 1", -1, &st, NULL) !=
	    SQLITE_OK)
		return;
	int any = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (any)
		strbuf_addstr(sql, " AND NOT EXISTS(SELECT 1 FROM temp.wrapper_spans w"
				   " WHERE w.pid = samples.pid AND samples.t_ns >= w.from_ns"
				   " AND samples.t_ns < w.to_ns)");
}

/* filter: a fixed SQL condition on samples' columns, or NULL for every sample. */
static int load_leaves(sqlite3 *db, const char *source, const char *filter, struct stack_set *ss,
		       const struct hashmap *node_ids)
{
	sqlite3_stmt *st;
	size_t alloc = 16;
	struct strbuf sql = STRBUF_INIT;
	strbuf_addstr(&sql, "SELECT node, COUNT(*), TOTAL(weight) FROM samples WHERE source = ?");
	if (filter)
		strbuf_addf(&sql, " AND (%s)", filter);
	add_wrapper_filter(db, &sql);
	strbuf_addstr(&sql, " GROUP BY node");
	int prc = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL);
	strbuf_release(&sql);
	if (prc != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
	ss->leaves = xcalloc(alloc, sizeof(*ss->leaves));
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t node = sqlite3_column_int64(st, 0);
		int64_t *ni = hashmap_get(node_ids, &node, sizeof(node));
		int64_t n = sqlite3_column_int64(st, 1);
		double w = sqlite3_column_double(st, 2);
		if (!ni || n <= 0 || w < 0 || w > 9e18)
			continue; /* a sample without a known stack, or a nonsense weight */
		if (ss->nleaves == alloc) {
			alloc *= 2;
			ss->leaves = xrealloc(ss->leaves, alloc * sizeof(*ss->leaves));
		}
		ss->leaves[ss->nleaves++] =
		    (struct stack_leaf){ .node = (size_t)*ni, .samples = n, .weight = (int64_t)w };
		ss->total_samples += n;
		ss->total_weight += (int64_t)w;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int load_filtered(sqlite3 *db, const char *source, const char *filter,
			 struct stack_set *out, struct strbuf *err)
{
	struct stack_set ss = STACK_SET_INIT;
	struct hashmap frame_ids = HASHMAP_INIT, node_ids = HASHMAP_INIT;
	int ret = -1;
	if (!recording_has_table(db, "samples") || !recording_has_table(db, "frames") ||
	    !recording_has_table(db, "stack_nodes")) {
		*out = ss;
		return 0;
	}
	if (load_frames(db, &ss, &frame_ids) || load_nodes(db, &ss, &frame_ids, &node_ids) ||
	    load_leaves(db, source, filter, &ss, &node_ids)) {
		strbuf_addf(err, "cannot read the stack tables: %s", sqlite3_errmsg(db));
		stack_set_release(&ss);
		goto out;
	}
	ss.source = xstrdup(source);
	ss.filter = filter;
	ss.node_index = node_ids;
	node_ids = (struct hashmap)HASHMAP_INIT;
	*out = ss;
	ret = 0;
out:
	hashmap_release(&frame_ids);
	hashmap_release(&node_ids);
	return ret;
}

int stack_set_load_filtered(sqlite3 *db, const char *source, const char *filter,
			    struct stack_set *out, struct strbuf *err)
{
	return load_filtered(db, source, filter, out, err);
}

int stack_set_load(sqlite3 *db, const char *source, struct stack_set *out, struct strbuf *err)
{
	return load_filtered(db, source, NULL, out, err);
}

size_t stack_set_path(const struct stack_set *ss, size_t node, size_t *buf, size_t cap)
{
	size_t n = 0;
	for (size_t cur = node + 1; cur && n < cap; cur = ss->nodes[cur - 1].parent)
		buf[n++] = ss->nodes[cur - 1].frame;
	for (size_t i = 0; i < n / 2; i++) {
		size_t t = buf[i];
		buf[i] = buf[n - 1 - i];
		buf[n - 1 - i] = t;
	}
	return n;
}

/* The walk of both forms below: fn or fn_pid gets each sample. */
static int each_sample(sqlite3 *db, const struct stack_set *ss, int64_t from_ns, int64_t to_ns,
		       void (*fn)(void *arg, int64_t t_ns, int64_t tid, size_t node,
				  int64_t weight),
		       void (*fn_pid)(void *arg, const struct stack_sample *s), void *arg,
		       struct strbuf *err)
{
	if (!ss->source)
		return 0; /* an empty set: the recording has no stack tables */
	struct strbuf sql = STRBUF_INIT;
	strbuf_addstr(&sql, "SELECT t_ns, tid, node, weight, pid FROM samples WHERE source = ?"
			    " AND t_ns >= ? AND t_ns < ?");
	if (ss->filter)
		strbuf_addf(&sql, " AND (%s)", ss->filter);
	add_wrapper_filter(db, &sql);
	strbuf_addstr(&sql, " ORDER BY t_ns");
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL);
	strbuf_release(&sql);
	if (rc != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, ss->source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ns);
	sqlite3_bind_int64(st, 3, to_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t node = sqlite3_column_int64(st, 2);
		int64_t *ni = hashmap_get(&ss->node_index, &node, sizeof(node));
		if (!ni)
			continue;
		struct stack_sample smp = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 4),
					    sqlite3_column_int64(st, 1), (size_t)*ni,
					    sqlite3_column_int64(st, 3) };
		if (fn)
			fn(arg, smp.t_ns, smp.tid, smp.node, smp.weight);
		else
			fn_pid(arg, &smp);
	}
	sqlite3_finalize(st);
out:
	if (rc == SQLITE_DONE)
		return 0;
	strbuf_addf(err, "cannot read the samples: %s", sqlite3_errmsg(db));
	return -1;
}

int stack_set_each_sample(sqlite3 *db, const struct stack_set *ss, int64_t from_ns, int64_t to_ns,
			  void (*fn)(void *arg, int64_t t_ns, int64_t tid, size_t node,
				     int64_t weight),
			  void *arg, struct strbuf *err)
{
	return each_sample(db, ss, from_ns, to_ns, fn, NULL, arg, err);
}

int stack_set_each_sample_of(sqlite3 *db, const struct stack_set *ss,
			     void (*fn)(void *arg, const struct stack_sample *s), void *arg,
			     struct strbuf *err)
{
	return each_sample(db, ss, INT64_MIN, INT64_MAX, NULL, fn, arg, err);
}

void stack_set_release(struct stack_set *ss)
{
	for (size_t i = 0; i < ss->nframes; i++) {
		free(ss->frames[i].function);
		free(ss->frames[i].file);
		free(ss->frames[i].module);
		free(ss->frames[i].kind);
	}
	free(ss->frames);
	free(ss->funcs);
	free(ss->nodes);
	free(ss->leaves);
	free(ss->source);
	hashmap_release(&ss->node_index);
	*ss = (struct stack_set)STACK_SET_INIT;
}

static size_t tree_add(struct stack_tree *t, size_t parent, size_t func)
{
	if (t->n == t->alloc) {
		t->alloc = t->alloc ? 2 * t->alloc : 64;
		t->v = xrealloc(t->v, t->alloc * sizeof(*t->v));
	}
	size_t i = t->n++;
	struct stack_tree_node *nd = &t->v[i];
	memset(nd, 0, sizeof(*nd));
	nd->func = func;
	nd->parent = parent;
	if (i) {
		nd->depth = t->v[parent].depth + 1;
		nd->next_sibling = t->v[parent].first_child;
		t->v[parent].first_child = i + 1;
	}
	return i;
}

/* Maps every stack node to its tree node once (memoised), so the cost is one
 * lookup per node rather than one per frame of every sample. Nodes deeper
 * than STACK_DEPTH_MAX fold into their ancestor at that depth; a cycle in a
 * malformed recording is cut where it closes. */
static size_t tree_node_of(const struct stack_set *ss, struct stack_tree *t, struct hashmap *kids,
			   size_t *memo, size_t node, size_t *chain)
{
	enum { UNSET = 0, BUSY = 1 }; /* memo holds tree index + 2 once known */
	size_t n = 0, cur = node + 1, at = 0;
	while (cur && memo[cur - 1] == UNSET) {
		memo[cur - 1] = BUSY;
		chain[n++] = cur - 1;
		cur = ss->nodes[cur - 1].parent;
	}
	if (cur && memo[cur - 1] != BUSY)
		at = memo[cur - 1] - 2;
	while (n) {
		size_t nd = chain[--n];
		if (t->v[at].depth < STACK_DEPTH_MAX) {
			uint64_t key[2] = { at, ss->frames[ss->nodes[nd].frame].func };
			int64_t *found = hashmap_get(kids, key, sizeof(key));
			if (found) {
				at = (size_t)*found;
			} else {
				at = tree_add(t, at, (size_t)key[1]);
				hashmap_put(kids, key, sizeof(key), (int64_t)at);
			}
		}
		memo[nd] = at + 2;
	}
	return at;
}

/* Each tree node's hottest line: the line of the stack nodes mapped to it
 * (memo) with most weight through them. A stack node's parent is read
 * before it (as the recording writes them); one that is not only loses its
 * share of its ancestors' lines. */
static void tree_lines(const struct stack_set *ss, int by_weight, struct stack_tree *t,
		       const size_t *memo)
{
	int64_t *through = xcalloc(ss->nnodes ? ss->nnodes : 1, sizeof(*through));
	struct hashmap at_line = HASHMAP_INIT; /* (tree node, line) -> weight */
	for (size_t l = 0; l < ss->nleaves; l++)
		if (ss->leaves[l].node < ss->nnodes)
			through[ss->leaves[l].node] +=
			    by_weight ? ss->leaves[l].weight : ss->leaves[l].samples;
	for (size_t nd = ss->nnodes; nd-- > 0;) {
		size_t parent = ss->nodes[nd].parent;
		if (parent && parent - 1 < nd)
			through[parent - 1] += through[nd];
		int line = ss->frames[ss->nodes[nd].frame].line;
		/* past STACK_DEPTH_MAX a frame folds into an ancestor: not its line */
		if (memo[nd] < 2 || line <= 0 || !through[nd] ||
		    t->v[memo[nd] - 2].func != ss->frames[ss->nodes[nd].frame].func)
			continue;
		int64_t key[2] = { (int64_t)(memo[nd] - 2), line };
		int64_t *w = hashmap_get(&at_line, key, sizeof(key));
		int64_t sum = (w ? *w : 0) + through[nd];
		hashmap_put(&at_line, key, sizeof(key), sum);
	}
	int64_t *best = xcalloc(t->n ? t->n : 1, sizeof(*best));
	for (size_t i = 0; i < at_line.cap; i++) {
		const struct hashmap_slot *sl = &at_line.slots[i];
		int64_t key[2];
		if (!sl->key)
			continue;
		memcpy(key, sl->key, sizeof(key));
		size_t node = (size_t)key[0];
		if (node < t->n && (sl->value > best[node] ||
				    (sl->value == best[node] && key[1] < t->v[node].line))) {
			best[node] = sl->value;
			t->v[node].line = (int)key[1];
		}
	}
	free(best);
	free(through);
	hashmap_release(&at_line);
}

void stack_tree_build(const struct stack_set *ss, int by_weight, struct stack_tree *t)
{
	struct hashmap kids = HASHMAP_INIT;
	size_t *memo = xcalloc(ss->nnodes ? ss->nnodes : 1, sizeof(*memo));
	size_t *chain = xmalloc((ss->nnodes ? ss->nnodes : 1) * sizeof(*chain));
	tree_add(t, 0, 0);
	for (size_t l = 0; l < ss->nleaves; l++) {
		const struct stack_leaf *leaf = &ss->leaves[l];
		size_t at = tree_node_of(ss, t, &kids, memo, leaf->node, chain);
		t->v[at].self += by_weight ? leaf->weight : leaf->samples;
	}
	/* Children come after their parents: one backward pass sums the totals. */
	for (size_t i = t->n; i-- > 0;) {
		t->v[i].total += t->v[i].self;
		if (i)
			t->v[t->v[i].parent].total += t->v[i].total;
	}
	tree_lines(ss, by_weight, t, memo);
	free(chain);
	free(memo);
	hashmap_release(&kids);
}

struct child_sort {
	const struct stack_tree *t;
	const struct stack_set *ss;
};
static struct child_sort sort_ctx; /* qsort has no context argument in C17 */

static int child_cmp(const void *a, const void *b)
{
	const struct stack_tree_node *x = &sort_ctx.t->v[*(const size_t *)a];
	const struct stack_tree_node *y = &sort_ctx.t->v[*(const size_t *)b];
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(sort_ctx.ss->funcs[x->func].function, sort_ctx.ss->funcs[y->func].function);
}

size_t *stack_tree_children(const struct stack_tree *t, const struct stack_set *ss, size_t i,
			    size_t *n)
{
	size_t count = 0;
	for (size_t c = t->v[i].first_child; c; c = t->v[c - 1].next_sibling)
		count++;
	*n = count;
	if (!count)
		return NULL;
	size_t *v = xmalloc(count * sizeof(*v)), k = 0;
	for (size_t c = t->v[i].first_child; c; c = t->v[c - 1].next_sibling)
		v[k++] = c - 1;
	sort_ctx = (struct child_sort){ t, ss };
	qsort(v, count, sizeof(*v), child_cmp);
	return v;
}

void stack_tree_release(struct stack_tree *t)
{
	free(t->v);
	*t = (struct stack_tree)STACK_TREE_INIT;
}

static const char *const mode_names[] = { "cpu", "wall", "gil" };

const char *stack_mode_name(enum stack_mode mode)
{
	return (unsigned)mode < 3 ? mode_names[mode] : "cpu";
}

int stack_mode_parse(const char *s, enum stack_mode *out)
{
	for (int i = 0; s && i < 3; i++)
		if (!strcmp(s, mode_names[i])) {
			*out = (enum stack_mode)i;
			return 0;
		}
	return -1;
}

enum stack_mode stack_mode_of(sqlite3 *db)
{
	enum stack_mode mode = STACK_MODE_CPU;
	char *s = recording_meta_text(db, "python_mode");
	if (s && stack_mode_parse(s, &mode))
		mode = STACK_MODE_CPU;
	free(s);
	return mode;
}

/* The on-CPU order: "mixed", else "cpu", else the python samples that stand
 * for CPU time. */
static int load_on_cpu(sqlite3 *db, struct stack_set *ss, const char **source,
		       struct strbuf *err)
{
	static const struct {
		const char *source, *filter;
	} order[] = { { "mixed", NULL }, { "cpu", NULL }, { "python", "on_cpu = 1" } };
	const size_t n = sizeof(order) / sizeof(order[0]);
	for (size_t i = 0; i < n; i++) {
		if (load_filtered(db, order[i].source, order[i].filter, ss, err))
			return -1;
		if (ss->total_samples || i == n - 1) {
			if (source)
				*source = order[i].source;
			return 0;
		}
		stack_set_release(ss);
	}
	return 0;
}

int stack_set_load_mode(sqlite3 *db, enum stack_mode mode, struct stack_set *ss,
			const char **source, struct strbuf *err)
{
	if (mode == STACK_MODE_WALL || mode == STACK_MODE_GIL) {
		int64_t any = 0;
		if (recording_has_table(db, "samples")) {
			sqlite3_stmt *st;
			if (sqlite3_prepare_v2(db,
					       "SELECT EXISTS(SELECT 1 FROM samples WHERE"
					       " source = 'python')",
					       -1, &st, NULL) != SQLITE_OK) {
				strbuf_addf(err, "cannot read the stack tables: %s",
					    sqlite3_errmsg(db));
				return -1;
			}
			if (sqlite3_step(st) == SQLITE_ROW)
				any = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
		if (any) {
			if (load_filtered(db, "python", mode == STACK_MODE_GIL ? "gil = 1" : NULL,
					  ss, err))
				return -1;
			if (source)
				*source = "python";
			return 0;
		}
		/* A native target: the mode is about Python samples; show on-CPU. */
	}
	return load_on_cpu(db, ss, source, err);
}

int stack_set_load_on_cpu(sqlite3 *db, struct stack_set *ss, const char **source,
			  struct strbuf *err)
{
	return load_on_cpu(db, ss, source, err);
}
