/* findings: what the analyses conclude, ranked by what is at stake.
 *
 * Each finding names a location, the evidence (numbers with units), a named
 * pattern (diagnosis), one concrete next step and the metric that should move.
 * impact_pct is the share of the run at stake (seconds of wall time, or bytes
 * of peak memory, as a percentage of the run's total) and is the ranking key,
 * so findings from different dimensions compare. */
#ifndef SONDE_FINDINGS_H
#define SONDE_FINDINGS_H

#include <jansson.h>
#include <stddef.h>

#define FINDINGS_SHOWN_MAX 7

struct finding {
	const char *title, *dimension, *location, *evidence, *diagnosis, *next_step, *validation;
	double impact_s;     /* seconds at stake, < 0 when not a time */
	double impact_bytes; /* bytes at stake, < 0 when not memory */
	double impact_pct;   /* 0-100 */
};

struct findings {
	struct finding *v; /* strings owned (copied by findings_add) */
	size_t n, alloc;
};

#define FINDINGS_INIT { NULL, 0, 0 }

/* Copies f and every string in it. */
void findings_add(struct findings *fs, const struct finding *f);
void findings_release(struct findings *fs);
/* Sorts by impact_pct, largest first, and keeps at most keep. */
void findings_rank(struct findings *fs, size_t keep);
/* A JSON array of {rank, title, dimension, location, evidence, diagnosis,
 * next_step, validation, impact{seconds|bytes, share_pct}}. */
json_t *findings_to_json(const struct findings *fs);

#endif
