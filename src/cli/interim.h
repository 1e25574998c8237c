/* interim: short ranked updates while the command runs.
 *
 * When one of the command's phases ends (a marker in its output, read with
 * the run's --phase pattern or the built-in forms), the report so far is
 * built on a thread of its own, from a read-only connection to the recording
 * with the run's wall time set to that moment, and its top INTERIM_ITEMS
 * findings are printed on stderr (two lines an item) at a moment when the
 * command's own output stands at a line start, so no line of it is split. At
 * most one update is built at a time, and updates are at least
 * INTERIM_SPACING_NS apart, and INTERIM_COST_SHARE times the last build's
 * CPU time (so builds use at most a tenth of one core); the build thread runs
 * at idle priority, so on a saturated machine an update may come late (at the
 * latest when the command ends): phases that end meanwhile are covered by the
 * next.
 * Each update is also noted in the recording (probe and kind "interim"), so
 * the final report can say which findings were known mid-run.
 *
 * The hooks run on the session's thread; interim_free() waits for a build in
 * progress (the final report is built after it, never beside it). */
#ifndef SONDE_INTERIM_H
#define SONDE_INTERIM_H

#include "../session/session.h"

#define INTERIM_ITEMS 3
#define INTERIM_SPACING_NS (2LL * 1000000000LL)
#define INTERIM_COST_SHARE 10

struct recorder;
struct interim;

/* db_path: the recording rec writes; pattern: the --phase pattern or NULL.
 * NULL when the pattern does not compile (the CLI checked it already). */
struct interim *interim_new(struct recorder *rec, const char *db_path, const char *pattern);
const struct session_hooks *interim_hooks(struct interim *in);
void interim_free(struct interim *in);

#endif
