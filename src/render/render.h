/* render: the report model (and the recording) to one output format.
 *
 * A renderer never measures and never decides: it formats what the analyses
 * put in the report object, or rows of the recording (output.log). Each writes
 * one file in the run directory; a failure is returned with a one-line message
 * and does not stop the others. A new file of the run directory is a new file
 * of src/render/ plus one line in renderer_list.h (the registry; renderers.c
 * makes render_table of it). */
#ifndef SONDE_RENDER_H
#define SONDE_RENDER_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/types.h>

struct strbuf;

struct render_ctx {
	json_t *report; /* from report_build() */
	sqlite3 *db;
	const char *dir; /* the run directory */
	mode_t file_mode; /* for the files written (umask applies); 0: 0600 */
	int sliced; /* the report is of a slice (record/slice.h): dir holds no profile.db */
};

struct renderer {
	const char *name;
	const char *file; /* written in the run directory */
	/* 0, or -1 (nothing written; a half-written file is removed) with err filled.
	 * 1 when there is nothing to write (the file is not created). */
	int (*render)(const struct render_ctx *ctx, FILE *out, struct strbuf *err);
};

extern const struct renderer *const render_table[];
/* The renderer of render_table called name, or NULL. */
const struct renderer *renderer_find(const char *name);

/* An exporter: one renderer chosen by name (`sonde export DIR --format NAME`),
 * writing another tool's format; its default file name is renderer->file. A
 * new one is a renderer, a `const struct exporter export_NAME` in its file
 * and one line in exporter_list.h. */
struct exporter {
	const char *name;
	const char *description; /* one line, for --format help */
	const struct renderer *renderer;
	int needs_report;  /* reads the report model (trace's phases) besides the recording */
	const char *alias; /* another name it answers to, or NULL */
};

extern const struct exporter *const export_table[]; /* NULL-terminated */

/* The exporter called name (or its alias), or NULL. */
const struct exporter *exporter_find(const char *name);

/* Writes every renderer's file (through a fresh temporary with a random name,
 * created O_EXCL|O_NOFOLLOW in ctx->dir and renamed over the final name: a
 * link planted at either name is never written through)
 * and lists them in report["artifacts"] before report.json is written.
 * Returns the number of failures; messages are appended to err. */
int render_all(const struct render_ctx *ctx, struct strbuf *err);

/* The short summary printed on the terminal after a run. */
void render_terminal(const struct render_ctx *ctx, FILE *out);

/* Formatting helpers shared by the text renderers. */
void fmt_bytes(char *buf, size_t cap, double bytes);
void fmt_seconds(char *buf, size_t cap, double s);

#endif
