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
 * across threads; the reader orders them by t_ns (CLOCK_MONOTONIC).
 *
 * Times: an alloc is stamped after the allocator returned, a free before the
 * allocator is called, so a reuse of the same address always sorts after the
 * free that released it. */
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

#define ALLOC_WIRE_MAGIC 0x45444e4f53434c41ULL /* "ALCSONDE" */
#define ALLOC_WIRE_VERSION 1
#define ALLOC_WIRE_MAX_FRAMES 48
#define ALLOC_WIRE_MAX_PATH 1024
#define ALLOC_WIRE_MAX_PYFRAMES 48

enum alloc_rec_type {
	ALLOC_REC_HEADER = 1, /* a new process image starts */
	ALLOC_REC_MODULE = 2, /* a loaded ELF object, for symbolization */
	ALLOC_REC_ALLOC = 3,
	ALLOC_REC_FREE = 4,
	ALLOC_REC_EXIT = 5, /* the image ran its exit handlers: what is live now is leaked */
	ALLOC_REC_PYSTACK = 6, /* the Python stack of the same thread's next ALLOC record */
	/* 16: apart from the numbers after EXIT, which other record types take. */
	ALLOC_REC_UNMAP = 16, /* a range of mappings is gone (munmap, mremap, MAP_FIXED) */
};

/* In alloc_rec_alloc.size: the block is an anonymous mapping (mmap, mremap),
 * the rest of the field its page-rounded length. */
#define ALLOC_SIZE_MMAP (1ULL << 63)

struct alloc_rec_head {
	uint16_t type;
	uint16_t len; /* whole record in bytes, multiple of 8 */
	uint32_t tid;
	uint64_t t_ns; /* CLOCK_MONOTONIC */
};

struct alloc_rec_header {
	struct alloc_rec_head h;
	uint64_t magic;
	uint32_t version;
	uint32_t pid;
	uint32_t ppid;
	uint32_t forked; /* 1: a fork child (it shares its parent's heap copy) */
	uint64_t interval_bytes; /* 0: every allocation is recorded */
};

/* Followed by the NUL-terminated path, padded to 8 bytes. */
struct alloc_rec_module {
	struct alloc_rec_head h;
	uint64_t bias;	      /* load bias (dlpi_addr) */
	uint64_t start, end; /* lowest and highest address of its loaded segments */
};

/* Followed by (len - sizeof) / 8 return addresses, innermost first. */
struct alloc_rec_alloc {
	struct alloc_rec_head h;
	uint64_t ptr;
	uint64_t size;
};

struct alloc_rec_free {
	struct alloc_rec_head h;
	uint64_t ptr;
};

/* Stamped before the kernel releases the range (or with the time before the
 * call that replaced it): every mapping recorded in [addr, addr + len) is gone
 * there, wholly or in part. */
struct alloc_rec_unmap {
	struct alloc_rec_head h;
	uint64_t addr;
	uint64_t len;
};

/* Sent by a thread with Python frames right before its ALLOC record (threads
 * without any send none). Followed by (len - sizeof) / 24 frames of three
 * uint64_t, innermost first: the code object's address in the target; its
 * position: f_lasti on 3.8-3.10 (3.10 counts instructions, older versions
 * bytes), the instruction pointer (prev_instr, instr_ptr) on 3.11+; and its
 * identity, CPYTHON_CODE_IDENT (cpython_layout.h) of the addresses of its
 * co_qualname (co_name before 3.11) and co_filename, so that a code object
 * freed and another made at the same address are told apart. The reader
 * resolves them with its own view of the interpreter (cpython.h). */
struct alloc_rec_pystack {
	struct alloc_rec_head h;
	uint16_t py_version; /* major << 8 | minor, as the agent read it: 0x030b */
	uint16_t truncated;  /* 1: outer frames beyond ALLOC_WIRE_MAX_PYFRAMES were left out */
	uint32_t pad;
};

#endif
