/* alloc_probe: what the parts of the alloc probe share: its state (struct
 * alloc_state: the streams, the waiting events, the heap and the Python
 * stacks), and the functions one part calls in another (alloc.c starts the
 * agent and reads its streams, alloc_write.c symbolizes the call sites and
 * writes them at the end). Private: only alloc*.c include it; the rest of
 * sonde sees probe_alloc (probes.c). */
#ifndef SONDE_ALLOC_PROBE_H
#define SONDE_ALLOC_PROBE_H

#include "alloc_heap.h"
#include "alloc_python.h"
#include "alloc_pystack.h"
#include "../util/tsc.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct probe_ctx;
struct recorder;
struct alloc_stream;
struct alloc_event;

struct alloc_state {
	const char *dir; /* agent_dir.h's, held while the probe lives */
	int mode;
	int64_t interval_bytes;
	struct alloc_stream *streams;
	size_t nstreams, astreams;
	/* Waiting events: [head, nsorted) in order, [nsorted, nevents) as they came. */
	struct alloc_event *events;
	size_t head, nsorted, nevents, aevents;
	struct alloc_event *scratch; /* for merging */
	size_t ascratch;
	uint64_t order;
	struct heap heap;
	struct alloc_pyticks py; /* Python samples, for Python call sites */
	struct alloc_pystacks pys; /* Python stacks read by the agent */
	uint64_t py_inprocess;	   /* allocations with one */
	uint64_t pymem_images;	   /* images whose CPython allocators the agent wrapped */
	uint64_t pymem_lost;	   /* of them, where CPython replaced the wrappers */
	uint64_t records, bad_streams, lost_stacks;
	/* Tests only (SONDE_TEST_ALLOC_READ_AT_STOP=1): the records are read when
	 * the probe stops, after the target ended, as a reader far behind it would. */
	int read_at_stop;
	struct tsc_map tsc; /* counter ticks to CLOCK_MONOTONIC, from sonde's own pairs */
	struct recorder *rec;
	sqlite3_stmt *site_tl_ins; /* into alloc_site_timeline_raw */
};

/* Writes the tables of the heap's sites, its timeline and the run's meta
 * alloc_* (alloc_write.c); end_ns relative to the run's start. */
void alloc_write(struct alloc_state *st, struct probe_ctx *ctx, int64_t end_ns);

#endif
