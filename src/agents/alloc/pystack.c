/* pystack: reads the calling thread's CPython frames in-process for the
 * allocation agent (see pystack.h), with the struct offsets sonde's
 * out-of-process reader uses (src/symbols/cpython_layouts.c; on 3.13 the
 * interpreter's own _Py_DebugOffsets). */
#include "pystack.h"
#include "../../symbols/cpython_layout.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Frames looked at per walk, shim frames (no code) included. */
#define PYSTACK_MAX_STEPS (4 * ALLOC_WIRE_MAX_PYFRAMES)

enum { PY_UNKNOWN = 0, PY_READY = 1, PY_OFF = 2, PY_SETTING_UP = 3 };

static atomic_int py_state;
static struct cpython_layout lay; /* written once, before py_state becomes PY_READY */
static uint16_t py_version;
static uintptr_t code_type; /* &PyCode_Type */
static void *(*this_thread_state)(void);
static int (*is_finalizing)(void); /* NULL: not exported */
static uintptr_t eval_start, eval_end; /* _PyEval_EvalFrameDefault; 0: unknown */
static int can_describe;	       /* the layout has what a PYCODE record needs */

/* A pointer the walk may follow: user space, aligned. The thread's own
 * frames only ever hold such pointers; anything else ends the walk. */
static int plausible(uintptr_t p)
{
	return p >= 0x10000 && p < 0x800000000000ULL && !(p & 7);
}

static uintptr_t load_ptr(uintptr_t base, int64_t off)
{
	uintptr_t v;
	memcpy(&v, (const void *)(base + (uintptr_t)off), sizeof(v));
	return v;
}

/* "libpython3.10.so.1.0" or "python3.9" (the object that holds the API) -> 3.x. */
static int version_from_object(void *sym, int *minor)
{
	Dl_info info;
	if (!dladdr(sym, &info) || !info.dli_fname)
		return -1;
	const char *base = info.dli_fname, *s;
	for (s = base; *s; s++)
		if (*s == '/')
			base = s + 1;
	const char *p = strstr(base, "python3.");
	if (!p)
		return -1;
	p += 8;
	int v = 0, digits = 0;
	for (; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
		v = v * 10 + (*p - '0');
	if (!digits)
		return -1;
	*minor = v;
	return 0;
}

/* The 3.13 layout from the interpreter's own _Py_DebugOffsets at _PyRuntime
 * (over the generated row, already in lay). */
static int debug_offsets_313(const void *runtime)
{
	struct cpython_debug_offsets_313 d;
	if (!runtime)
		return -1;
	memcpy(&d, runtime, sizeof(d));
	if (memcmp(d.cookie, "xdebugpy", 8) || ((d.version >> 16) & 0xffff) != 0x030d ||
	    d.free_threaded)
		return -1;
	return cpython_layout_from_debug_313(&lay, &d);
}

/* Looks the interpreter up once: PY_READY or PY_OFF. */
static int setup(void)
{
	const char *want = getenv(ALLOC_ENV_PYSTACK);
	if (want && !strcmp(want, "0"))
		return PY_OFF;
	void *gts = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	void *ct = dlsym(RTLD_DEFAULT, "PyCode_Type");
	const unsigned long *hexv = dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11+ */
	int minor = -1;
	if (!gts || !ct)
		return PY_OFF; /* not a Python, or one that hides its API */
	if (hexv && (*hexv >> 24) == 3)
		minor = (int)((*hexv >> 16) & 0xff);
	else if (version_from_object(gts, &minor))
		return PY_OFF;
	const struct cpython_layout *row = cpython_layout_find(3, minor);
	if (!row)
		return PY_OFF;
	lay = *row;
	if (minor >= 13 && debug_offsets_313(dlsym(RTLD_DEFAULT, "_PyRuntime")))
		return PY_OFF;
	if (lay.frame_back < 0 || lay.frame_code < 0 || lay.object_type < 0 ||
	    lay.code_filename < 0 || lay.code_name < 0 ||
	    (lay.frame_lasti < 0 && lay.frame_instr < 0) ||
	    (lay.tstate_frame < 0 && (lay.tstate_cframe < 0 || lay.cframe_current_frame < 0)))
		return PY_OFF;
	can_describe = lay.code_firstlineno >= 0 && lay.code_linetable >= 0 &&
		       lay.bytes_size >= 0 && lay.bytes_sval >= 0 && lay.unicode_state >= 0 &&
		       lay.unicode_length >= 0 && lay.unicode_ascii_size >= 0 &&
		       lay.unicode_compact_size >= 0 && lay.code_adaptive < 0x10000;
	this_thread_state = (void *(*)(void))gts;
	void *fin = dlsym(RTLD_DEFAULT, minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
	is_finalizing = (int (*)(void))fin;
	code_type = (uintptr_t)ct;
	py_version = (uint16_t)(3 << 8 | minor);
	/* The bytecode loop's extent, from its symbol's size. */
	void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
		eval_start = (uintptr_t)eval;
		eval_end = eval_start + sym->st_size;
	}
	return PY_READY;
}

static int ready(void)
{
	int s = atomic_load_explicit(&py_state, memory_order_acquire);
	if (s != PY_UNKNOWN)
		return s == PY_READY;
	/* One thread looks; the others record without Python frames meanwhile. */
	if (!atomic_compare_exchange_strong(&py_state, &s, PY_SETTING_UP))
		return 0;
	s = setup();
	atomic_store_explicit(&py_state, s, memory_order_release);
	return s == PY_READY;
}

/* The thread's innermost frame (PyFrameObject up to 3.10, _PyInterpreterFrame
 * from 3.11), 0 when it runs no Python code. */
static uintptr_t top_frame(uintptr_t tstate)
{
	if (lay.tstate_frame >= 0)
		return load_ptr(tstate, lay.tstate_frame);
	uintptr_t cframe = load_ptr(tstate, lay.tstate_cframe);
	return plausible(cframe) ? load_ptr(cframe, lay.cframe_current_frame) : 0;
}

int pystack_capture(union pystack_rec *rec, uint32_t tid, uint64_t t)
{
	if (!ready())
		return 0;
	/* Finalization frees other threads' states (daemon threads blocked in C
	 * code keep theirs registered): read none from then on. */
	if (is_finalizing && is_finalizing())
		return 0;
	/* The thread state this OS thread registered (NULL before the interpreter
	 * starts, after it ends, and in threads Python never saw). */
	uintptr_t tstate = (uintptr_t)this_thread_state();
	if (!plausible(tstate))
		return 0;
	uint64_t *out = (uint64_t *)(rec->raw + sizeof(rec->p));
	int64_t name_off = lay.code_qualname >= 0 ? lay.code_qualname : lay.code_name;
	int n = 0, truncated;
	uintptr_t frame = top_frame(tstate);
	for (int step = 0; frame && step < PYSTACK_MAX_STEPS; step++) {
		if (!plausible(frame))
			return 0;
		uintptr_t back = load_ptr(frame, lay.frame_back);
		if (back == frame)
			return 0;
		if (lay.frame_owner >= 0 && lay.frame_owner_cstack >= 0 &&
		    ((const uint8_t *)frame)[lay.frame_owner] == (uint8_t)lay.frame_owner_cstack) {
			frame = back; /* a shim the C stack owns: no code */
			continue;
		}
		uintptr_t code = load_ptr(frame, lay.frame_code);
		if (!plausible(code) || load_ptr(code, lay.object_type) != code_type) {
			if (lay.minor >= 13) { /* f_executable need not be code */
				frame = back;
				continue;
			}
			return 0;
		}
		if (n == ALLOC_WIRE_MAX_PYFRAMES)
			break;
		uint64_t pos;
		if (lay.frame_lasti >= 0) {
			int32_t lasti;
			memcpy(&lasti, (const void *)(frame + (uintptr_t)lay.frame_lasti), sizeof(lasti));
			pos = (uint64_t)(int64_t)lasti;
		} else {
			pos = load_ptr(frame, lay.frame_instr);
		}
		out[3 * n] = code;
		out[3 * n + 1] = pos;
		out[3 * n + 2] = CPYTHON_CODE_IDENT(load_ptr(code, name_off),
						 load_ptr(code, lay.code_filename));
		n++;
		frame = back;
	}
	truncated = frame != 0;
	if (!n)
		return 0;
	rec->p.h = (struct alloc_rec_head){ ALLOC_REC_PYSTACK,
					    (uint16_t)(sizeof(rec->p) + 24 * (size_t)n), tid, t };
	rec->p.py_version = py_version;
	rec->p.flags = truncated ? ALLOC_PYSTACK_TRUNCATED : 0;
	rec->p.id = 0;
	return 1;
}

/* A compact str's characters in place (at most max_bytes of them, whole
 * characters), their size in bytes and their kind; -1 when s is not a
 * compact str (code objects' names and file names always are). */
static int str_chars(uintptr_t s, size_t max_bytes, const unsigned char **chars, size_t *len,
		     uint8_t *kind)
{
	if (!plausible(s))
		return -1;
	uint32_t state;
	memcpy(&state, (const void *)(s + (uintptr_t)lay.unicode_state), sizeof(state));
	unsigned k = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (k != 1 && k != 2 && k != 4))
		return -1;
	uint64_t n = load_ptr(s, lay.unicode_length);
	if (n > max_bytes / k)
		n = max_bytes / k; /* cut, as sonde's own reader cuts a long name */
	*chars = (const unsigned char *)(s + (uintptr_t)(ascii ? lay.unicode_ascii_size
							       : lay.unicode_compact_size));
	*len = (size_t)n * k;
	*kind = (uint8_t)k;
	return 0;
}

size_t pystack_code_record(const uint64_t *frame, uint32_t tid, uint64_t t, unsigned char *out,
			   size_t room)
{
	if (atomic_load_explicit(&py_state, memory_order_acquire) != PY_READY || !can_describe)
		return 0;
	uintptr_t code = (uintptr_t)frame[0];
	int64_t name_off = lay.code_qualname >= 0 ? lay.code_qualname : lay.code_name;
	struct alloc_rec_pycode r = {.code = frame[0],
				     .ident = frame[2],
				     .py_version = py_version,
				     .units_off =
					 (uint16_t)(lay.code_adaptive > 0 ? lay.code_adaptive : 0)};
	const unsigned char *name, *file;
	size_t name_len, file_len;
	if (str_chars(load_ptr(code, name_off), ALLOC_PYCODE_MAX_NAME, &name, &name_len,
		      &r.name_kind) ||
	    str_chars(load_ptr(code, lay.code_filename), ALLOC_WIRE_MAX_PATH, &file, &file_len,
		      &r.file_kind))
		return 0;
	uintptr_t table = load_ptr(code, lay.code_linetable);
	if (!plausible(table))
		return 0;
	uint64_t table_len = load_ptr(table, lay.bytes_size);
	if (table_len > ALLOC_PYCODE_MAX_TABLE)
		return 0;
	size_t len = (sizeof(r) + name_len + file_len + table_len + 7) & ~(size_t)7;
	if (len > room)
		return 0;
	memcpy(&r.firstlineno, (const void *)(code + (uintptr_t)lay.code_firstlineno),
	       sizeof(r.firstlineno));
	r.h = (struct alloc_rec_head){ALLOC_REC_PYCODE, (uint16_t)len, tid, t};
	r.name_len = (uint16_t)name_len;
	r.file_len = (uint16_t)file_len;
	r.table_len = (uint16_t)table_len;
	unsigned char *p = out;
	memcpy(p, &r, sizeof(r));
	p += sizeof(r);
	memcpy(p, name, name_len);
	p += name_len;
	memcpy(p, file, file_len);
	p += file_len;
	memcpy(p, (const void *)(table + (uintptr_t)lay.bytes_sval), (size_t)table_len);
	p += table_len;
	memset(p, 0, (size_t)(out + len - p));
	return len;
}

int pystack_eval_range(uintptr_t *start, uintptr_t *end)
{
	if (!ready() || !eval_end)
		return 0;
	*start = eval_start;
	*end = eval_end;
	return 1;
}
