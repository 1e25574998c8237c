/* derive: passes that join several sources of the recording after the run.
 *
 * A probe writes only what it measured; a join of two probes' rows (Python +
 * native stacks, later GPU <-> CPU, phases from the log, ranks) is a derive
 * pass. The session runs every pass of derive_table once, after every probe
 * has stopped and before the recording is closed (so before any analysis);
 * `sonde report` runs none (a recording left by a killed sonde has no derived
 * rows, and readers fall back to the probes' own: stackread.h).
 *
 * Each pass declares what it reads and writes as names of the form "table" or
 * "table:source" (a source within the table, e.g. "samples:cpu"). A pass runs
 * after every pass that writes something it reads ("samples" and
 * "samples:cpu" meet; "samples:cpu" and "samples:mixed" do not); otherwise
 * in table order. The shared stack tables (frames, stack_nodes, threads) are
 * append-only and interned, so they are not declared.
 *
 * Ownership: passes are static; a pass's run() gets the open recording and
 * writes through it (recorder_stacks, record_meta_*) in the session's thread.
 *
 * Not a pass: allocation <-> Python attribution by time (probes/alloc_python.h)
 * stays in the alloc probe, read live, for memory: see docs/development.md. */
#ifndef SONDE_DERIVE_H
#define SONDE_DERIVE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct recorder;
struct strbuf;

#define DERIVE_PASSES_MAX 32

struct derive_ctx {
	struct recorder *rec; /* writes */
	sqlite3 *db;	      /* recorder_db(rec): reads, on the same connection */
};

struct derive_pass {
	const char *name;
	const char *summary;	   /* one line for the docs and -v */
	const char *const *reads;  /* NULL-terminated "table" or "table:source" */
	const char *const *writes; /* the same */
	/* Returns the rows it wrote (0: nothing to join), or -1 with one line in why. */
	int64_t (*run)(const struct derive_ctx *ctx, struct strbuf *why);
};

/* NULL-terminated, in the order used where needs do not decide (passes.c). */
extern const struct derive_pass *const derive_table[];

/* 1 when a read of `need` is satisfied by a write of `made`. */
int derive_meets(const char *need, const char *made);
/* Puts the passes of table (NULL-terminated, at most DERIVE_PASSES_MAX) into
 * out in run order; returns their count, or -1 with the passes that wait on
 * each other named in why (out is then unspecified). */
int derive_order(const struct derive_pass *const *table, const struct derive_pass **out,
		 struct strbuf *why);
/* Runs the passes of table in derive_order's order. A pass that fails is
 * logged and noted in the recording; the others still run. Returns 0, or -1
 * when the order cannot be made (nothing runs) or a pass failed. */
int derive_run(struct recorder *rec, const struct derive_pass *const *table);

#endif
