/* live: the live view of a recording while it is made, for `sonde top PID`
 * and `sonde run --live`: refreshed every second on the terminal's
 * alternate screen, the hottest functions over a sliding window (Python
 * functions when the target runs Python, else native ones), the threads'
 * state (running, queued for a CPU, waiting, holding the GIL), RSS and the
 * GPUs' use. Keys: q quits (the session, or only the view), p pauses or
 * resumes, s sorts by self or total time.
 *
 * Contract: the view draws from the session's turn hook (live_hooks) only
 * between live_enter and live_leave; it reads the recording under the
 * recorder's lock. live_leave restores the terminal and may be called
 * more than once. */
#ifndef SONDE_LIVE_H
#define SONDE_LIVE_H

#include "../session/session.h"

#include <stdint.h>

#define LIVE_WINDOW_NS_DEFAULT (5 * 1000000000LL)

struct live;
struct recorder;

/* title: the top line's first words (outside text: it is escaped).
 * q_ends_session: q interrupts the session as Ctrl-C does (sonde top);
 * else it only closes the view (sonde run --live: the command goes on). */
struct live *live_new(struct recorder *rec, const char *title, int64_t window_ns,
		      int q_ends_session);
const struct session_hooks *live_hooks(struct live *l);
/* The alternate screen, no cursor, keys read one by one without echo
 * (Ctrl-C still interrupts). */
void live_enter(struct live *l);
void live_leave(struct live *l);
/* 1 once q was pressed. */
int live_closed(const struct live *l);
void live_free(struct live *l);

#endif
