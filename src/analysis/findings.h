/* findings: what the analyses conclude, ranked by what is at stake.
 *
 * Each finding names a location, the evidence (numbers with units), a named
 * pattern (diagnosis), one concrete next step and the metric that should move.
 * impact_pct is the share of the run at stake (seconds of wall time, or bytes
 * of peak memory, as a percentage of the run's total) and is the ranking key,
 * so findings from different dimensions compare.
 *
 * One cause, one finding: findings that blame the same code (their locations
 * equal but for the line and the file's directories) are merged into one,
 * with the words of the most specific (a hot function says less than an RSS
 * step there, which says less than what its time went to, fresh memory or
 * system calls, which says less than a named pattern), the others'
 * titles and evidence listed. The seconds
 * at stake of all findings together never exceed the run's wall time: when
 * they would, each is scaled down in proportion (its own estimate kept in
 * impact_unscaled_s). */
#ifndef SONDE_FINDINGS_H
#define SONDE_FINDINGS_H

#include <jansson.h>
#include <stddef.h>

#define FINDINGS_SHOWN_MAX 7 /* report.json's findings: the ranked list */
#define FINDINGS_KEPT_MAX 30 /* ... and up to this many in all with more_findings */
#define FINDING_BLAMES_CODE 1
#define FINDING_BLAMES_GUESS 2

struct finding {
	/* A stable id, "dimension.pattern" (cpu.hotspot, memory.rss_jump, ...):
	 * docs/report-format.md lists them. */
	const char *id;
	const char *title, *dimension, *location, *evidence, *diagnosis, *next_step, *validation;
	double impact_s;     /* seconds at stake, < 0 when not a time */
	double impact_bytes; /* bytes at stake, < 0 when not memory */
	double impact_pct;   /* 0-100 */
	/* FINDING_BLAMES_CODE when location names code (file:function[:line]),
	 * so another finding there shares its cause; FINDING_BLAMES_GUESS when
	 * that code is only what ran at the time (an RSS jump no tracker named),
	 * the same cause only as a finding that shows the code touches memory
	 * there; 0 for a process or a time window. */
	int blames_code;
	/* Set by findings_merge: [{id, title}] of those merged into this one
	 * (owned; NULL when none). */
	json_t *also;
	double impact_unscaled_s; /* > 0: impact_s before findings_rank scaled it */
	/* With both seconds and bytes at stake (merged findings), the share each
	 * stands for; impact_pct is the larger. */
	double time_pct, bytes_pct;
};

struct findings {
	struct finding *v; /* strings owned (copied by findings_add) */
	size_t n, alloc;
};

#define FINDINGS_INIT { NULL, 0, 0 }

/* 1 when dimension is one of the fixed set a finding's `dimension` takes:
 * cpu, memory, gpu, interconnect, io, concurrency. */
int findings_dimension_known(const char *dimension);

/* Copies f and every string in it. */
void findings_add(struct findings *fs, const struct finding *f);
/* findings_add() of a finding whose stake is time: stake_s seconds
 * (impact_s), stake_s over the run's wall_s as its impact_pct (0 when the
 * wall time is unknown), no bytes at stake. */
void findings_add_time(struct findings *fs, struct finding *f, double stake_s, double wall_s);
void findings_release(struct findings *fs);
/* The cause a location names: the part without a trailing ":LINE" and without
 * the directories of its file ("py_build.py:build_table"), *len bytes at the
 * returned pointer into loc. Two findings there share their cause. */
const char *findings_cause(const char *loc, size_t *len);
/* 1 when a finding with this id was added. */
int findings_has(const struct findings *fs, const char *id);
/* Merges the findings that blame the same code (see above). */
void findings_merge(struct findings *fs);
/* Scales the seconds at stake down in proportion when together they exceed
 * wall_s (> 0; the shares follow), sorts by impact_pct, largest first, and
 * keeps at most keep. */
void findings_rank(struct findings *fs, double wall_s, size_t keep);
/* A JSON array of {rank, id, title, dimension, location, evidence, diagnosis,
 * next_step, validation, impact{seconds|bytes, share_pct, unscaled_seconds},
 * also[{id, title}]}. */
json_t *findings_to_json(const struct findings *fs);

/* Marks each finding of findings (findings_to_json's array) that an interim
 * update had already named (notes of probe "interim": "after phase NAME at
 * T s: [id] location; ...", matched by id, or an id in its `also`, and by
 * findings_cause of the location) with "known_mid_run": {at_s, after_phase},
 * the first such update. */
void findings_mark_known(json_t *findings, json_t *notes);

#endif
