/* interim: the report so far, built when a phase ends, printed between lines. */
#include "interim.h"
#include "../analysis/analysis.h"
#include "../analysis/phase_markers.h"
#include "../record/recorder.h"
#include "../util/strbuf.h"
#include "../util/utf8.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INTERIM_LINE_CHARS 200

struct interim {
	struct session_hooks hooks;
	struct recorder *rec;
	char *db_path;
	struct phase_pattern pattern;
	int have_pattern;
	/* The session's thread only. */
	int ended;		/* a phase ended since the last build started */
	char ended_name[PHASE_NAME_MAX];
	int64_t ended_at_ns, last_build_ns;
	int64_t spacing_ns; /* between two builds: grows with what a build costs */
	int building;		/* a thread was started and not joined */
	pthread_t thread;
	/* Shared with the build thread. */
	pthread_mutex_t lock;
	int done;		/* the thread finished: text is ready */
	int64_t build_ns;	/* the CPU time the last build took (its wall time, at idle
				 * priority, says how busy the machine is, not what it cost) */
	char phase[PHASE_NAME_MAX];
	int64_t at_ns;
	struct strbuf text; /* what to print; empty when nothing stood out */
};

/* A connection that sees the recording as it is now, as if the run had
 * ended at at_ns: a temporary meta table shadows the recording's. */
static sqlite3 *snapshot_open(const char *path, int64_t at_ns)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) !=
	    SQLITE_OK)
		goto fail;
	sqlite3_busy_timeout(db, 2000);
	if (sqlite3_exec(db, "CREATE TEMP TABLE meta AS SELECT * FROM main.meta;"
			     "DELETE FROM temp.meta WHERE key = 'wall_ns'",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO temp.meta(key, value) VALUES('wall_ns', ?)", -1,
			       &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(st, 1, at_ns);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	return db;
fail:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return NULL;
}

/* "sonde: after phase X (at 3.2 s), so far:" and two lines an item; the
 * note for the recording lists "[id] location" of each. */
static void update_write(json_t *findings, const char *phase, int64_t at_ns, struct strbuf *text,
			 struct strbuf *note)
{
	size_t n = json_array_size(findings);
	if (!n)
		return;
	strbuf_addstr(text, "sonde: after phase ");
	utf8_escape(phase, strlen(phase), INTERIM_LINE_CHARS, text);
	strbuf_addf(text, " (at %.1f s), so far:\n", (double)at_ns / 1e9);
	strbuf_addstr(note, "after phase ");
	utf8_escape(phase, strlen(phase), INTERIM_LINE_CHARS, note);
	strbuf_addf(note, " at %.3f s:", (double)at_ns / 1e9);
	for (size_t i = 0; i < n && i < INTERIM_ITEMS; i++) {
		json_t *f = json_array_get(findings, i);
		const char *title = json_string_value(json_object_get(f, "title"));
		const char *next = json_string_value(json_object_get(f, "next_step"));
		const char *id = json_string_value(json_object_get(f, "id"));
		const char *loc = json_string_value(json_object_get(f, "location"));
		strbuf_addf(text, "sonde:   %zu. ", i + 1);
		utf8_escape(title ? title : "", title ? strlen(title) : 0, INTERIM_LINE_CHARS, text);
		strbuf_addstr(text, "\nsonde:      next: ");
		utf8_escape(next ? next : "", next ? strlen(next) : 0, INTERIM_LINE_CHARS, text);
		strbuf_addch(text, '\n');
		strbuf_addf(note, " [%s] ", id ? id : "");
		utf8_escape(loc ? loc : "", loc ? strlen(loc) : 0, INTERIM_LINE_CHARS, note);
		strbuf_addch(note, ';');
	}
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *build_thread(void *arg)
{
	struct interim *in = arg;
	/* The target comes first: the build runs on CPU time nobody else wants. */
	struct sched_param idle = { .sched_priority = 0 };
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
	char phase[PHASE_NAME_MAX];
	pthread_mutex_lock(&in->lock);
	memcpy(phase, in->phase, sizeof(phase));
	int64_t at_ns = in->at_ns;
	pthread_mutex_unlock(&in->lock);
	struct strbuf text = STRBUF_INIT, note = STRBUF_INIT, err = STRBUF_INIT;
	int64_t t0 = thread_cpu_ns();
	sqlite3 *db = snapshot_open(in->db_path, at_ns);
	json_t *report = db ? report_build(db, &err) : NULL;
	if (report)
		update_write(json_object_get(report, "findings"), phase, at_ns, &text, &note);
	if (note.len)
		record_note(in->rec, at_ns, "interim", "interim", note.buf);
	json_decref(report);
	sqlite3_close(db);
	pthread_mutex_lock(&in->lock);
	strbuf_reset(&in->text);
	strbuf_add(&in->text, text.buf ? text.buf : "", text.len);
	in->build_ns = thread_cpu_ns() - t0;
	in->done = 1;
	pthread_mutex_unlock(&in->lock);
	strbuf_release(&text);
	strbuf_release(&note);
	strbuf_release(&err);
	return NULL;
}

static void on_line(void *arg, int64_t t_ns, int stream, const char *line, size_t len)
{
	struct interim *in = arg;
	struct phase_marker m;
	(void)stream;
	if (!phase_marker_parse(line, len, in->have_pattern ? &in->pattern : NULL, &m) ||
	    (m.event != PHASE_END && m.event != PHASE_MARK))
		return;
	/* A mark ends the phase before it; either way a phase just ended. */
	in->ended = 1;
	memcpy(in->ended_name, m.name, sizeof(in->ended_name));
	in->ended_at_ns = t_ns;
}

static void build_start(struct interim *in, int64_t now_ns)
{
	recorder_tick(in->rec, 1); /* what was recorded so far, committed for the reader */
	pthread_mutex_lock(&in->lock);
	memcpy(in->phase, in->ended_name, sizeof(in->phase));
	in->at_ns = now_ns;
	in->done = 0;
	pthread_mutex_unlock(&in->lock);
	in->ended = 0;
	in->last_build_ns = now_ns;
	in->building = !pthread_create(&in->thread, NULL, build_thread, in);
}

static void on_turn(void *arg, int64_t t_ns, int last)
{
	struct interim *in = arg;
	if (in->building) {
		pthread_mutex_lock(&in->lock);
		int done = in->done;
		pthread_mutex_unlock(&in->lock);
		if (!done && !last)
			return;
		pthread_join(in->thread, NULL);
		in->building = 0;
		fputs(in->text.buf ? in->text.buf : "", stderr);
		fflush(stderr);
		/* Builds take at most 1/INTERIM_COST_SHARE of one core. */
		in->spacing_ns = in->build_ns * INTERIM_COST_SHARE;
		if (in->spacing_ns < INTERIM_SPACING_NS)
			in->spacing_ns = INTERIM_SPACING_NS;
	}
	if (in->ended && !last && t_ns - in->last_build_ns >= in->spacing_ns)
		build_start(in, t_ns);
}

struct interim *interim_new(struct recorder *rec, const char *db_path, const char *pattern)
{
	struct interim *in = xcalloc(1, sizeof(*in));
	if (pattern) {
		if (phase_pattern_compile(&in->pattern, pattern, NULL)) {
			free(in);
			return NULL;
		}
		in->have_pattern = 1;
	}
	in->rec = rec;
	in->db_path = xstrdup(db_path);
	in->last_build_ns = -INTERIM_SPACING_NS;
	in->spacing_ns = INTERIM_SPACING_NS;
	in->text = (struct strbuf)STRBUF_INIT;
	pthread_mutex_init(&in->lock, NULL);
	in->hooks = (struct session_hooks){ .arg = in, .line = on_line, .turn = on_turn };
	return in;
}

const struct session_hooks *interim_hooks(struct interim *in)
{
	return &in->hooks;
}

void interim_free(struct interim *in)
{
	if (!in)
		return;
	if (in->building)
		pthread_join(in->thread, NULL);
	if (in->have_pattern)
		phase_pattern_release(&in->pattern);
	pthread_mutex_destroy(&in->lock);
	strbuf_release(&in->text);
	free(in->db_path);
	free(in);
}
