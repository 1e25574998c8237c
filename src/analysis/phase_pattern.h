/* phase_pattern: matches a log line against a compiled --phase pattern.
 * Internal to phase_markers.c; compiling and releasing a pattern, and what a
 * pattern may say, are in the public phase_markers.h. */
#ifndef SONDE_PHASE_PATTERN_H
#define SONDE_PHASE_PATTERN_H

#include "phase_markers.h"

#include <stddef.h>

/* Reads one line (len bytes, any bytes; line may be NULL when len is 0)
 * with p, which must be compiled; the pattern sees the first 4095 bytes.
 * 1 when the line is a marker: m->event, m->name and m->duration_s set (the
 * duration -1 when the pattern has no duration capture or it is not one).
 * 0 when it is not: then m->name may have been emptied, the rest of m is
 * untouched. */
int phase_pattern_match(const struct phase_pattern *p, const char *line, size_t len,
			struct phase_marker *m);

#endif
