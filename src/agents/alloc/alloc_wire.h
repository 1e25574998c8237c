/* alloc_wire: the record stream from the allocation agent (libsonde_alloc.so,
 * inside the target) to the alloc probe (inside sonde).
 *
 * Channel: sonde sets SONDE_ALLOC_DIR to a private directory; every process
 * image that loads the agent appends to the file "<dir>/<pid>" (O_APPEND).
 * An exec starts a new image in the same file: it begins with a new
 * ALLOC_REC_HEADER, and every record after it belongs to the new image.
 *
 * Records are native-endian (sonde and the target share the machine), each
 * starts with struct alloc_rec_head, and head.len (a multiple of 8) is the size
 * of the whole record. Threads buffer records and append whole buffers, so the
 * file holds whole records in per-thread chunks: ordered inside a thread, not
 * across threads; the reader orders them by time.
 *
 * Allocations and frees travel packed in ALLOC_REC_EVENTS records (one thread
 * each, see below); their call stacks travel once per thread in ALLOC_REC_STACK
 * records and are named by a number afterwards. A STACK record always comes
 * before the first event of its thread that names it, in the same or an
 * earlier chunk; a later STACK record of the same thread and id replaces it.
 * The Python stacks of allocations made by Python code travel the same way,
 * in ALLOC_REC_PYSTACK records with ids of their own, each code object they
 * name described once per thread by an ALLOC_REC_PYCODE record before them
 * (so that sonde resolves them after the process is gone). An allocation's
 * size with bit 63 set (ALLOC_SIZE_MMAP) is an anonymous mapping;
 * ALLOC_REC_UNMAP releases mappings by address range.
 *
 * Times (head.t and the events' times) are in the image's clock, named by its
 * header: CLOCK_MONOTONIC nanoseconds, or ticks of the x86 time-stamp counter
 * when sonde found it a clock (SONDE_ALLOC_CLOCK=tsc; src/util/tsc.h). The
 * reader turns ticks into CLOCK_MONOTONIC nanoseconds with (tick, ns) pairs it
 * reads itself; the map is monotonic and the counter is in step on every CPU,
 * so times of different threads compare. An alloc is stamped after the
 * allocator returned (the counter read waits for earlier loads), a free before
 * the allocator is called, so a reuse of the same address always sorts after
 * the free that released it. */
#ifndef SONDE_ALLOC_WIRE_H
#define SONDE_ALLOC_WIRE_H

#include <stdint.h>

#define ALLOC_ENV_DIR "SONDE_ALLOC_DIR"
/* Mean bytes between two samples (exponential distance); 0: record every allocation. */
#define ALLOC_ENV_INTERVAL "SONDE_ALLOC_INTERVAL"
/* The executable (resolved path) that keeps frame pointers: the agent walks them there. */
#define ALLOC_ENV_FP_EXE "SONDE_ALLOC_FP_EXE"
/* "0": the agent reads no Python stacks (sonde then falls back to its python samples). */
#define ALLOC_ENV_PYSTACK "SONDE_ALLOC_PYSTACK"
/* "0": the agent leaves CPython's object allocators alone (pymalloc's arenas hide objects). */
#define ALLOC_ENV_PYMEM "SONDE_ALLOC_PYMEM"
/* "tsc": stamp with the time-stamp counter; anything else: CLOCK_MONOTONIC. */
#define ALLOC_ENV_CLOCK "SONDE_ALLOC_CLOCK"

#define ALLOC_WIRE_MAGIC 0x45444e4f53434c41ULL /* "ALCSONDE" */
#define ALLOC_WIRE_VERSION 4
#define ALLOC_WIRE_MAX_FRAMES 48
#define ALLOC_WIRE_MAX_PATH 1024
#define ALLOC_WIRE_MAX_PYFRAMES 48

enum alloc_rec_type {
	ALLOC_REC_HEADER = 1, /* a new process image starts */
	ALLOC_REC_MODULE = 2, /* a loaded ELF object, for symbolization */
	/* 3 and 4: single ALLOC and FREE records of version 1 */
	ALLOC_REC_EXIT = 5,    /* the image ran its exit handlers: what is live now is leaked */
	ALLOC_REC_STACK = 6,   /* a call stack and the id the thread's events name it by */
	ALLOC_REC_EVENTS = 7,  /* a thread's allocations and frees, packed */
	ALLOC_REC_PYSTACK = 8, /* a Python stack and the id the thread's events name it by */
	ALLOC_REC_PYCODE = 9,  /* a code object the thread's PYSTACK records name (version 4) */
	ALLOC_REC_UNMAP = 16,  /* a range of mappings is gone (munmap, mremap, MAP_FIXED) */
	/* CPython replaced the wrapped allocators (ALLOC_HDR_PYMEM) with its own:
	 * from now on its objects are seen as their arenas (head only) */
	ALLOC_REC_PYMEM_LOST = 17,
};

enum alloc_clock {
	ALLOC_CLOCK_MONOTONIC = 0, /* nanoseconds */
	ALLOC_CLOCK_TSC = 1,	   /* time-stamp counter ticks */
};

/* In an ALLOC_EV_ALLOC event's size: the block is an anonymous mapping (mmap,
 * mremap), the rest of the number its page-rounded length. */
#define ALLOC_SIZE_MMAP (1ULL << 63)

struct alloc_rec_head {
	uint16_t type;
	uint16_t len; /* whole record in bytes, multiple of 8 */
	uint32_t tid;
	uint64_t t; /* in the image's clock */
};

struct alloc_rec_header {
	struct alloc_rec_head h;
	uint64_t magic;
	uint32_t version;
	uint32_t pid;
	uint32_t ppid;
	uint32_t forked; /* 1: a fork child (it shares its parent's heap copy) */
	uint64_t interval_bytes; /* 0: every allocation is recorded */
	uint32_t clock; /* enum alloc_clock, for every time of this image */
	uint32_t flags; /* ALLOC_HDR_* */
};

/* In the header's flags: the image's CPython object allocators (PyMem
 * domains MEM and OBJ) are wrapped, so its objects are seen one by one. */
#define ALLOC_HDR_PYMEM 1u

/* Followed by the NUL-terminated path, padded to 8 bytes. */
struct alloc_rec_module {
	struct alloc_rec_head h;
	uint64_t bias;	      /* load bias (dlpi_addr) */
	uint64_t start, end; /* lowest and highest address of its loaded segments */
};

/* Followed by nips return addresses (8 bytes each), innermost first;
 * len = sizeof + 8 * nips. Id 0 is for one event written on its own (the
 * thread's buffer is gone): it is redefined each time. */
struct alloc_rec_stack {
	struct alloc_rec_head h;
	uint32_t id;
	uint32_t nips;
};

/* ALLOC_REC_EVENTS: the head (h.tid the thread, h.t the time base), then
 * events, each a tag byte and unsigned LEB128 numbers:
 *   ALLOC_EV_ALLOC     dt, dptr, size, stack id
 *   ALLOC_EV_FREE      dt, dptr
 *   ALLOC_EV_ALLOC_PY  dt, dptr, size, stack id, Python stack id (PYSTACK)
 * dt is the time since the previous event of the record (the first: since
 * h.t) and dptr the address minus the previous event's address (the first:
 * minus 0), both zigzag-coded (0, -1, 1, -2 ... as 0, 1, 2, 3 ...). A zero tag
 * pads the record to its length; nothing follows it. */
enum alloc_ev_tag {
	ALLOC_EV_PAD = 0,
	ALLOC_EV_ALLOC = 1,
	ALLOC_EV_FREE = 2,
	ALLOC_EV_ALLOC_PY = 3,
};

/* Stamped before the kernel releases the range (or with the time before the
 * call that replaced it): every mapping recorded in [addr, addr + len) is gone
 * there, wholly or in part. */
struct alloc_rec_unmap {
	struct alloc_rec_head h;
	uint64_t addr;
	uint64_t len;
};

/* A Python stack and the id the thread's ALLOC_EV_ALLOC_PY events name it by,
 * sent by a thread with Python frames before the first event that names it,
 * like a STACK record (id 0: one event written on its own). Followed by
 * (len - sizeof) / 24 frames of three
 * uint64_t, innermost first: the code object's address in the target; its
 * position: f_lasti on 3.8-3.10 (3.10 counts instructions, older versions
 * bytes), the instruction pointer (prev_instr, instr_ptr) on 3.11+; and its
 * identity, CPYTHON_CODE_IDENT (cpython_layout.h) of the addresses of its
 * co_qualname (co_name before 3.11) and co_filename, so that a code object
 * freed and another made at the same address are told apart. The reader
 * resolves them from the PYCODE records of the same image; a frame whose code
 * has none (it could not be described) with its own view of the interpreter
 * (cpython.h), which needs the process alive. */
struct alloc_rec_pystack {
	struct alloc_rec_head h;
	uint16_t py_version; /* major << 8 | minor, as the agent read it: 0x030b */
	uint16_t flags;	     /* ALLOC_PYSTACK_* */
	uint32_t id;
};

#define ALLOC_PYSTACK_TRUNCATED 1u /* outer frames beyond ALLOC_WIRE_MAX_PYFRAMES left out */

/* ALLOC_REC_PYCODE: one code object, described so that any position in it
 * resolves without the process: sent by a thread before the first of its
 * PYSTACK records that names (code, ident), read once from the code object
 * (alive then: it runs on the thread's stack), and not again by that thread
 * until its caches start over (another thread sends its own: records are
 * ordered within a thread only). Followed by name_len bytes of the name
 * (co_qualname on 3.11+, co_name before) and file_len bytes of co_filename,
 * each the string's characters as CPython stores them (PEP 393: name_kind and
 * file_kind bytes each, 1, 2 or 4), then table_len bytes of its line table
 * (co_linetable; co_lnotab on 3.8-3.9), zeros to the record's length. A code
 * object whose strings or table do not fit the bounds below is not described:
 * its frames resolve only while the process lives. */
struct alloc_rec_pycode {
	struct alloc_rec_head h;
	uint64_t code, ident; /* as in the PYSTACK frames */
	int32_t firstlineno;  /* co_firstlineno */
	uint16_t py_version;  /* as in alloc_rec_pystack */
	uint8_t name_kind, file_kind;
	uint16_t name_len, file_len, table_len; /* bytes */
	/* 3.11+: bytes from the code object to its first instruction
	 * (co_code_adaptive), what a frame's instruction pointer counts from; 0 before */
	uint16_t units_off;
};

#define ALLOC_PYCODE_MAX_NAME 1024   /* bytes of the name */
#define ALLOC_PYCODE_MAX_TABLE 32768 /* bytes of the line table */
/* The longest PYCODE record. */
#define ALLOC_PYCODE_MAX_BYTES                                                                     \
	(sizeof(struct alloc_rec_pycode) + ALLOC_PYCODE_MAX_NAME + ALLOC_WIRE_MAX_PATH +           \
	 ALLOC_PYCODE_MAX_TABLE + 7)

/* The longest event: a tag, four numbers of at most 10 bytes and an id of 5. */
#define ALLOC_EV_MAX_BYTES 46
/* The longest ALLOC_REC_EVENTS record (head.len is 16 bits, a multiple of 8). */
#define ALLOC_EVENTS_MAX_BYTES 65528

#endif
