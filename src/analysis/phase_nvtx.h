/* phase_nvtx: the program's NVTX ranges as phases, for a run whose output
 * has no phase markers (phases.c). The phases are the top-level ranges: a
 * push/pop range at depth 0 on its thread (its samples are that thread's:
 * phase.tid) and every start/end range (which may end on another thread:
 * the whole process's samples count). Marks and nested push ranges are not
 * phases (report key gpu.nvtx_ranges sums every range where the cuda probe
 * ran). A range of a named domain is called "domain: message". A range still
 * open at exit ends there (PHASE_ENDED_RUN_END). */
#ifndef SONDE_PHASE_NVTX_H
#define SONDE_PHASE_NVTX_H

#include "phase_table.h"

#include <sqlite3.h>

struct strbuf;

/* Adds the ranges of the recording's nvtx_ranges table (when it has one)
 * to t as closed phases. The number added, or -1 with one line in err. */
long phase_nvtx_read(sqlite3 *db, struct phase_table *t, struct strbuf *err);

#endif
