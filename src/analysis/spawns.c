/* spawns: a process started for each item. The children a process started
 * that run one command (the command line's first word: `file`, `git`,
 * `convert`) are one group; a group of at least SPAWN_MIN processes whose
 * lives (the kernel's, from their exit records) add up to SPAWN_MIN_SHARE of
 * the run's wall time or more, each living SPAWN_SHORT_S or less on average,
 * is finding "cpu.process_per_item": each start
 * (fork, exec, loading the tool's libraries, its own set-up) costs more than
 * the item it handles. Located where the parent was over their span: the
 * program's own frame of its Python samples then (the line that calls
 * subprocess.run), else of its off-CPU waits (a C program's system() or
 * waitpid). A wrapper's processes (a pyenv shim's helpers) are not the
 * program's. Report key `spawns`: the groups of at least SPAWN_MIN. */
#include "analysis.h"
#include "frames.h"
#include "procstats.h"
#include "program.h"
#include "../record/reader.h"
#include "../record/stackread.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"

#include <stdlib.h>
#include <string.h>

#define SPAWN_MIN 20
#define SPAWN_MIN_SHARE 0.25
/* Lives longer than this on average are the tool's work, not its start-up
 * (a compiler run per file by make): no finding. */
#define SPAWN_SHORT_S 0.05
#define SPAWN_GROUPS_LISTED 5
#define SPAWN_WORD_MAX 64 /* bytes of a command's first word kept */

struct spawn_group {
	int64_t ppid;
	char word[SPAWN_WORD_MAX]; /* the command's first word, its base name */
	const char *command;	   /* one of them, whole (borrowed) */
	size_t n;
	/* The span from the first one's start to the last one's end, in ns
	 * since the run's start. A process that exited unseen between two scans
	 * is placed when its exit record came, so its life (the kernel's) is
	 * exact but not where it lay: the lives are summed, not laid out. */
	int64_t first_ns, last_ns;
	double life_s, cpu_s;
};

/* The base name of the command line's first word into out; the name in a
 * "[name]" (the kernel's name of a process that exited before its command
 * line was read). */
static void first_word(const char *cmd, char *out, size_t cap)
{
	size_t n = strcspn(cmd, " ");
	if (cmd[0] == '[' && n > 2 && cmd[n - 1] == ']') {
		cmd++;
		n -= 2;
	}
	const char *w = cmd;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '/')
			w = cmd + i + 1;
	n -= (size_t)(w - cmd);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, w, n);
	out[n] = '\0';
}

/* Groups the children of the program's processes by parent and command. */
static size_t groups_build(const struct analysis_ctx *ctx, int64_t end_ns, struct spawn_group **out)
{
	const struct procstats *ps = ctx->procs;
	struct hashmap index = HASHMAP_INIT;
	struct spawn_group *v = NULL;
	size_t n = 0, alloc = 0;
	for (size_t i = 0; i < ps->n; i++) {
		const struct procstat *p = &ps->v[i];
		if (p->is_leader || !p->command || p->ppid <= 0 || p->start_ns < 0 ||
		    (ctx->program && program_is_wrapper(ctx->program, ps, p->ppid, p->start_ns)))
			continue;
		struct {
			int64_t ppid;
			char word[SPAWN_WORD_MAX];
		} key;
		memset(&key, 0, sizeof(key));
		key.ppid = p->ppid;
		first_word(p->command, key.word, sizeof(key.word));
		int64_t *at = hashmap_get(&index, &key, sizeof(key));
		if (!at) {
			if (n == alloc) {
				alloc = alloc ? 2 * alloc : 16;
				v = xrealloc(v, alloc * sizeof(*v));
			}
			v[n] = (struct spawn_group){ .ppid = p->ppid, .command = p->command };
			memcpy(v[n].word, key.word, sizeof(key.word));
			at = hashmap_put(&index, &key, sizeof(key), (int64_t)n++);
		}
		struct spawn_group *g = &v[*at];
		int64_t e = p->end_ns >= p->start_ns ? p->end_ns : end_ns;
		g->first_ns = !g->n || p->start_ns < g->first_ns ? p->start_ns : g->first_ns;
		g->last_ns = e > g->last_ns ? e : g->last_ns;
		g->n++;
		g->life_s += (double)(e - p->start_ns) / 1e9;
		if (p->user_ns >= 0 && p->sys_ns >= 0)
			g->cpu_s += (double)(p->user_ns + p->sys_ns) / 1e9;
	}
	hashmap_release(&index);
	*out = v;
	return n;
}

/* Where the parent was over the span of a group's processes. */
struct parent_place {
	const struct spawn_group *g;
	const struct stack_set *ss;
	size_t *path;
	int64_t *by_frame; /* own frame index -> samples or ns */
	int64_t total;
};

static void place_sample(void *arg, const struct stack_sample *s)
{
	struct parent_place *pp = arg;
	if (s->pid != pp->g->ppid || s->t_ns < pp->g->first_ns || s->t_ns > pp->g->last_ns)
		return;
	size_t n = stack_set_path(pp->ss, s->node, pp->path, STACK_DEPTH_MAX);
	size_t k = frame_own_index(pp->ss, pp->path, n);
	if (k >= n)
		return;
	pp->by_frame[pp->path[k]] += s->weight;
	pp->total += s->weight;
}

/* "file:function:line" of the parent's own frame most seen over the span
 * of the group's processes, from source's samples; 0 when found. */
static int parent_location(sqlite3 *db, const struct spawn_group *g, const char *source,
			   struct strbuf *loc, struct strbuf *fn)
{
	struct stack_set ss = STACK_SET_INIT;
	struct strbuf err = STRBUF_INIT;
	int rc = -1;
	if (stack_set_load(db, source, &ss, &err) || !ss.total_samples)
		goto out;
	struct parent_place pp = { .g = g, .ss = &ss };
	pp.path = xmalloc(STACK_DEPTH_MAX * sizeof(*pp.path));
	pp.by_frame = xcalloc(ss.nframes ? ss.nframes : 1, sizeof(*pp.by_frame));
	if (!stack_set_each_sample_of(db, &ss, place_sample, &pp, &err) && pp.total > 0) {
		size_t best = 0;
		for (size_t f = 1; f < ss.nframes; f++)
			if (pp.by_frame[f] > pp.by_frame[best])
				best = f;
		const struct stack_frame_rec *fr = &ss.frames[best];
		strbuf_addf(loc, "%s:%s",
			    fr->file	 ? fr->file
			    : fr->module ? fr->module
					 : "?",
			    fr->function);
		if (fr->line > 0)
			strbuf_addf(loc, ":%d", fr->line);
		strbuf_addstr(fn, fr->function);
		rc = 0;
	}
	free(pp.path);
	free(pp.by_frame);
out:
	stack_set_release(&ss);
	strbuf_release(&err);
	return rc;
}

/* The command line of process pid, NULL when not recorded. */
static const char *command_of(const struct procstats *ps, int64_t pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].pid == pid)
			return ps->v[i].command;
	return NULL;
}

/* 1 when the command runs a shell: a shell's name, or a script named *.sh
 * (the launched "./loop.sh"). */
static int is_shell(const char *cmd)
{
	char word[SPAWN_WORD_MAX];
	first_word(cmd, word, sizeof(word));
	size_t n = strlen(word);
	return (n > 3 && !strcmp(word + n - 3, ".sh")) || !strcmp(word, "sh") ||
	       !strcmp(word, "bash") || !strcmp(word, "dash") || !strcmp(word, "zsh") ||
	       !strcmp(word, "ksh") || !strcmp(word, "busybox");
}

static void spawn_finding(struct analysis_ctx *ctx, const struct spawn_group *g, double wall_s)
{
	struct strbuf loc = STRBUF_INIT, fn = STRBUF_INIT, title = STRBUF_INIT, ev = STRBUF_INIT,
		      next = STRBUF_INIT;
	const char *parent = command_of(ctx->procs, g->ppid);
	int python = !parent_location(ctx->db, g, "python", &loc, &fn);
	if (!python && parent_location(ctx->db, g, "offcpu", &loc, &fn)) {
		/* A shell script's loop, or a program without symbols: by its command. */
		strbuf_reset(&loc);
		strbuf_reset(&fn);
		if (parent)
			strbuf_addf(&fn, "`%.120s`", parent);
		else
			strbuf_addf(&fn, "process %lld", (long long)g->ppid);
		strbuf_addf(&loc, "%s (process %lld)", fn.buf, (long long)g->ppid);
	}
	double each_ms = 1e3 * g->life_s / (double)g->n;
	double stake_s = g->life_s < wall_s ? g->life_s : wall_s;
	strbuf_addf(&title, "%s starts `%s` %zu times: %.2f s of the %.2f s run in those processes",
		    fn.buf, g->word, g->n, g->life_s, wall_s);
	strbuf_addf(&ev,
		    "%zu processes of `%.120s%s` started by process %lld between %.2f s and "
		    "%.2f s, living %.1f ms each on average, %.2f s in all (%.0f%% of the "
		    "run's wall time)",
		    g->n, g->command, strlen(g->command) > 120 ? "..." : "", (long long)g->ppid,
		    (double)g->first_ns / 1e9, (double)g->last_ns / 1e9, each_ms, g->life_s,
		    100.0 * g->life_s / wall_s);
	if (g->cpu_s > 0)
		strbuf_addf(&ev,
			    "; their CPU time %.2f s (%.1f ms each: starting a process, "
			    "loading its libraries and its own set-up, for one item)",
			    g->cpu_s, 1e3 * g->cpu_s / (double)g->n);
	if (loc.len && strncmp(loc.buf, "process ", 8))
		strbuf_addf(&ev, "; the parent was at %s while they ran", loc.buf);
	if (python)
		strbuf_addf(&next,
			    "Start `%s` once for many items instead of once per item: pass "
			    "it many arguments or a list on its stdin (most tools take "
			    "several), keep one process running and feed it, or do the work "
			    "in Python (a library instead of the command)",
			    g->word);
	else if (parent && is_shell(parent))
		strbuf_addf(&next,
			    "Start `%s` once for many items instead of once per item in "
			    "the loop: give it all the files or lines at once (`%s` with "
			    "many arguments, or through xargs or a pipe), or let one awk or "
			    "sed do the loop's work",
			    g->word, g->word);
	else
		strbuf_addf(&next,
			    "Start `%s` once for many items instead of once per item: pass "
			    "it many arguments or a list on its stdin, keep one process "
			    "running and feed it through a pipe, or call a library instead "
			    "of the command",
			    g->word);
	struct finding f = {
		.id = "cpu.process_per_item",
		.title = title.buf,
		.dimension = "cpu",
		.location = loc.buf,
		.evidence = ev.buf,
		.diagnosis = "A process per item: the program starts a new process for each item, "
			     "and each start (fork, exec, loading libraries, the tool's own "
			     "set-up) costs more than the work it does",
		.next_step = next.buf,
		.validation = "spawns[].processes falls to a few, and target.wall_s falls",
		.blames_code = python ? FINDING_BLAMES_CODE : 0,
	};
	findings_add_time(ctx->findings, &f, stake_s, wall_s);
	strbuf_release(&loc);
	strbuf_release(&fn);
	strbuf_release(&title);
	strbuf_release(&ev);
	strbuf_release(&next);
}

static int life_cmp(const void *a, const void *b)
{
	const struct spawn_group *x = a, *y = b;
	return x->life_s < y->life_s ? 1 : x->life_s > y->life_s ? -1 : 0;
}

static int spawns_run(struct analysis_ctx *ctx)
{
	double wall_s = report_wall_s(ctx->db);
	if (!ctx->procs || wall_s <= 0)
		return 0;
	struct spawn_group *v = NULL;
	size_t n = groups_build(ctx, (int64_t)(wall_s * 1e9), &v);
	if (n > 1)
		qsort(v, n, sizeof(*v), life_cmp);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct spawn_group *g = &v[i];
		if (g->n < SPAWN_MIN)
			continue;
		if (json_array_size(arr) < SPAWN_GROUPS_LISTED) {
			json_t *o = json_object();
			json_object_set_new(o, "parent_pid", json_integer((json_int_t)g->ppid));
			json_object_set_new(o, "command", report_string(g->word, strlen(g->word)));
			json_object_set_new(o, "processes", json_integer((json_int_t)g->n));
			json_object_set_new(o, "life_s", json_real(g->life_s));
			json_object_set_new(o, "first_s", json_real((double)g->first_ns / 1e9));
			json_object_set_new(o, "last_s", json_real((double)g->last_ns / 1e9));
			json_object_set_new(o, "cpu_s", json_real(g->cpu_s));
			json_array_append_new(arr, o);
		}
		if (i == 0 && g->life_s >= SPAWN_MIN_SHARE * wall_s &&
		    g->life_s <= SPAWN_SHORT_S * (double)g->n)
			spawn_finding(ctx, g, wall_s);
	}
	json_object_set_new(ctx->report, "spawns", arr);
	free(v);
	return 0;
}

static const char *const spawns_provides[] = { "spawns", NULL };
static const char *const spawns_findings[] = { "cpu.process_per_item", NULL };

const struct analysis_ops analysis_spawns = {
	.name = "spawns",
	.provides = spawns_provides,
	.findings = spawns_findings,
	.run = spawns_run,
};
