/* stacks_fixture: what the stack tests share: a throwaway recording filled
 * through the real recorder and stack writer, then reopened read-only as
 * analyses see it. The checks are check.h's. */
#ifndef SONDE_TEST_STACKS_FIXTURE_H
#define SONDE_TEST_STACKS_FIXTURE_H

#include "analysis/analysis.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "record/stacks.h"
#include "util/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

struct fixture {
	char dir[256];
	char path[300];
	struct recorder *rec;
	sqlite3 *db; /* read-only, after fixture_reopen */
};

static inline void fixture_open(struct fixture *fx, int64_t wall_ns)
{
	struct strbuf err = STRBUF_INIT;
	const char *tmp = getenv("TMPDIR");
	snprintf(fx->dir, sizeof(fx->dir), "%s/sonde-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fx->dir) ) {
		perror("mkdtemp");
		exit(2);
	}
	int n = snprintf(fx->path, sizeof(fx->path), "%s/profile.db", fx->dir);
	if (n < 0 || (size_t)n >= sizeof(fx->path)) {
		fprintf(stderr, "fixture_open: %s: path too long\n", fx->dir);
		exit(2);
	}
	if (recorder_open(fx->path, &fx->rec, &err)) {
		fprintf(stderr, "recorder_open: %s\n", err.buf);
		exit(2);
	}
	if (wall_ns > 0)
		record_meta_int(fx->rec, "wall_ns", wall_ns);
	fx->db = NULL;
	strbuf_release(&err);
}

/* Interns the stack of function names (outermost first; "name@line" sets a
 * line) and records `count` samples of `weight` each for source. */
static inline void fixture_stack(struct fixture *fx, const char *const *names, size_t n, int count,
			  const char *source, int64_t weight)
{
	struct stack_writer *sw = recorder_stacks(fx->rec);
	int64_t ids[64];
	for (size_t i = 0; i < n && i < 64; i++) {
		char fn[256];
		int line = 0;
		snprintf(fn, sizeof(fn), "%s", names[i]);
		char *at = strrchr(fn, '@');
		if (at) {
			line = atoi(at + 1);
			*at = '\0';
		}
		struct frame_info fi = { .function = fn, .file = "work.c", .line = line,
					 .module = "/opt/app", .kind = "native" };
		ids[i] = stack_frame(sw, &fi);
	}
	int64_t node = stack_intern(sw, ids, n < 64 ? n : 64);
	for (int k = 0; k < count; k++) {
		struct sample_info si = { .t_ns = k, .pid = 100, .tid = 100, .node = node,
					  .source = source, .weight = weight, .on_cpu = 1, .gil = -1 };
		stack_sample(sw, &si);
	}
}

#define STACK(fx, count, source, weight, ...)                                              \
	do {                                                                               \
		const char *const names_[] = { __VA_ARGS__ };                              \
		fixture_stack(fx, names_, sizeof(names_) / sizeof(names_[0]), count, source, \
			      weight);                                                     \
	} while (0)

/* Closes the writer and opens the recording read-only in fx->db. */
static inline void fixture_reopen(struct fixture *fx)
{
	struct strbuf err = STRBUF_INIT;
	recorder_close(fx->rec);
	fx->rec = NULL;
	if (recording_open(fx->path, &fx->db, &err)) {
		fprintf(stderr, "recording_open: %s\n", err.buf);
		exit(2);
	}
	strbuf_release(&err);
}

/* Closes the writer, reopens the recording and builds the whole report model
 * from it (json_decref it). */
static inline json_t *fixture_report(struct fixture *fx)
{
	fixture_reopen(fx);
	struct strbuf err = STRBUF_INIT;
	json_t *r = report_build(fx->db, &err);
	strbuf_release(&err);
	return r;
}

/* A number of the report, NAN when absent. */
static inline double fixture_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static inline void fixture_close(struct fixture *fx)
{
	if (fx->rec)
		recorder_close(fx->rec);
	sqlite3_close(fx->db);
	unlink(fx->path);
	/* The recorder may leave a journal beside the database. */
	char side[340];
	snprintf(side, sizeof(side), "%s-wal", fx->path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", fx->path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-journal", fx->path);
	unlink(side);
	rmdir(fx->dir);
}

#endif
