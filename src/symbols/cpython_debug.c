/* cpython_debug: a layout from CPython 3.13's _Py_DebugOffsets (see
 * cpython_layout.h), shared by the out-of-process reader and the agent. */
#include "cpython_layout.h"

/* An offset the interpreter gives: believable, or none is taken. */
static int sane(uint64_t v)
{
	return v < 65536;
}

int cpython_layout_from_debug_313(struct cpython_layout *l,
				  const struct cpython_debug_offsets_313 *d)
{
	uint64_t v[] = {
		d->runtime_state.interpreters_head, d->interpreter_state.next,
		d->interpreter_state.threads_head, d->interpreter_state.ceval_gil,
		d->interpreter_state.gil_runtime_state_locked,
		d->interpreter_state.gil_runtime_state_holder, d->thread_state.size,
		d->thread_state.next, d->thread_state.interp, d->thread_state.current_frame,
		d->thread_state.thread_id, d->thread_state.native_thread_id,
		d->interpreter_frame.size, d->interpreter_frame.previous,
		d->interpreter_frame.executable, d->interpreter_frame.instr_ptr,
		d->interpreter_frame.owner, d->code_object.size, d->code_object.filename,
		d->code_object.name, d->code_object.qualname, d->code_object.co_code_adaptive,
		d->code_object.firstlineno, d->code_object.linetable, d->unicode_object.state,
		d->unicode_object.length, d->unicode_object.asciiobject_size,
		d->bytes_object.ob_size, d->bytes_object.ob_sval, d->pyobject.ob_type,
		d->type_object.tp_name, d->type_object.tp_flags,
		d->interpreter_state.imports_modules, d->dict_object.ma_keys,
		d->dict_object.ma_values, d->long_object.lv_tag, d->long_object.ob_digit,
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!sane(v[i]))
			return -1;
	if (d->interpreter_state.gil_runtime_state_locked < d->interpreter_state.gil_runtime_state ||
	    d->interpreter_state.gil_runtime_state_holder < d->interpreter_state.gil_runtime_state)
		return -1;
	int64_t compact_extra = l->unicode_compact_size - l->unicode_ascii_size;
	l->runtime_interp_head = (int64_t)d->runtime_state.interpreters_head;
	l->interp_next = (int64_t)d->interpreter_state.next;
	l->interp_tstate_head = (int64_t)d->interpreter_state.threads_head;
	l->interp_gil = (int64_t)d->interpreter_state.ceval_gil;
	/* 3.13 gives locked/holder from the interpreter's own _gil; the GIL in use
	 * is *ceval.gil (shared by subinterpreters): keep them relative to it. */
	int64_t locked = (int64_t)(d->interpreter_state.gil_runtime_state_locked -
				   d->interpreter_state.gil_runtime_state);
	/* switch_number is not among them: the headers' place for it holds
	 * only while locked sits where the headers put it. */
	if (locked != l->gil_locked)
		l->gil_switch_number = -1;
	l->gil_locked = locked;
	l->gil_last_holder = (int64_t)(d->interpreter_state.gil_runtime_state_holder -
				       d->interpreter_state.gil_runtime_state);
	l->tstate_size = (int64_t)d->thread_state.size;
	l->tstate_next = (int64_t)d->thread_state.next;
	l->tstate_interp = (int64_t)d->thread_state.interp;
	l->tstate_frame = (int64_t)d->thread_state.current_frame;
	l->tstate_thread_id = (int64_t)d->thread_state.thread_id;
	l->tstate_native_thread_id = (int64_t)d->thread_state.native_thread_id;
	l->frame_size = (int64_t)d->interpreter_frame.size;
	l->frame_back = (int64_t)d->interpreter_frame.previous;
	l->frame_code = (int64_t)d->interpreter_frame.executable;
	l->frame_instr = (int64_t)d->interpreter_frame.instr_ptr;
	l->frame_owner = (int64_t)d->interpreter_frame.owner;
	l->code_size = (int64_t)d->code_object.size;
	l->code_filename = (int64_t)d->code_object.filename;
	l->code_name = (int64_t)d->code_object.name;
	l->code_qualname = (int64_t)d->code_object.qualname;
	l->code_adaptive = (int64_t)d->code_object.co_code_adaptive;
	l->code_firstlineno = (int64_t)d->code_object.firstlineno;
	l->code_linetable = (int64_t)d->code_object.linetable;
	l->unicode_state = (int64_t)d->unicode_object.state;
	l->unicode_length = (int64_t)d->unicode_object.length;
	l->unicode_ascii_size = (int64_t)d->unicode_object.asciiobject_size;
	l->unicode_compact_size = l->unicode_ascii_size + compact_extra;
	l->bytes_size = (int64_t)d->bytes_object.ob_size;
	l->bytes_sval = (int64_t)d->bytes_object.ob_sval;
	l->object_type = (int64_t)d->pyobject.ob_type;
	l->type_name = (int64_t)d->type_object.tp_name;
	l->type_flags = (int64_t)d->type_object.tp_flags;
	l->interp_modules = (int64_t)d->interpreter_state.imports_modules;
	l->dict_keys = (int64_t)d->dict_object.ma_keys;
	l->dict_values = (int64_t)d->dict_object.ma_values;
	l->long_size = (int64_t)d->long_object.lv_tag;
	l->long_digit = (int64_t)d->long_object.ob_digit;
	return 0;
}
