/* aio_wire: the asyncio agent's records (src/agents/asyncio/_sonde_asyncio_wire.py),
 * one text line each, fields separated by a tab, the kind first:
 *
 *   V version pid python_version      the file's first line
 *   N id function file line           a code location (ids per process)
 *   T task t_ns site coro tid         a task created at site, running coro
 *   E task t_ns state                 it ended: ok, cancelled or an exception's name
 *   L tid t_ns late_ns                the loop's heartbeat ran late_ns late
 *   R t_ns site delay_ns exc task     asyncio.sleep(delay) while handling exc: a retry wait
 *   W t_ns wait_ns site task kind pool in_flight
 *                                     a wait that blocked: on a semaphore or lock, or a
 *                                     request queued for an aiohttp or httpx connection
 *                                     (kind); pool: the semaphore's or connector's P
 *                                     number (0: none); in_flight: the slots or
 *                                     connections taken as it began (-1: unknown; an
 *                                     agent before it wrote no such field: -1 too)
 *   P pool slots site caller          a semaphore or connector a W names: its value or
 *                                     limit when made (0: no limit), where, and the site
 *                                     that called the function that made it
 *   X name count                      a counter of the agent's (tasks_dropped, ...)
 *
 * Times are CLOCK_MONOTONIC nanoseconds. This module only parses: one line
 * in, one record out, pointing into the line; no allocation. */
#ifndef SONDE_AIO_WIRE_H
#define SONDE_AIO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define AIO_WIRE_VERSION 1
#define AIO_LINE_MAX 4096 /* bytes; a longer line is not a record */

struct aio_record {
	char kind; /* 'V', 'N', 'T', 'E', 'L', 'R', 'W', 'P' or 'X' */
	int64_t n[6]; /* the integer fields, in their order above */
	const char *s[3]; /* the string fields, in their order (not terminated) */
	size_t slen[3];
};

/* Parses one line (without its newline). 0, or -1 when it is not a record
 * of a known kind with exactly its fields. */
int aio_record_parse(const char *line, size_t len, struct aio_record *r);

#endif
