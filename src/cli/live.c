/* live: the live view of a recording being made (see live.h). */
#include "live.h"
#include "../record/reader.h"
#include "../record/recorder.h"
#include "../render/render.h"
#include "../util/hashmap.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#define LIVE_REFRESH_NS 1000000000LL
#define LIVE_FUNCTIONS 15
#define LIVE_THREADS 8

struct live_func {
	char *function, *file;
	int64_t line; /* of its latest leaf sample; 0 when unknown */
	int64_t self, total;
	uint64_t seen; /* the refresh that last counted it in a path */
};

struct live {
	struct session_hooks hooks;
	struct recorder *rec;
	char *title; /* escaped: the first words of the top line */
	int64_t window_ns, drawn_at_ns;
	int q_ends_session;
	int paused, by_total, quit;
	uint64_t refresh;
	struct termios saved;
	int raw;     /* stdin's terminal was put in non-canonical mode */
	int entered; /* on the alternate screen */
	/* The window's functions, rebuilt each refresh. */
	struct live_func *f;
	size_t nf;
	struct hashmap index;			/* "function\0file" -> f[] */
	struct hashmap node_parent, node_frame; /* stack_nodes, cached */
};

/* A stack node's parent and frame, cached: nodes never change. 0 when unknown. */
static int node_get(struct live *t, sqlite3_stmt *q, int64_t node, int64_t *parent, int64_t *frame)
{
	int64_t *p = hashmap_get(&t->node_parent, &node, sizeof(node));
	if (p) {
		*parent = *p;
		*frame = *hashmap_get(&t->node_frame, &node, sizeof(node));
		return 0;
	}
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, node);
	if (sqlite3_step(q) != SQLITE_ROW)
		return -1;
	*parent = sqlite3_column_int64(q, 0);
	*frame = sqlite3_column_int64(q, 1);
	hashmap_put(&t->node_parent, &node, sizeof(node), *parent);
	hashmap_put(&t->node_frame, &node, sizeof(node), *frame);
	return 0;
}

static struct live_func *func_get(struct live *t, sqlite3_stmt *q, int64_t frame, int64_t *line)
{
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, frame);
	if (sqlite3_step(q) != SQLITE_ROW)
		return NULL;
	const char *fn = (const char *)sqlite3_column_text(q, 0);
	const char *file = (const char *)sqlite3_column_text(q, 1);
	*line = sqlite3_column_int64(q, 2);
	struct strbuf key = STRBUF_INIT;
	strbuf_addstr(&key, fn ? fn : "?");
	strbuf_addch(&key, '\0');
	strbuf_addstr(&key, file ? file : "");
	int64_t *at = hashmap_get(&t->index, key.buf, key.len);
	if (!at) {
		at = hashmap_put(&t->index, key.buf, key.len, (int64_t)t->nf);
		t->f = xrealloc(t->f, (t->nf + 1) * sizeof(*t->f));
		t->f[t->nf++] = (struct live_func){.function = xstrdup(fn ? fn : "?"),
						   .file = xstrdup(file ? file : "")};
	}
	strbuf_release(&key);
	return &t->f[*at];
}

static void funcs_clear(struct live *t)
{
	for (size_t i = 0; i < t->nf; i++) {
		free(t->f[i].function);
		free(t->f[i].file);
	}
	free(t->f);
	t->f = NULL;
	t->nf = 0;
	hashmap_release(&t->index);
	t->index = (struct hashmap)HASHMAP_INIT;
}

/* Counts the window's samples of source into t->f: self at the leaf, total
 * once per path. Returns the samples counted. */
static int64_t funcs_count(struct live *t, sqlite3 *db, const char *source, int64_t from_ns)
{
	sqlite3_stmt *s = NULL, *qn = NULL, *qf = NULL;
	int64_t total = 0;
	t->refresh++;
	if (sqlite3_prepare_v2(db,
			       "SELECT node, COUNT(*) FROM samples WHERE source = ?1 AND t_ns >= ?2"
			       " AND (?1 != 'python' OR on_cpu = 1) GROUP BY node",
			       -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT parent, frame FROM stack_nodes WHERE id = ?", -1, &qn,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT function, file, line FROM frames WHERE id = ?", -1, &qf,
			       NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(s, 1, source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, from_ns);
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t node = sqlite3_column_int64(s, 0), n = sqlite3_column_int64(s, 1);
		total += n;
		t->refresh++; /* each path counts a function once */
		for (int depth = 0; node > 0 && depth < 4096; depth++) {
			int64_t parent, frame, line;
			if (node_get(t, qn, node, &parent, &frame))
				break;
			struct live_func *f = func_get(t, qf, frame, &line);
			if (f && f->seen != t->refresh) {
				f->seen = t->refresh;
				f->total += n;
				if (!depth) {
					f->self += n;
					f->line = line;
				}
			}
			node = parent;
		}
	}
out:
	sqlite3_finalize(s);
	sqlite3_finalize(qn);
	sqlite3_finalize(qf);
	return total;
}

static int func_cmp(const void *pa, const void *pb, void *arg)
{
	const struct live_func *a = pa, *b = pb;
	int by_total = *(const int *)arg;
	int64_t ka = by_total ? a->total : a->self, kb = by_total ? b->total : b->self;
	if (ka != kb)
		return ka > kb ? -1 : 1;
	return strcmp(a->function, b->function);
}

/* Appends a line of at most cols characters and a line break (ASCII frames
 * the escaped outside text, so the cut is by bytes of escaped text). */
static void line_add(struct strbuf *out, struct strbuf *line, size_t cols)
{
	if (line->len > cols) {
		line->len = cols;
		line->buf[cols] = '\0';
	}
	strbuf_add(out, line->buf, line->len);
	strbuf_addstr(out, "\033[K\n");
	strbuf_reset(line);
}

static void funcs_draw(struct live *t, int64_t samples, const char *source, struct strbuf *out,
		       size_t cols)
{
	struct strbuf line = STRBUF_INIT;
	strbuf_addf(&line, "%6s %6s  %s", t->by_total ? "TOTAL" : "SELF",
		    t->by_total ? "self" : "total", "function (file:line)");
	line_add(out, &line, cols);
	if (!samples) {
		strbuf_addf(&line, "  no %s samples in the window yet", source);
		line_add(out, &line, cols);
	}
	if (t->nf)
		qsort_r(t->f, t->nf, sizeof(*t->f), func_cmp, &t->by_total);
	for (size_t i = 0; samples && i < t->nf && i < LIVE_FUNCTIONS; i++) {
		const struct live_func *f = &t->f[i];
		double a = 100.0 * (double)(t->by_total ? f->total : f->self) / (double)samples;
		double b = 100.0 * (double)(t->by_total ? f->self : f->total) / (double)samples;
		strbuf_addf(&line, "%5.1f%% %5.1f%%  ", a, b);
		utf8_escape(f->function, strlen(f->function), 80, &line);
		if (*f->file) {
			const char *base = strrchr(f->file, '/');
			strbuf_addstr(&line, " (");
			utf8_escape(base ? base + 1 : f->file, strlen(base ? base + 1 : f->file),
				    60, &line);
			if (f->line > 0)
				strbuf_addf(&line, ":%lld", (long long)f->line);
			strbuf_addch(&line, ')');
		}
		line_add(out, &line, cols);
	}
	strbuf_release(&line);
}

/* The window's threads, most samples first: python samples say running,
 * queued for a CPU, waiting and holding the GIL; cpu samples how much of the
 * window each ran. */
static void threads_draw(sqlite3 *db, const char *source, int64_t from_ns, struct strbuf *out,
			 size_t cols)
{
	sqlite3_stmt *q = NULL;
	struct strbuf line = STRBUF_INIT;
	int python = !strcmp(source, "python");
	if (sqlite3_prepare_v2(db,
			       "SELECT s.tid, COUNT(*), SUM(s.on_cpu = 1), SUM(s.on_cpu = 2),"
			       " SUM(s.gil = 1), (SELECT name FROM threads h WHERE h.tid = s.tid"
			       " LIMIT 1) FROM samples s WHERE s.source = ?1 AND s.t_ns >= ?2"
			       " GROUP BY s.tid ORDER BY 2 DESC LIMIT ?3",
			       -1, &q, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(q, 1, source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, from_ns);
	sqlite3_bind_int(q, 3, LIVE_THREADS);
	strbuf_addstr(&line, python ? "    TID  RUNNING QUEUED WAITING    GIL  thread"
				    : "    TID  SAMPLES  thread");
	line_add(out, &line, cols);
	while (sqlite3_step(q) == SQLITE_ROW) {
		double n = (double)sqlite3_column_int64(q, 1);
		const char *name = (const char *)sqlite3_column_text(q, 5);
		strbuf_addf(&line, "%7lld  ", (long long)sqlite3_column_int64(q, 0));
		if (python) {
			double run = sqlite3_column_double(q, 2),
			       queued = sqlite3_column_double(q, 3);
			strbuf_addf(&line, "%6.0f%% %5.0f%% %6.0f%% %5.0f%%  ", 100 * run / n,
				    100 * queued / n, 100 * (n - run - queued) / n,
				    100 * sqlite3_column_double(q, 4) / n);
		} else {
			strbuf_addf(&line, "%7.0f  ", n);
		}
		utf8_escape(name ? name : "", name ? strlen(name) : 0, 40, &line);
		line_add(out, &line, cols);
	}
out:
	sqlite3_finalize(q);
	strbuf_release(&line);
}

/* "GPU 0 45%, GPU 1 80%" at the nvml probe's last reading; nothing without it. */
static void gpus_add(sqlite3 *db, struct strbuf *line)
{
	sqlite3_stmt *q = NULL;
	if (!recording_has_table(db, "nvml_samples") ||
	    sqlite3_prepare_v2(db,
			       "SELECT device, sm_pct FROM nvml_samples WHERE t_ns ="
			       " (SELECT MAX(t_ns) FROM nvml_samples) ORDER BY device",
			       -1, &q, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(q) == SQLITE_ROW)
		strbuf_addf(line, ", GPU %d %d%%", sqlite3_column_int(q, 0),
			    sqlite3_column_int(q, 1));
	sqlite3_finalize(q);
}

static size_t term_columns(void)
{
	struct winsize ws;
	size_t n = !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col ? ws.ws_col : 80;
	return n > 400 ? 400 : n;
}

static void screen_draw(struct live *t, int64_t t_ns)
{
	size_t cols = term_columns();
	struct strbuf out = STRBUF_INIT, line = STRBUF_INIT;
	recorder_lock(t->rec);
	sqlite3 *db = recorder_db(t->rec);
	int64_t from_ns = t_ns > t->window_ns ? t_ns - t->window_ns : 0;
	/* Python stacks when the window has some: they name the program's own
	 * code; else the native samples. */
	const char *source = "cpu";
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT 1 FROM samples WHERE source = 'python' AND t_ns >= ?"
			       " LIMIT 1",
			       -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, from_ns);
		if (sqlite3_step(q) == SQLITE_ROW)
			source = "python";
	}
	sqlite3_finalize(q);
	funcs_clear(t);
	int64_t samples = funcs_count(t, db, source, from_ns);
	struct recorder_live live;
	recorder_live_read(t->rec, &live);
	strbuf_addstr(&out, "\033[H");
	strbuf_addstr(&line, t->title);
	strbuf_addf(&line, ", %.0f s, window %.0f s, %lld %s samples", (double)t_ns / 1e9,
		    (double)t->window_ns / 1e9, (long long)samples, source);
	if (live.rss_bytes > 0) {
		char rss[32];
		fmt_bytes(rss, sizeof(rss), (double)live.rss_bytes);
		strbuf_addf(&line, ", RSS %s", rss);
	}
	gpus_add(db, &line);
	if (t->paused)
		strbuf_addstr(&line, "  [paused]");
	line_add(&out, &line, cols);
	line_add(&out, &line, cols);
	funcs_draw(t, samples, source, &out, cols);
	line_add(&out, &line, cols);
	threads_draw(db, source, from_ns, &out, cols);
	recorder_unlock(t->rec);
	line_add(&out, &line, cols);
	strbuf_addf(&line, "q quit  p %s  s sort by %s", t->paused ? "resume" : "pause",
		    t->by_total ? "self" : "total");
	line_add(&out, &line, cols);
	strbuf_addstr(&out, "\033[J");
	fwrite(out.buf, 1, out.len, stdout);
	fflush(stdout);
	strbuf_release(&out);
	strbuf_release(&line);
}

/* The keys typed since the last turn. */
static void keys_read(struct live *t, int64_t t_ns)
{
	char buf[32];
	ssize_t n = t->raw ? read(STDIN_FILENO, buf, sizeof(buf)) : 0;
	for (ssize_t i = 0; i < n; i++) {
		switch (buf[i]) {
		case 'q':
		case 'Q':
			if (!t->quit && t->q_ends_session)
				raise(SIGINT); /* the session ends as on Ctrl-C */
			else if (!t->quit) {
				live_leave(t); /* the view ends; the run goes on */
				fputs("sonde: live view closed; the command runs on, its output "
				      "goes to output.log (Ctrl-C stops it)\n",
				      stderr);
			}
			t->quit = 1;
			break;
		case 'p':
		case 'P':
			t->paused = !t->paused;
			t->drawn_at_ns = 0;
			break;
		case 's':
		case 'S':
			t->by_total = !t->by_total;
			t->drawn_at_ns = 0;
			break;
		default:
			break;
		}
	}
	(void)t_ns;
}

static void on_turn(void *arg, int64_t t_ns, int last)
{
	struct live *t = arg;
	if (!t->entered)
		return;
	keys_read(t, t_ns);
	if (last || t->quit)
		return;
	/* Paused: the screen stays as it is, except to show it is paused. */
	if (t->drawn_at_ns && t_ns - t->drawn_at_ns < LIVE_REFRESH_NS)
		return;
	if (t->paused && t->drawn_at_ns)
		return;
	screen_draw(t, t_ns);
	t->drawn_at_ns = t_ns ? t_ns : 1;
}

void live_enter(struct live *t)
{
	if (t->entered)
		return;
	t->entered = 1;
	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &t->saved)) {
		struct termios raw = t->saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		t->raw = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
	fflush(stdout);
}

void live_leave(struct live *t)
{
	if (!t->entered)
		return;
	t->entered = 0;
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	t->raw = 0;
}

struct live *live_new(struct recorder *rec, const char *title, int64_t window_ns,
		      int q_ends_session)
{
	struct live *t = xcalloc(1, sizeof(*t));
	struct strbuf sb = STRBUF_INIT;
	utf8_escape(title, strlen(title), 120, &sb);
	t->title = strbuf_detach(&sb);
	t->rec = rec;
	t->window_ns = window_ns;
	t->q_ends_session = q_ends_session;
	t->index = (struct hashmap)HASHMAP_INIT;
	t->node_parent = (struct hashmap)HASHMAP_INIT;
	t->node_frame = (struct hashmap)HASHMAP_INIT;
	t->hooks = (struct session_hooks){.arg = t, .turn = on_turn};
	return t;
}

const struct session_hooks *live_hooks(struct live *t)
{
	return &t->hooks;
}

int live_closed(const struct live *t)
{
	return t->quit;
}

void live_free(struct live *t)
{
	if (!t)
		return;
	live_leave(t);
	funcs_clear(t);
	hashmap_release(&t->node_parent);
	hashmap_release(&t->node_frame);
	free(t->title);
	free(t);
}
