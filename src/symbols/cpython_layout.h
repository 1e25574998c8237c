/* cpython_layout: the struct offsets sonde needs to walk a CPython
 * interpreter from outside, per minor version. Rows for 3.8 to 3.13 are
 * generated from the installed headers (tools/gen_cpython_layouts.sh); on 3.13
 * the running interpreter's own _Py_DebugOffsets override them.
 * All values are byte offsets or sizes; -1 means "this version has no such field". */
#ifndef SONDE_CPYTHON_LAYOUT_H
#define SONDE_CPYTHON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

struct cpython_layout {
	int major, minor;
	/* _PyRuntimeState */
	int64_t runtime_interp_head, runtime_tstate_current;
	/* PyInterpreterState; interp_gil: the struct _gil_runtime_state * (3.12+);
	 * runtime_gil: that struct inside _PyRuntimeState (3.8-3.11, one GIL) */
	int64_t interp_next, interp_tstate_head, interp_gil, runtime_gil;
	/* struct _gil_runtime_state; switch_number counts the times the GIL
	 * went to another thread than its last holder (-1: not known) */
	int64_t gil_locked, gil_last_holder, gil_switch_number;
	/* PyThreadState; tstate_frame: the innermost frame (<= 3.10 PyFrameObject *,
	 * 3.13 _PyInterpreterFrame *); 3.11-3.12 go through tstate_cframe */
	int64_t tstate_size, tstate_next, tstate_interp, tstate_frame, tstate_cframe;
	int64_t cframe_current_frame, tstate_thread_id, tstate_native_thread_id;
	/* PyFrameObject (<= 3.10) or _PyInterpreterFrame (3.11+) */
	int64_t frame_size, frame_back, frame_code, frame_instr, frame_owner;
	int64_t frame_owner_cstack, frame_lasti;
	/* 3.11: the byte that marks a frame entered from C; the outermost frame
	 * of every chain is one (-1 elsewhere) */
	int64_t frame_is_entry;
	/* <= 3.10: the byte that tells a frame being executed (f_executing on
	 * 3.8-3.9, f_state on 3.10) and its value then; a frame freed (or
	 * returned) never has it */
	int64_t frame_state, frame_state_executing;
	/* PyCodeObject; code_linetable is co_lnotab on 3.8-3.9 */
	int64_t code_size, code_filename, code_name, code_qualname, code_adaptive;
	int64_t code_firstlineno, code_linetable;
	/* objects */
	int64_t unicode_state, unicode_length, unicode_ascii_size, unicode_compact_size;
	int64_t bytes_size, bytes_sval, object_type, type_name;
	/* threading's thread names (cpython_names.c): interp_modules is sys.modules;
	 * keys_size is dk_size (<= 3.10) or dk_log2_size (3.11+, with
	 * keys_log2_index_bytes and keys_kind); values_values: the values[]
	 * array in PyDictValues; long_size: ob_size (<= 3.11) or lv_tag (3.12+) */
	int64_t interp_modules, type_basicsize, type_flags, type_dictoffset;
	int64_t heaptype_cached_keys, module_dict, dict_keys, dict_values;
	int64_t keys_size, keys_log2_index_bytes, keys_kind, keys_nentries, keys_indices;
	int64_t values_values, long_size, long_digit;
	/* <= 3.10 (-1 after): co_varnames, f_localsplus, to name a method's
	 * class from its self or cls when the source cannot be read */
	int64_t code_varnames, frame_localsplus, tuple_item;
};

/* A code object's identity beside its address, from the addresses of its
 * name (co_qualname on 3.11+, else co_name) and co_filename: a code object
 * freed and another made at the same address almost never share both. */
#define CPYTHON_CODE_IDENT(name, file) \
	((uint64_t)(name) ^ ((uint64_t)(file) << 32 | (uint64_t)(file) >> 32))

/* Terminated by a row with major 0. */
extern const struct cpython_layout cpython_layouts[];

/* The compiled-in row for major.minor, or NULL. */
const struct cpython_layout *cpython_layout_find(int major, int minor);

/* Line-table decoders: the source line of bytecode offset `addr`, or -1 when
 * the table gives none. They read only [table, table+len).
 *   lnotab (3.8-3.9): addr in bytes.
 *   linetable 3.10:   addr in bytes (f_lasti * 2).
 *   locations (3.11+): addr in code units (2-byte words); a negative addr is
 *                      "not started" and gives firstlineno. */
int cpython_line_lnotab(const uint8_t *table, size_t len, int firstlineno, int64_t addr);
int cpython_line_310(const uint8_t *table, size_t len, int firstlineno, int64_t addr);
int cpython_line_311(const uint8_t *table, size_t len, int firstlineno, int64_t addr);
/* The same, but an instruction the table gives no line (a loop's jump back,
 * cleanup code: CPython's co_lines() says None) gets the line of the nearest
 * instruction before it that has one, as a traceback shows the line last
 * executed: what a stack sample reports. */
int cpython_line_310_or_previous(const uint8_t *table, size_t len, int firstlineno, int64_t addr);
int cpython_line_311_or_previous(const uint8_t *table, size_t len, int firstlineno, int64_t addr);

/* A frame's line as a stack sample reports it, for CPython 3.minor: the
 * decoder of that version (the _or_previous one from 3.10), 0 when none. */
int cpython_code_line(int minor, const uint8_t *table, size_t len, int firstlineno, int64_t addr);
/* The place in its code object's line table of a frame at pos: f_lasti on
 * 3.8-3.10 (sign-extended), else the instruction pointer, counted from the
 * code object at code plus units_off (co_code_adaptive); -1 before it (or
 * an f_lasti out of int32 range). */
int64_t cpython_code_addr(int minor, int64_t units_off, uint64_t code, uint64_t pos);

/* A str's characters as CPython stores them (nbytes bytes of kind 1, 2 or 4
 * each) to UTF-8 in out (cap bytes, NUL included; cut at a whole character
 * when short). 0, or -1 for a bad kind or a character past U+10FFFF. */
int cpython_chars_utf8(const uint8_t *raw, size_t nbytes, unsigned kind, char *out, size_t cap);

/* The shape of _Py_DebugOffsets in CPython 3.13 (pycore_runtime.h), at the
 * start of _PyRuntime: every field a uint64_t offset or size. Only stable
 * within one minor version. */
struct cpython_debug_offsets_313 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
			ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
			datastack_chunk, status;
	} thread_state;
	struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct { uint64_t size, ob_type; } pyobject;
	struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
	struct { uint64_t size, ob_item, ob_size; } tuple_object;
	struct { uint64_t size, ob_item, ob_size; } list_object;
	struct { uint64_t size, ma_keys, ma_values; } dict_object;
	struct { uint64_t size, ob_fval; } float_object;
	struct { uint64_t size, lv_tag, ob_digit; } long_object;
	struct { uint64_t size, ob_size, ob_sval; } bytes_object;
	struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
	struct { uint64_t size, collecting; } gc;
};

/* Overwrites l (the 3.13 row, loaded first) with the offsets the interpreter
 * gives about itself (cpython_debug.c): 0, or -1 when one of them is not
 * believable (l is then left as it was). Read out of process by sonde and in
 * process by the allocation agent. */
int cpython_layout_from_debug_313(struct cpython_layout *l,
				  const struct cpython_debug_offsets_313 *d);

/* Where a dict keys object keeps its entries (cpython_dict.c). */
struct cpython_dict_keys {
	uint64_t entries_off; /* bytes from the keys object to entry 0 */
	uint64_t nentries;    /* entries in use, deleted ones included (their key is NULL) */
	uint32_t entry_size;  /* bytes per entry */
	int32_t key_off, value_off; /* in an entry; value_off means nothing for a split table */
	int32_t hash_off;	    /* in an entry; -1 when entries hold no hash (3.11+ str keys) */
};

/* Decodes the keys object header hdr[0..len) (keys_indices bytes suffice)
 * per l. 0 and *out filled, or -1 when the header is not a believable keys
 * object of this version (sizes, index width, kind, entry count). */
int cpython_dict_keys_decode(const struct cpython_layout *l, const uint8_t *hdr, size_t len,
			     struct cpython_dict_keys *out);

#endif
