/* hygiene: the facts about the machine that matter for a run's numbers
 * (report.json `hygiene`), from the readings taken at the run's start and
 * end (target/machine.h), with a warning for each that makes them less
 * true: a busy machine, a powersave governor, throttling, steal, pressure.
 *
 * Contract: hygiene_assess() is pure. A fact the readings lack is an
 * absent key; `warnings` is always there, a list of {id, text}, each text
 * saying what happened and why it matters for the numbers. */
#ifndef SONDE_HYGIENE_H
#define SONDE_HYGIENE_H

#include "../target/machine.h"

#include <jansson.h>
#include <sqlite3.h>

/* Above these a warning is given. */
#define HYGIENE_BUSY_LOAD_PER_CPU 0.75 /* 1-minute load per CPU at the start */
#define HYGIENE_STEAL_PCT 5.0	       /* of the machine's CPU time during the run */
#define HYGIENE_MEMORY_STALL_PCT 10.0  /* PSI memory "some" share of the wall time */
#define HYGIENE_SWAP_PAGES 256	       /* pages swapped in or out during the run */

/* The hygiene object. end may be NULL (the run's end was not read); wall_s
 * < 0 when unknown (no share of the wall time then). NULL on no memory. */
json_t *hygiene_assess(const struct machine_reading *start, const struct machine_reading *end,
		       double wall_s);
/* The hygiene object of a recording, from its meta readings (what the
 * report's `hygiene` holds); NULL when it has none (made before the readings
 * were kept) or on no memory. */
json_t *hygiene_of_recording(sqlite3 *db);

#endif
